"""The async driver as a neighbour: how late a 10 ms ticker task runs beside `train_async`.

Runs in: one process, one asyncio loop: the driver (with its worker processes) and a ticker task
that sleeps 10 ms and records when it woke. A stall is how much later than its 10 ms the ticker
woke (0 on an idle loop). Printed per config: ticks against the expected window/10 ms, the worst
stall, the 99th percentile, the worst stall after the first 15 s (one-time costs such as imports
and JIT compiles on first use hold the GIL), learner steps done in the window, and the load
average (the machine is shared, so stalls also include time the loop thread waited for a CPU).
The `alone` line is the ticker without a driver: the machine's own lateness.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PERIOD_S = 0.010
WARMUP_S = 15.0  # first-use costs that hold the GIL (imports, JIT compiles) fall in here
# Keeps each run's own pace but reaches the learner quickly and never stops early.
COMMON = ["env.stop_value=1e9", "max_env_step=100000000", "policy.learner_num_threads=1"]
CASES: dict[str, tuple[str | None, float, list[str]]] = {
    "alone": (None, 20.0, []),  # the ticker without a driver: what the machine's load costs
    "cartpole": ("configs/cartpole_muzero.yaml", 60.0, []),
    # Pong UniZero: fewer envs and simulations in the collector so that the learner (whose step
    # is the stall being measured) starts within the window; the learner itself is unchanged.
    "pong": (
        "configs/pong_unizero.yaml",
        45.0,
        [
            "env.collector_env_num=2",
            "env.evaluator_env_num=1",
            "env.n_evaluator_episode=1",
            "env.eval_max_episode_steps=500",
            "policy.num_simulations=4",
            "policy.train_start_after_envsteps=0",
        ],
    ),
}


async def measure(config: str | None, window_s: float, overrides: list[str], exp: Path) -> dict:
    """Run the driver beside the ticker for `window_s` seconds, then cancel it.

    Without a `config`, the ticker runs alone: the machine's own lateness (its load), the
    baseline for the other lines.
    """
    from zeropipe.cli.main import load_checked
    from zeropipe.pipeline.async_driver import train_async

    loop = asyncio.get_running_loop()
    wakes: list[float] = []

    async def ticker() -> None:
        while True:
            wakes.append(loop.time())
            await asyncio.sleep(PERIOD_S)

    tick = asyncio.create_task(ticker(), name="ticker")
    if config is None:
        driver = asyncio.create_task(asyncio.sleep(window_s), name="nothing")
    else:
        cfg = load_checked(str(ROOT / config), [*COMMON, *overrides, f"exp_name={exp}"])
        cfg.policy.async_pipeline.enabled = True
        driver = asyncio.create_task(train_async(cfg, show_progress=False), name="driver")
    start = loop.time()
    await asyncio.wait({driver}, timeout=window_s)
    inside = [t for t in wakes if t <= start + window_s]
    driver.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await driver
    tick.cancel()
    stalls = np.diff(inside) - PERIOD_S
    woke = np.asarray(inside[1:]) - start  # seconds into the window of each wake
    steady = stalls[woke > WARMUP_S]
    return {
        "ticks": len(inside),
        "expected": int(window_s / PERIOD_S),
        "worst_ms": 1000 * float(stalls.max()),
        "p99_ms": 1000 * float(np.percentile(stalls, 99)),
        "steady_worst_ms": 1000 * float(steady.max()) if steady.size else float("nan"),
        # when the long stalls ended (s into the window): match them with metrics.jsonl's time_s
        "stalls_over_50ms_at_s": [round(float(t), 1) for t in woke[stalls > 0.05]][:8],
        "learner_steps": _last_train_iter(exp) if config is not None else 0,
        "events_near_stalls": _events_near(exp, woke[stalls > 0.05][:8]) if config else [],
    }


def _events_near(exp: Path, times_s: np.ndarray) -> list[str]:
    """The metrics events logged within 1 s before each stall ended (run time ~ window time)."""
    import json

    lines = [json.loads(x) for x in (exp / "log" / "metrics.jsonl").read_text().splitlines()]
    return [
        f"{t:.1f}s: " + ",".join(e["event"] for e in lines if t - 1.0 <= e["time_s"] <= t + 0.1)
        for t in times_s
    ]


def _last_train_iter(exp: Path) -> int:
    import json

    lines = (exp / "log" / "metrics.jsonl").read_text().splitlines()
    return max((json.loads(line)["train_iter"] for line in lines if line), default=0)


def main(argv: list[str] | None = None) -> None:
    """Print the ticker figures for each case (both by default)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks embed")
    parser.add_argument("cases", nargs="*", help=f"any of {', '.join(CASES)} (default: all)")
    parser.add_argument("--window", type=float, help="seconds per case (default: per case)")
    args = parser.parse_args(argv)
    unknown = set(args.cases) - set(CASES)
    if unknown:
        parser.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    print(
        f"{'config':<10} {'window':>6} {'ticks':>13} {'worst':>9} {'p99':>8} "
        f"{'worst>15s':>9} {'steps':>6} load"
    )
    for name in args.cases or CASES:
        config, window_s, overrides = CASES[name]
        window_s = args.window or window_s
        with tempfile.TemporaryDirectory(prefix="zeropipe-embed-") as tmp:
            fig = asyncio.run(measure(config, window_s, overrides, Path(tmp) / "run"))
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"{name:<10} {window_s:>5.0f}s {fig['ticks']:>6}/{fig['expected']:<6} "
            f"{fig['worst_ms']:>7.1f}ms {fig['p99_ms']:>6.1f}ms {fig['steady_worst_ms']:>7.1f}ms "
            f"{fig['learner_steps']:>6} {load}",
            flush=True,
        )
        for line in fig["events_near_stalls"]:
            print(f"    stall > 50 ms ending at {line}")
