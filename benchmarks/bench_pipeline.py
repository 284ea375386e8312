"""Async vs sync pipeline on the same config, each for the same wall-clock window.

Both run through the real CLI in a subprocess (`stop_value` raised so neither stops early); after
`window_s` seconds the run gets SIGINT, like Ctrl-C, and the figures are read from its
metrics.jsonl: env steps and learner steps per second of the window, and async/sync ratios.
For comparison (same 2-core machine, CartPole MuZero, 300 s each): LightZero's Ray async pipeline
made 12.3 env steps/s against 14.4 for its sync pipeline, 0.86× (peer_figures.md).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
    return {
        "envstep": last["envstep"],
        "train_iter": max(e["train_iter"] for e in inside),
        "envstep_per_s": last["envstep"] / window_s,
        "learner_steps_per_s": max(e["train_iter"] for e in inside) / window_s,
        "best_eval": max(evals) if evals else None,
    }


def bench_pipeline(
    config: str = "configs/cartpole_muzero.yaml", window_s: float = 60.0, collectors: int = 2
) -> dict[str, Any]:
    """Sync then async, each for `window_s` seconds; returns both and the ratios."""
    rows = {}
    async_args = [
        "--async-pipeline",
        "--set",
        f"policy.async_pipeline.num_collector_actors={collectors}",
    ]
    for name, extra in (("sync", ["--set", "exp_name=run"]), ("async", [*async_args])):
        with tempfile.TemporaryDirectory() as tmp:
            rows[name] = _run(config, window_s, ["--set", "exp_name=run", *extra], Path(tmp))
    ratio = {
        key: rows["async"][key] / max(rows["sync"][key], 1e-9)
        for key in ("envstep_per_s", "learner_steps_per_s")
    }
    return {
        "config": config,
        "window_s": window_s,
        "collectors": collectors,
        **rows,
        "ratio": ratio,
    }


def main() -> None:
    """Print the side-by-side table."""
    res = bench_pipeline()
    head = f"{res['config']}, {res['window_s']:.0f} s window each"
    print(f"{head}, async with {res['collectors']} collectors")
    print(f"{'pipeline':>9} {'env steps/s':>12} {'learner steps/s':>16} {'best eval':>10}")
    for name in ("sync", "async"):
        r = res[name]
        best = "-" if r["best_eval"] is None else f"{r['best_eval']:.1f}"
        print(f"{name:>9} {r['envstep_per_s']:>12.1f} {r['learner_steps_per_s']:>16.1f} {best:>10}")
    ratio = res["ratio"]
    print(
        f"{'async/sync':>9} {ratio['envstep_per_s']:>11.2f}× {ratio['learner_steps_per_s']:>15.2f}×"
        "   (LightZero Ray async/sync on this machine: 0.86× env steps/s)"
    )


if __name__ == "__main__":
    main()
