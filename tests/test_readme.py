"""Every Python code block of README.md and of the documentation pages (docs/**/*.md) runs as
written, so their examples cannot rot. A block that appears on several pages runs once.

Each block runs unmodified, as its own script in a fresh working directory, in a subprocess with
a hard timeout. The only change is the budget: each config file a block names
(`configs/NAME.yaml`) is there as a copy of the real file with a small budget and small search
and batch sizes (`TINY_BUDGET`), so the block's real code (load_config, train_async, start,
events, stop) runs end to end in seconds. At the end no process of the block and no
shared-memory block is left.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.leaks import live_pids, shm_blocks
from zeropipe.config.loader import read_yaml

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
CONFIG_PATH = re.compile(r"configs/\w+\.yaml")
# dotted key -> value, applied to each config a block names
TINY_BUDGET = {
    "max_env_step": 120,
    "env.collector_env_num": 2,
    "env.evaluator_env_num": 1,
    "env.n_evaluator_episode": 1,
    "policy.num_simulations": 4,
    "policy.batch_size": 16,
    "policy.game_segment_length": 10,
    "policy.eval_freq": 10,
}
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _collect_blocks() -> dict[str, list[str]]:
    """Each distinct block's code -> where it is ("docs/guide/embedding.md#0", ...)."""
    blocks: dict[str, list[str]] = {}
    for page in PAGES:
        for index, code in enumerate(BLOCK.findall(page.read_text())):
            blocks.setdefault(code, []).append(f"{page.relative_to(ROOT)}#{index}")
    return blocks


BLOCKS = _collect_blocks()
CODES = list(BLOCKS)
README_BLOCKS = [code for code, places in BLOCKS.items() if any("README" in p for p in places)]


def tiny_copy(config: str, cwd: Path) -> None:
    """`cwd/config`: the repository's file (its `base:` resolved) with `TINY_BUDGET` set."""
    (cwd / config).parent.mkdir(parents=True, exist_ok=True)
    (cwd / config).write_text(yaml.safe_dump(_tiny(read_yaml(ROOT / config))))


def tiny_file(path: Path) -> None:
    """The YAML config at `path` (a file a documented command wrote) put on `TINY_BUDGET`."""
    path.write_text(yaml.safe_dump(_tiny(read_yaml(path))))


def _tiny(raw: dict) -> dict:
    for key, value in TINY_BUDGET.items():
        *sections, last = key.split(".")
        node = raw
        for part in sections:
            node = node.setdefault(part, {})
        node[last] = value
    return raw


def _session_processes(sid: int) -> list[int]:
    """Live pids of session `sid` (the block's script was its leader)."""
    return live_pids("session", sid)


def _cmdline(pid: int) -> bytes | None:
    """`pid`'s command line; None once it is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None


def _tracker_or_exiting(cmdline: bytes | None) -> bool:
    """Whether a process is multiprocessing's resource tracker, or already in its exit.

    The tracker is the one process of an embedding script that outlives it by design: it exits
    when it reads EOF from the script's end of its pipe, a moment after the script (only the CLI
    stops it first). An exiting process has released its memory, so its cmdline reads empty.
    """
    return not cmdline or b"multiprocessing.resource_tracker" in cmdline


def _left_after_exit(sid: int, grace: float = 10.0) -> list[str]:
    """Processes of session `sid` still alive once the tracker had `grace` seconds to exit.

    Any other process fails at once: a worker must be gone when the script's `stop` returns.
    Waits on a pidfd (the kernel's exit notification), not by polling.
    """
    left = []
    for pid in _session_processes(sid):
        if _tracker_or_exiting(_cmdline(pid)):
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            try:
                if select.select([fd], [], [], grace)[0]:
                    continue
            finally:
                os.close(fd)
        cmdline = _cmdline(pid)
        if cmdline is not None:
            left.append(f"{pid}: {cmdline!r}")
    return left


def test_the_readme_and_the_docs_have_python_blocks():
    assert README_BLOCKS  # the README's embedding example
    assert len(CODES) >= 2  # the two embedding examples (docs/guide/embedding.md)


@pytest.mark.timeout(200)
@pytest.mark.parametrize("index", range(len(CODES)), ids=[BLOCKS[c][0] for c in CODES])
def test_a_python_block_runs_as_written(tmp_path: Path, index: int):
    code = CODES[index]
    where = ", ".join(BLOCKS[code])
    for config in set(CONFIG_PATH.findall(code)):
        tiny_copy(config, tmp_path)
    script = tmp_path / f"doc_block_{index}.py"
    script.write_text(code)
    before = shm_blocks()
    proc = subprocess.Popen(
        [sys.executable, script.name],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its workers share its session: found, or killed, as one
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        out, err = proc.communicate(timeout=150)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"block {where} ran past 150 s:\n{code}\n{err[-3000:]}")
    assert proc.returncode == 0, f"block {where} failed:\n{code}\n{err[-3000:]}"
    assert out.strip(), "the block prints its result"
    runs = list((tmp_path / "runs").glob("*/log/metrics.jsonl"))
    assert runs and all('"event": "stop"' in path.read_text() for path in runs)
    assert _left_after_exit(proc.pid) == []
    assert shm_blocks() <= before
