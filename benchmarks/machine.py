"""What a benchmark's figures were measured on: the header of `python -m benchmarks`.

Figures from two machines, two builds or two thread settings are not comparable, so every run
names its machine (cores, CPU model, torch, the kernels it picked for this CPU, whether the CPU
has bf16 instructions, and its threads), the zeropipe version and commit, and the configs its
sections use; the same dict heads the `--json` file. A training run's curve is exact on one
machine and moves on another: the same command on two 2-core machines of one model name gave two
Pendulum curves (README, Pendulum).
"""

from __future__ import annotations

import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def describe_run(sections: dict[str, Any]) -> dict[str, Any]:
    """The machine, build and configs of this run.

    Args:
        sections: section name -> the configs it runs (a list of paths, or a description).
    """
    import numba
    import torch

    from zeropipe.learner.precision import native_cpu_bf16

    return {
        "machine": {
            "cpu_model": cpu_model(),
            "cores": os.cpu_count(),
            "cores_usable": len(os.sched_getaffinity(0)),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
        "torch": {
            "version": torch.__version__,
            "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(),
            # the kernels torch picked, and whether the learner's `auto` precision is bf16 here:
            # two CPUs sold under one model name can differ in both, and so in every curve
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "bf16_instructions": native_cpu_bf16(),
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        },
        "numba": numba.__version__,
        "thread_variables": {name: os.environ.get(name) for name in THREAD_VARIABLES},
        "zeropipe": {"version": _zeropipe_version(), "commit": git_commit()},
        "sections": sections,
    }


def format_header(run: dict[str, Any]) -> str:
    """The header lines printed above the tables."""
    machine, torch_, zp = run["machine"], run["torch"], run["zeropipe"]
    threads = ", ".join(f"{k}={v}" for k, v in run["thread_variables"].items() if v is not None)
    lines = [
        f"machine: {machine['cpu_model']}, {machine['cores']} cores "
        f"({machine['cores_usable']} usable), {machine['platform']}, Python {machine['python']}",
        f"torch {torch_['version']} ({torch_['cpu_capability']} kernels, bf16 instructions: "
        f"{'yes' if torch_['bf16_instructions'] else 'no'}): {torch_['threads']} threads, "
        f"{torch_['interop_threads']} interop; GPU {torch_['cuda'] or 'none'}; numba {run['numba']}"
        + (f"; {threads}" if threads else ""),
        f"zeropipe {zp['version']}, commit {zp['commit']}",
    ]
    for name, configs in run["sections"].items():
        text = ", ".join(configs) if isinstance(configs, list | tuple) else str(configs)
        lines.append(f"{name}: {text}")
    return "\n".join(lines)


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux, else what platform reports)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit(checkout: Path = ROOT) -> str:
    """The checkout's commit (this repository's by default), `-dirty` when the tree has
    changes; "unknown" outside git."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=checkout,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() or "unknown"


def _zeropipe_version() -> str:
    try:
        return version("zeropipe")
    except PackageNotFoundError:
        return "unknown (not installed)"
