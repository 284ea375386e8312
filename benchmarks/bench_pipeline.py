"""Async vs sync pipeline on the same config, each for the same wall-clock window; and the async
pipeline on its two worker backends (`process`, `ray`) side by side.

Every row runs through the real CLI in a subprocess (`stop_value` raised so none stops early);
after `window_s` seconds the run gets SIGINT, like Ctrl-C, and the figures are read from its
metrics.jsonl: env steps and learner steps per second of the window, async/sync and ray/process
ratios, and the mean cost of publishing one weights version (shared-memory copy for `process`,
`ray.put` for `ray`). The window starts when the run directory exists, so it includes starting the
workers (and, for `ray`, starting a private Ray); "steady env steps/s" counts from the first
collect instead.
For comparison (same 2-core machine, CartPole MuZero, 300 s each): LightZero's Ray async pipeline
made 12.3 env steps/s against 14.4 for its sync pipeline, 0.86× (peer_figures.md).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from zeropipe.outputs.phases import PHASES

ROOT = Path(__file__).resolve().parents[1]


def default_sigint() -> None:
    """Give the child the default SIGINT action (Ctrl-C).

    A shell starts background jobs with SIGINT ignored and children inherit that; Python then
    keeps ignoring it, and the SIGINT that ends the window would be lost.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _run(config: str, window_s: float, extra: list[str], workdir: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "zeropipe", "train", str(ROOT / config), "--quiet"]
    cmd += ["--set", "env.stop_value=1e9", "--set", "max_env_step=100000000", *extra]
    proc = subprocess.Popen(
        cmd,
        cwd=workdir,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=default_sigint,
    )
    metrics = workdir / "run" / "log" / "metrics.jsonl"
    try:
        # The window starts when the run directory exists (components built) and lasts window_s.
        deadline = time.monotonic() + 300
        while not metrics.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(proc.stderr.read().decode())
            time.sleep(0.1)  # polling for the run to start, bounded by the deadline
        time.sleep(window_s)  # the measured window itself, not a synchronisation
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=120)
    events = [json.loads(line) for line in metrics.read_text().splitlines()]
    inside = [e for e in events if e["time_s"] <= window_s and e["event"] != "stop"]
    last = max(inside, key=lambda e: (e["envstep"], e["train_iter"]))
    evals = [e["reward_mean"] for e in inside if e["event"] == "eval"]
    collects = [e for e in inside if e["event"] == "collect"]
    publish_s = [e["publish_s"] for e in inside if e["event"] == "publish"]
    first = collects[0] if collects else None
    steady_s = window_s - first["time_s"] if first else 0.0
    trains = [e for e in inside if e["event"] == "train"]
    return {
        **_phases(trains[-1] if trains else None),
        "envstep": last["envstep"],
        "train_iter": max(e["train_iter"] for e in inside),
        "envstep_per_s": last["envstep"] / window_s,
        "steady_envstep_per_s": (
            (last["envstep"] - first["envstep"]) / steady_s if first and steady_s > 0 else 0.0
        ),
        "first_collect_s": first["time_s"] if first else None,
        "learner_steps_per_s": max(e["train_iter"] for e in inside) / window_s,
        "publish_ms": 1e3 * sum(publish_s) / len(publish_s) if publish_s else None,
        "best_eval": max(evals) if evals else None,
    }


def _phases(train: dict[str, Any] | None) -> dict[str, Any]:
    """The run's seconds by phase and the learner's busy fraction at its last train line in the
    window (outputs/phases.py); empty before the first learner step."""
    if train is None:
        return {}
    phases = {p: train[f"{p}_s_total"] for p in PHASES}
    return {"phase_s": phases, "learner_busy_fraction": train["learner_busy_fraction"]}


def bench_pipeline(
    config: str = "configs/cartpole_muzero.yaml", window_s: float = 60.0, collectors: int = 2
) -> dict[str, Any]:
    """Sync, async (process backend), async with one policy version per collect, then async on
    Ray (when installed), `window_s` s each.

    Returns:
        The rows by name, async/sync ratios and (with Ray) the ray/process ratio of env steps/s.
    """
    rows = {}
    async_args = [
        "--async-pipeline",
        "--set",
        f"policy.async_pipeline.num_collector_actors={collectors}",
    ]
    # the config's async as it is, and with one policy version per collect (the reference's
    # rule), so the cost of the config's collect_freshness shows side by side
    one_version = [*async_args, "--set", "policy.async_pipeline.collect_freshness=reference"]
    runs = [("sync", []), ("async", async_args), ("async-1v", one_version)]
    if importlib.util.find_spec("ray") is not None:
        runs.append(("ray", [*async_args, "--set", "policy.async_pipeline.backend=ray"]))
    for name, extra in runs:
        with tempfile.TemporaryDirectory() as tmp:
            rows[name] = _run(config, window_s, ["--set", "exp_name=run", *extra], Path(tmp))
    ratio = {
        key: rows["async"][key] / max(rows["sync"][key], 1e-9)
        for key in ("envstep_per_s", "learner_steps_per_s")
    }
    ratio["refresh_vs_one_version"] = rows["async"]["envstep_per_s"] / max(
        rows["async-1v"]["envstep_per_s"], 1e-9
    )
    if "ray" in rows:
        ratio["ray_vs_process"] = rows["ray"]["envstep_per_s"] / max(
            rows["async"]["envstep_per_s"], 1e-9
        )
    return {
        "config": config,
        "window_s": window_s,
        "collectors": collectors,
        "rows": rows,
        **rows,
        "ratio": ratio,
    }


def main() -> dict:
    """Print the side-by-side table; return its results (`python -m benchmarks --json`)."""
    res = bench_pipeline()
    head = f"{res['config']}, {res['window_s']:.0f} s window each"
    print(f"{head}, async with {res['collectors']} collectors (ray: the async on Ray actors)")
    print(
        f"{'pipeline':>9} {'env steps/s':>12} {'learner steps/s':>16} {'best eval':>10} "
        f"{'steady env steps/s':>19} {'1st collect s':>14} {'publish ms/version':>19}"
    )
    for name, r in res["rows"].items():
        best = "-" if r["best_eval"] is None else f"{r['best_eval']:.1f}"
        first = "-" if r["first_collect_s"] is None else f"{r['first_collect_s']:.1f}"
        publish = "-" if r["publish_ms"] is None else f"{r['publish_ms']:.2f}"
        print(
            f"{name:>9} {r['envstep_per_s']:>12.1f} {r['learner_steps_per_s']:>16.1f} {best:>10} "
            f"{r['steady_envstep_per_s']:>19.1f} {first:>14} {publish:>19}"
        )
    ratio = res["ratio"]
    print(
        f"{'async/sync':>9} {ratio['envstep_per_s']:>11.2f}× {ratio['learner_steps_per_s']:>15.2f}×"
        "   (LightZero Ray async/sync on this machine: 0.86× env steps/s)"
    )
    print(
        f"{'async/1v':>9} {ratio['refresh_vs_one_version']:>11.2f}×   (env steps/s: the config's "
        "collect_freshness against one version per collect)"
    )
    if "ray_vs_process" in ratio:
        print(f"{'ray/proc':>9} {ratio['ray_vs_process']:>11.2f}×   (env steps/s, same window)")

    return res


if __name__ == "__main__":
    main()
