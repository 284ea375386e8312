"""The benchmarks' wall-clock figures (time to the goal, the perfect-overlap bound, the pace of a
fixed budget), against values worked by hand; and which --set items reach which pipeline."""

from __future__ import annotations

from pathlib import Path

from benchmarks.learning import Curve, RunSpec, judge
from benchmarks.learning_time import format_pace, format_time_table, grid_pace
from benchmarks.overrides import for_pipeline
from benchmarks.pace import Row as PaceRow
from benchmarks.pace import add_run, format_rows

PHASES = {"collect_s_total": 4.0, "train_s_total": 30.0, "driver_s_total": 1.0}
PHASES |= {"eval_s_total": 5.0, "wait_s_total": 0.0}


def _stopped(seed: int, pipeline: str, wall: float, reward: float, **stop) -> Curve:
    spec = RunSpec("configs/cartpole_muzero.yaml", pipeline, seed, Path(f"/nowhere/{seed}"))
    line = {"reason": "stop_value", **PHASES, "learner_busy_fraction": 0.6, **stop}
    return Curve(spec, [1000, 2000], [5.0, 9.0], [100.0, reward], 0, process_wall_s=wall, stop=line)


def test_time_to_goal_is_the_process_wall_of_runs_that_stopped_at_the_threshold():
    curves = [
        _stopped(0, "sync", 50.0, 200.0),
        _stopped(1, "sync", 40.0, 200.0),
        _stopped(2, "sync", 30.0, 120.0, reason="max_env_step"),  # never reached the goal
    ]
    row = judge(curves, threshold=195)
    assert row.process_wall_s_to_goal == [50.0, 40.0]
    # wall less the shorter side: min(30 + 1, 4 + 5) = 9
    assert row.overlap_bound_s == [41.0, 31.0]
    assert row.phase_s["train"] == 30.0 and row.learner_busy_fraction == [0.6, 0.6]


def test_the_time_table_puts_async_beside_sync_and_its_bound():
    sync = judge([_stopped(s, "sync", 40.0 + s, 200.0) for s in range(3)], threshold=195)
    fast = judge([_stopped(s, "async", 30.0 + s, 200.0) for s in range(3)], threshold=195)
    table = format_time_table([sync, fast])
    row = table.splitlines()[-1]
    # medians 41 and 31; bound median 41 - 9 = 32; 31 / 32 = 0.97; ratio 31 / 41 = 0.76
    assert "| 41.0 | 31.0 | 0.76 [" in row and "| 32.0 | 0.97 |" in row
    assert row.startswith("| cartpole_muzero | 3/3, 3/3 |")


def test_the_time_table_counts_a_seed_without_the_goal_as_the_slowest():
    never = _stopped(3, "async", 20.0, 120.0, reason="max_env_step")
    sync = judge([_stopped(s, "sync", 40.0 + s, 200.0) for s in range(4)], threshold=195)
    fast = judge([*(_stopped(s, "async", 30.0 + s, 200.0) for s in range(3)), never], 195)
    row = format_time_table([sync, fast]).splitlines()[-1]
    # async medians over 4 seeds: (31 + 32) / 2 = 31.5 wall, not 31 over its 3 successes
    assert row.startswith("| cartpole_muzero | 4/4, 3/4 | 41.5 | 31.5 |")
    worse = judge([_stopped(0, "async", 30.0, 200.0), never, never, never], threshold=195)
    assert "| 41.5 | not reached |" in format_time_table([sync, worse]).splitlines()[-1]


def test_runs_of_one_pipeline_alone_get_their_own_medians_and_no_ratio():
    """A lever measured on async runs alone: a row each, not an empty side-by-side table."""
    fast = judge([_stopped(s, "async", 30.0 + s, 200.0) for s in range(3)], threshold=195)
    lines = format_time_table([fast]).splitlines()
    assert lines[0].startswith("| config | pipeline | success | wall s to goal |")
    assert lines[-1].startswith("| cartpole_muzero | async | 3/3 | 31.0 |")
    sync = judge([_stopped(s, "sync", 40.0 + s, 200.0) for s in range(3)], threshold=195)
    assert "| pipeline |" not in format_time_table([sync, fast])  # a pair: the usual table


def test_async_settings_reach_only_the_async_runs():
    items = ["seed=1", "policy.async_pipeline.worker_niceness=5", "policy.eval_freq=10"]
    assert for_pipeline(items, "async") == items
    assert for_pipeline(items, "sync") == ["seed=1", "policy.eval_freq=10"]


def test_pace_rows_give_rates_and_the_sync_bound():
    rows = [
        PaceRow("configs/x.yaml", "shipped", "sync"),
        PaceRow("configs/x.yaml", "shipped", "async"),
    ]
    stop = {"envstep": 3000, "train_iter": 750, "learner_busy_fraction": 0.7, **PHASES}
    add_run(rows[0], {"wall_s": 50.0, "stop": stop})
    add_run(rows[1], {"wall_s": 40.0, "stop": stop})
    assert rows[0].envstep_per_s == [60.0] and rows[0].learner_steps_per_s == [15.0]
    assert rows[0].overlap_bound_s == [41.0] and rows[1].overlap_bound_s == []
    line = format_rows(rows).splitlines()[-1]
    assert "| 40.0 | 75.0 | 18.75 |" in line and "| 0.80 | 0.98 |" in line  # 40/50, 40/41


def test_a_window_run_reports_its_phases_at_its_last_learner_step_in_the_window():
    from benchmarks.bench_pipeline import _phases

    line = {"event": "train", **PHASES, "learner_busy_fraction": 0.75}
    assert _phases(line) == {
        "phase_s": {"collect": 4.0, "train": 30.0, "driver": 1.0, "eval": 5.0, "wait": 0.0},
        "learner_busy_fraction": 0.75,
    }
    assert _phases(None) == {}  # no learner step inside the window


def test_grid_pace_reads_when_the_first_scored_weights_were_made_and_their_eval_latency():
    lines = [
        {"event": "train", "time_s": 4.0, "train_iter": 240},
        {"event": "train", "time_s": 4.5, "train_iter": 250},
        {"event": "eval", "time_s": 5.0, "policy_version": 0},  # eval_at_start: not the grid's
        {"event": "train", "time_s": 6.0, "train_iter": 260},
        {"event": "eval", "time_s": 7.5, "policy_version": 250},
        {"event": "eval", "time_s": 9.0, "policy_version": 500},
        {"event": "stop", "time_s": 10.0},
    ]
    # 2.0 s of the 12.0 s process went before the log began: made at 4.5 + 2.0, result 3.0 later
    assert grid_pace(lines, process_wall_s=12.0) == (6.5, 3.0)
    assert grid_pace(lines[:-1], process_wall_s=12.0) is None  # no stop line
    assert grid_pace(lines, process_wall_s=None) is None
    spec = RunSpec("configs/cartpole_muzero.yaml", "async", 0, Path("/nowhere/0"))
    curves = [
        Curve(spec, [1000], [5.0], [100.0], 0, pace=(6.5, 3.0)),
        Curve(spec, [1000], [5.0], [100.0], 0, pace=(7.5, 2.0)),
    ]
    text = format_pace([judge(curves, threshold=195)])
    assert text == (
        "pace, cartpole_muzero async (median s): first eval's weights made at 7.0, "
        "its result 2.5 later"
    )


def test_a_run_past_its_timeout_is_stopped_and_counts_as_stopped():
    import subprocess
    import sys

    from benchmarks.learning import _wait_or_interrupt

    # SIGINT ignored, as in a shell's background job: the stop must not rely on it
    waits = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); print('up', flush=True)"
    waits += "; signal.pause()"
    proc = subprocess.Popen([sys.executable, "-c", waits], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "up\n"  # its signal dispositions are set by now
        assert _wait_or_interrupt(proc, timeout_s=0.2) == -1
        assert proc.returncode == -15  # it ended on the SIGTERM, not the kill a minute later
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
