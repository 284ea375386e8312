"""`python -m benchmarks learning`: configs × seeds × pipelines, judged by their eval curves.

Runs in: its own process; each training run is the real CLI in a subprocess, as many at once as the
cores allow. One seed passing a threshold once says little, so per (config, pipeline) it prints the
success rate at the threshold, the median and range of env steps, learner steps and wall seconds to
it, the learner steps owed then (data collected that the weights had not yet trained for: how far
the env steps ran ahead of training), the best and final eval, and the largest drop after the first
success (how far an eval fell below the best eval seen before it, once the threshold was reached);
with `--hold-envsteps N` (runs continued past success: set the stop value out of reach) also the
lowest eval in the N env steps after the first success, "n/c" where a run stopped before N. It
writes the table as JSON and the curves as one PNG (mean with a min–max band per config and
pipeline); with both pipelines it also prints async's env steps over sync's pooled over the
configs, with a bootstrap interval (`benchmarks.learning_stats`). `--judge-only DIR` trains
nothing: it judges the run directories an earlier invocation left in DIR (an interrupted set: a run
without a "stop" record counts as failed) and writes the table and PNG there.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import asdict
from pathlib import Path

from benchmarks.learning_dirs import (
    RunSpec,
    check_judged,
    fill_defaults,
    learning_specs,
    seeds_specs,
)
from benchmarks.learning_grid import plot_grid
from benchmarks.learning_rows import Curve, Row
from benchmarks.learning_stats import (
    format_median_ratio,
    format_pooled,
    median_ratios,
    pooled_async_ratio,
)
from benchmarks.learning_time import format_pace, format_phases, format_time_table, grid_pace
from benchmarks.machine import describe_run
from benchmarks.overrides import for_pipeline, recorded_command
from zeropipe.cli.curves import complete_lines, plot_runs, read_run
from zeropipe.cli.errors import InputError
from zeropipe.outputs.phases import PHASES, PhaseClock

ROOT = Path(__file__).resolve().parents[1]


def _command(spec: RunSpec, overrides: list[str], threads: int | None) -> list[str]:
    cmd = [sys.executable, "-m", "zeropipe", "train", str(ROOT / spec.config), "--quiet"]
    cmd += ["--set", f"seed={spec.seed}", "--set", f"exp_name={spec.run_dir}"]
    if threads is not None:  # runs sharing the cores; one at a time: the shipped choice
        cmd += ["--set", f"policy.learner_num_threads={threads}"]
    if spec.pipeline == "async":
        cmd.append("--async-pipeline")
    for item in for_pipeline(overrides, spec.pipeline):
        cmd += ["--set", item]
    return cmd


def _read_curve(spec: RunSpec, returncode: int) -> Curve:
    wall = _process_wall(spec)
    try:
        run = read_run(spec.run_dir)
    except InputError:  # the run logged no eval (it failed or was too short)
        return Curve(spec, [], [], [], returncode, process_wall_s=wall)
    return Curve(
        spec,
        run.reward.envstep.astype(int).tolist(),
        run.reward.time_s.tolist(),
        run.reward.value.tolist(),
        returncode,
        run.learner_step.value.tolist(),
        run.owed.value.tolist(),
        process_wall_s=wall,
        stop=_stop_line(spec.run_dir),
        pace=grid_pace(_metrics_lines(spec.run_dir), wall),
    )


def _process_wall(spec: RunSpec) -> float | None:
    """The run's process wall seconds, as `run_one` wrote them beside its log."""
    path = spec.run_dir.with_suffix(".wall.json")
    return json.loads(path.read_text())["process_wall_s"] if path.is_file() else None


def _stop_line(run_dir: Path) -> dict:
    """The run's `stop` record ({} when it has none)."""
    metrics = run_dir / "log" / "metrics.jsonl"
    lines = metrics.read_text().splitlines() if metrics.is_file() else []
    stops = [json.loads(x) for x in lines if x.startswith('{"event": "stop"')]
    return stops[-1] if stops else {}


def _metrics_lines(run_dir: Path) -> list[dict]:
    """The run's whole `metrics.jsonl` lines, parsed (a torn last line left out)."""
    metrics = run_dir / "log" / "metrics.jsonl"
    text = metrics.read_text() if metrics.is_file() else ""
    return [json.loads(line) for line in complete_lines(text) if line]


_RUNNING: set[subprocess.Popen] = set()  # the training processes running now


def run_one(spec: RunSpec, overrides: list[str], threads: int | None, timeout_s: float) -> Curve:
    """Train one run to its stop rule and read its eval curve."""
    log_path = spec.run_dir.with_suffix(".log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            _command(spec, overrides, threads), stdout=log, stderr=subprocess.STDOUT, cwd=ROOT
        )
        _RUNNING.add(proc)
        try:
            code = _wait_or_interrupt(proc, timeout_s)
        finally:
            _RUNNING.discard(proc)
    wall = {"process_wall_s": round(time.monotonic() - start, 3), "returncode": code}
    spec.run_dir.with_suffix(".wall.json").write_text(json.dumps(wall))
    return _read_curve(spec, code)


def _wait_or_interrupt(proc: subprocess.Popen, timeout_s: float) -> int:
    """The run's exit code; past `timeout_s` it gets a SIGTERM (it stops as on a Ctrl-C:
    workers shut down, a checkpoint written; not SIGINT, which a shell's background job
    inherits ignored) and, if still there a minute later, a kill. A stopped run's code is -1:
    it did not reach its goal in the time given."""
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60.0)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return -1


def read_finished(spec: RunSpec) -> Curve:
    """The curve of a run directory left by an earlier invocation; its return code is 0 when
    the run logged its "stop" record, 1 when it ended early (killed, crashed or cut off)."""
    metrics = spec.run_dir / "log" / "metrics.jsonl"
    stopped = metrics.is_file() and '"event": "stop"' in metrics.read_text()
    return _read_curve(spec, 0 if stopped else 1)


def judge(curves: list[Curve], threshold: float, hold_envsteps: int = 0) -> Row:
    """Success rate and spread over the seeds of one (config, pipeline); with `hold_envsteps`,
    the lowest eval of each successful seed in that many env steps after its first success."""
    steps, walls, bests, finals, drops, holds = [], [], [], [], [], []
    learner, owed = [], []
    goal = _to_goal([c for c in curves if c.stop.get("reason") == "stop_value"], threshold)
    for curve in curves:
        if not curve.rewards:
            continue
        bests.append(max(curve.rewards))
        finals.append(curve.rewards[-1])
        first = next((i for i, r in enumerate(curve.rewards) if r >= threshold), None)
        if first is None:
            continue
        steps.append(curve.envsteps[first])
        walls.append(curve.wall_s[first])
        drops.append(_largest_drop(curve.rewards[first:]))
        learner += _logged(curve.learner_steps, first)
        owed += _logged(curve.owed, first)
        if hold_envsteps:
            holds.append(_lowest_in_hold(curve, first, hold_envsteps))
    spec = curves[0].spec
    return Row(
        config=spec.config,
        pipeline=spec.pipeline,
        threshold=threshold,
        seeds=len(curves),
        successes=len(steps),
        envsteps_to_threshold=steps,
        wall_s_to_threshold=walls,
        best=bests,
        final=finals,
        largest_drop_after_success=drops,
        failed_runs=sum(c.returncode != 0 for c in curves),
        hold_envsteps=hold_envsteps,
        lowest_in_hold=holds,
        learner_steps_to_threshold=learner,
        owed_at_threshold=owed,
        first_grid_version_s=[c.pace[0] for c in curves if c.pace],
        first_eval_latency_s=[c.pace[1] for c in curves if c.pace],
        **goal,
    )


def _to_goal(stopped: list[Curve], threshold: float) -> dict:
    """The Row's wall-clock fields over the runs that stopped at their stop value (the
    threshold, or higher: a run's own stop value reached is the goal it was given)."""
    timed = [c for c in stopped if c.process_wall_s is not None and c.rewards[-1] >= threshold]
    return {
        "process_wall_s_to_goal": [c.process_wall_s for c in timed],
        "overlap_bound_s": [_bound(c) for c in timed if c.spec.pipeline == "sync" and c.stop],
        "learner_busy_fraction": [
            c.stop["learner_busy_fraction"] for c in timed if "learner_busy_fraction" in c.stop
        ],
        "phase_s": {
            p: statistics.median(c.stop[f"{p}_s_total"] for c in timed)
            for p in PHASES
            if timed and all(f"{p}_s_total" in c.stop for c in timed)
        },
    }


def _bound(curve: Curve) -> float:
    """A sync run's perfect-overlap wall time (PhaseClock.wall_bound_s)."""
    return PhaseClock.wall_bound_s(curve.process_wall_s, curve.stop)


def _logged(values: list[float], index: int) -> list[float]:
    """[values[index]] where the eval line logged it, else []."""
    if index >= len(values) or math.isnan(values[index]):
        return []
    return [values[index]]


def _lowest_in_hold(curve: Curve, first: int, hold_envsteps: int) -> float | None:
    """Lowest eval in (envsteps[first], envsteps[first] + hold_envsteps]; None if the curve ends
    before that window does (the run did not go on long enough to judge)."""
    end = curve.envsteps[first] + hold_envsteps
    if curve.envsteps[-1] < end:
        return None
    window = [r for e, r in zip(curve.envsteps, curve.rewards, strict=True) if e <= end]
    return min(window[first:])


def _largest_drop(rewards: list[float]) -> float:
    """Largest fall of an eval below the best eval before it (0 for a curve that never falls)."""
    peak, drop = rewards[0], 0.0
    for reward in rewards:
        peak = max(peak, reward)
        drop = max(drop, peak - reward)
    return drop


def _spread(values: list[float]) -> str:
    if not values:
        return "-"
    median = statistics.median(values)
    return f"{median:,.0f} [{min(values):,.0f}–{max(values):,.0f}]"


def format_table(rows: list[Row]) -> str:
    """The rows as a Markdown table; an async row also gives its median env steps to the
    threshold over the sync row's of the same config (issue 23 asks for ≤ 1.25)."""
    head = (
        "| config | pipeline | success | env steps to threshold | async / sync median "
        "| learner steps to it | owed then | wall s to it | best | final "
        "| largest drop after success |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|"
    )
    hold = max((row.hold_envsteps for row in rows), default=0)
    if hold:
        head = head.replace(" |\n|", f" | lowest eval in {hold:,} env steps after success |\n|")
        head += "---|"
    lines = [head]
    for row in rows:
        name = Path(row.config).stem
        line = (
            f"| {name} (≥ {row.threshold:g}) | {row.pipeline} | {row.successes}/{row.seeds} "
            f"| {_spread(row.envsteps_to_threshold)} | {_async_ratio(row, rows)} "
            f"| {_spread(row.learner_steps_to_threshold)} | {_spread(row.owed_at_threshold)} "
            f"| {_spread(row.wall_s_to_threshold)} "
            f"| {_spread(row.best)} | {_spread(row.final)} "
            f"| {_spread(row.largest_drop_after_success)} |"
        )
        if hold:
            line += f" {_lows(row.lowest_in_hold)} |"
        lines.append(line)
    return "\n".join(lines)


def _async_ratio(row: Row, rows: list[Row]) -> str:
    """The async row's median env steps to threshold over its config's sync row's ("-" when
    either is missing or has no success)."""
    sync = [r for r in rows if r.config == row.config and r.pipeline == "sync"]
    if row.pipeline != "async" or not sync or not sync[0].envsteps_to_threshold:
        return "-"
    if not row.envsteps_to_threshold:
        return "-"
    ratio = statistics.median(row.envsteps_to_threshold) / statistics.median(
        sync[0].envsteps_to_threshold
    )
    return f"{ratio:.2f}"


def _lows(values: list[float | None]) -> str:
    """Each successful seed's lowest eval in the hold window ("n/c": not covered)."""
    if not values:
        return "-"
    return ", ".join("n/c" if v is None else f"{v:,.0f}" for v in values)


def _threshold(config: str, overrides: list[str], given: float | None) -> float:
    if given is not None:
        return given
    from zeropipe.config import load_config

    return load_config(ROOT / config, overrides).env.stop_value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks learning", description=__doc__)
    parser.add_argument(
        "--configs",
        nargs="+",
        help="default: the learning configs; with --judge-only, the "
        "configs whose run directories are there (and so for --seeds and --pipelines)",
    )
    parser.add_argument("--seeds", nargs="+", type=int)
    parser.add_argument("--pipelines", nargs="+", choices=("sync", "async"))
    parser.add_argument("--threshold", type=float, help="success threshold (default: stop_value)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="K=V")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "learning")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="runs at once (default 1: wall seconds mean something only for runs made one at a "
        "time on a quiet machine; more share the cores, and each run's learner is then pinned "
        "to the threads its share allows)",
    )
    parser.add_argument(
        "--eval-episodes",
        type=int,
        default=16,
        help="episodes per eval, all at once (env.n_evaluator_episode; default 16: three "
        "seeded episodes judge a policy poorly). 0: the configs' own",
    )
    parser.add_argument(
        "--timeout-s",
        type=float,
        default=3600.0,
        help="per run: past it the run gets a SIGTERM and counts as short of its goal (a median "
        "over the seeds is then still exact while it lies below the timeout)",
    )
    parser.add_argument(
        "--judge-only",
        type=Path,
        nargs="+",
        metavar="DIR",
        help="train nothing: judge the run directories in DIR: an earlier invocation's, or the "
        "seed_N runs of `zeropipe train CONFIG --seeds ...` (a sync and an async one of a "
        "config pair up)",
    )
    parser.add_argument(
        "--hold-envsteps",
        type=int,
        default=0,
        help="also report the lowest eval in this many env steps after the first success "
        "(continue the runs: set env.stop_value out of reach and max_env_step long enough)",
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    """Run every (config, pipeline, seed), print the table, write JSON and the PNG."""
    args = _parser().parse_args(argv)
    fill_defaults(args)
    if args.eval_episodes:  # first, so that a --set of the same key wins
        args.overrides = [f"env.n_evaluator_episode={args.eval_episodes}", *args.overrides]
    out = args.judge_only[0] if args.judge_only else args.out / time.strftime("%Y%m%d-%H%M%S")
    specs = learning_specs(args, out)
    thresholds = {c: _threshold(c, args.overrides, args.threshold) for c in args.configs}
    if args.judge_only:
        seeded, seeded_thresholds = seeds_specs(args.judge_only, args.threshold)
        specs, thresholds = specs + seeded, {**thresholds, **seeded_thresholds}
        check_judged(args.judge_only, specs)
    header = describe_run({"learning": list(thresholds)})  # before training: the commit that ran
    curves = [read_finished(s) for s in specs] if args.judge_only else _train_all(specs, args)
    rows = []
    for config, threshold in thresholds.items():
        for pipeline in ("sync", "async"):
            group = [c for c in curves if c.spec.config == config and c.spec.pipeline == pipeline]
            if group:
                rows.append(judge(group, threshold, args.hold_envsteps))
    table = format_table(rows)
    print(table)
    if {"sync", "async"} <= {r.pipeline for r in rows}:
        print(format_pooled(pooled_async_ratio(rows)))
        print("\n".join(format_median_ratio(r) for r in median_ratios(rows)))
        print(format_time_table(rows))
    print(format_phases(rows))
    print(format_pace(rows))
    header["command"] = recorded_command("learning", argv or sys.argv[2:])
    header["date"] = time.strftime("%Y-%m-%d")
    rows_json = [asdict(r) for r in rows]
    (out / "learning.json").write_text(json.dumps({**header, "rows": rows_json}, indent=2))
    _plot(curves, out / "learning.png")
    plot_grid(curves, thresholds, out / "learning_grid.png")
    print(f"table: {out / 'learning.json'}\ncurves: {out / 'learning.png'}")
    print(f"one panel per config: {out / 'learning_grid.png'}")


def _train_all(specs: list[RunSpec], args: argparse.Namespace) -> list[Curve]:
    """Train every run, as many at once as the cores (or `--jobs`) allow."""
    cores = os.cpu_count() or 1
    jobs = args.jobs
    threads = None  # one at a time: the run's own choice, as a user's run makes it
    if jobs > 1:
        threads = max(1, cores // jobs - (1 if "async" in args.pipelines else 0))
    out = specs[0].run_dir.parent
    print(f"{len(specs)} runs, {jobs} at a time, outputs in {out}", flush=True)
    pool = ThreadPoolExecutor(jobs)
    try:
        futures = [pool.submit(run_one, s, args.overrides, threads, args.timeout_s) for s in specs]
        return [_result(f) for f in futures]
    except KeyboardInterrupt:
        # a Ctrl-C ends the set: no run still queued starts, and each running one is stopped
        # as a Ctrl-C stops it (a signal sent to this process alone does not reach them)
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in list(_RUNNING):
            proc.send_signal(signal.SIGTERM)
        raise
    finally:
        pool.shutdown(wait=True)


def _result(future: Future[Curve]) -> Curve:
    """A run's curve, waited for in timed steps: a Ctrl-C that lands just as the main thread
    starts an untimed wait on a lock is not seen until the lock is released, which here is when
    the run ends (minutes later); a timed wait returns within a second and the interrupt is raised.
    """
    while not future.done():
        wait([future], timeout=1.0)
    return future.result()


def _plot(curves: list[Curve], path: Path) -> None:
    """Eval curves, seeds of one (config, pipeline) as a mean with a min–max band."""
    plot_runs([c.spec.run_dir for c in curves if c.rewards], path, axis="envstep")


if __name__ == "__main__":
    main()
