"""The learning benchmark's judgement of eval curves: success, spread and collapse after a peak."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from benchmarks.learning import Curve, RunSpec, format_table, judge, main, read_finished

from benchmarks import learning


def _curve(
    seed: int, envsteps: list[int], rewards: list[float], code: int = 0, pipeline: str = "sync"
) -> Curve:
    spec = RunSpec("configs/cartpole_muzero.yaml", pipeline, seed, Path(f"/nowhere/{seed}"))
    wall = [float(e) / 100 for e in envsteps]
    return Curve(spec, envsteps, wall, rewards, code)


def test_success_rate_steps_to_threshold_and_the_largest_drop_after_success():
    curves = [
        _curve(0, [1000, 2000, 3000, 4000], [100, 480, 300, 490]),  # peak 480, falls to 300
        _curve(1, [1000, 2000], [200, 500]),  # succeeds at 2000, never falls
        _curve(2, [1000, 2000, 3000], [100, 409, 262]),  # never reaches 475
    ]
    row = judge(curves, threshold=475)
    assert (row.seeds, row.successes) == (3, 2)
    assert row.envsteps_to_threshold == [2000, 2000]
    assert row.wall_s_to_threshold == [20.0, 20.0]
    assert row.best == [490, 500, 409] and row.final == [490, 500, 262]
    assert row.largest_drop_after_success == [180, 0]


def test_a_run_without_evals_counts_as_a_failed_seed():
    row = judge([_curve(0, [], [], code=1), _curve(1, [500], [480])], threshold=475)
    assert (row.seeds, row.successes, row.failed_runs) == (2, 1, 1)
    assert "1/2" in format_table([row])


def test_the_lowest_eval_in_the_hold_window_after_success():
    curves = [
        # success at 2000; window (2000, 4000]: 430, 480; the 100 at 5000 is past it
        _curve(0, [1000, 2000, 3000, 4000, 5000], [100, 480, 430, 480, 100]),
        _curve(1, [1000, 2000, 3000], [200, 500, 500]),  # stopped before 4000: not covered
        _curve(2, [1000, 2000], [100, 409]),  # never succeeds: no entry
    ]
    row = judge(curves, threshold=475, hold_envsteps=2000)
    assert row.lowest_in_hold == [430, None]
    table = format_table([row])
    assert "lowest eval in 2,000 env steps after success" in table
    assert table.splitlines()[-1].endswith("| 430, n/c |")
    assert judge(curves, threshold=475).lowest_in_hold == []


def test_an_async_row_gives_its_median_env_steps_over_the_sync_rows():
    sync = judge([_curve(s, [1000, 2000], [100, 200]) for s in range(3)], threshold=195)
    late = [[1000, 2400], [1000, 3000], [1000, 2600]]  # medians: async 2,600, sync 2,000
    async_ = judge([_curve(s, e, [100, 200], pipeline="async") for s, e in enumerate(late)], 195)
    sync_line, async_line = format_table([sync, async_]).splitlines()[-2:]
    assert sync_line.split("|")[5].strip() == "-"
    assert async_line.split("|")[5].strip() == "1.30"


def _write_run(run_dir: Path, evals: list[tuple[int, float]], stopped: bool) -> None:
    (run_dir / "log").mkdir(parents=True)
    lines = [
        json.dumps({"event": "eval", "time_s": float(i), "envstep": e, "reward_mean": r})
        for i, (e, r) in enumerate(evals)
    ]
    if stopped:
        lines.append(json.dumps({"event": "stop", "time_s": 9.0, "envstep": evals[-1][0]}))
    (run_dir / "log" / "metrics.jsonl").write_text("\n".join(lines) + "\n")


def test_judge_only_reads_left_run_dirs_and_counts_unstopped_runs_as_failed(tmp_path):
    done = RunSpec("configs/cartpole_muzero.yaml", "sync", 0, tmp_path / "a_sync_seed0")
    cut = RunSpec("configs/cartpole_muzero.yaml", "sync", 1, tmp_path / "a_sync_seed1")
    _write_run(done.run_dir, [(1000, 100.0), (2000, 480.0)], stopped=True)
    _write_run(cut.run_dir, [(1000, 50.0)], stopped=False)
    curves = [read_finished(done), read_finished(cut)]
    assert [c.returncode for c in curves] == [0, 1]
    assert curves[0].envsteps == [1000, 2000] and curves[0].rewards == [100.0, 480.0]
    row = judge(curves, threshold=475)
    assert (row.successes, row.failed_runs) == (1, 1)


def test_judge_only_without_configs_judges_what_the_directory_holds(tmp_path, capsys):
    """Left out, --configs, --seeds and --pipelines are read from the run directories' names:
    no row for a config that has no run there (it used to print 0/3 rows for the defaults)."""
    for seed in (0, 1):
        evals = [(1000, 100.0), (2000, 480.0)]
        _write_run(tmp_path / f"cartpole_muzero_475_async_seed{seed}", evals, stopped=True)
    (tmp_path / "not_a_run").mkdir()
    main(["--judge-only", str(tmp_path), "--threshold", "475"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| cart")]
    assert len(rows) == 1
    cells = [cell.strip() for cell in rows[0].split("|")]
    assert cells[1:4] == ["cartpole_muzero_475 (≥ 475)", "async", "2/2"]


def test_judge_only_over_a_directory_without_runs_says_so(tmp_path, capsys):
    """It used to print a 0/3 row for a default config, then fail in the plot with a traceback."""
    (tmp_path / "not_a_run").mkdir()
    for directory in (tmp_path, tmp_path / "missing"):
        with pytest.raises(SystemExit, match=str(directory)):
            main(["--judge-only", str(directory), "--threshold", "475"])
    assert "| " not in capsys.readouterr().out


def _write_seed_run(exp: Path, seed: int, evals, async_pipeline: bool) -> None:
    """`exp/seed_<seed>` as `zeropipe train CONFIG --seeds` leaves it: its config.yaml (the
    config as a run writes it) and its metrics log."""
    from tests.tiny import tiny_config
    from zeropipe.config.loader import config_from_dict, dump_config

    raw = tiny_config(exp / f"seed_{seed}").model_dump(mode="json")
    raw["seed"] = seed
    raw["env"]["stop_value"] = 0.5
    raw["policy"]["async_pipeline"]["enabled"] = async_pipeline
    _write_run(exp / f"seed_{seed}", evals, stopped=True)
    (exp / f"seed_{seed}" / "config.yaml").write_text(dump_config(config_from_dict(raw)))


def test_judge_only_reads_train_seeds_directories_and_pairs_a_sync_and_an_async_one(
    tmp_path, capsys
):
    """`zeropipe train CONFIG --seeds` directories (seed_N, each with its config.yaml): one
    group per config, its pipeline from each run's config, its threshold the stop value."""
    for seed in (0, 1):
        _write_seed_run(tmp_path / "chain", seed, [(100, 0.2), (200, 0.6)], False)
        _write_seed_run(tmp_path / "chain_async", seed, [(100, 0.7)], True)
    main(["--judge-only", str(tmp_path / "chain"), str(tmp_path / "chain_async")])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| chain (")]  # the first table
    cells = [[c.strip() for c in row.split("|")[1:4]] for row in rows]
    assert cells == [["chain (≥ 0.5)", "sync", "2/2"], ["chain (≥ 0.5)", "async", "2/2"]]
    judged = json.loads((tmp_path / "chain" / "learning.json").read_text())["rows"]
    assert [r["envsteps_to_threshold"] for r in judged] == [[200, 200], [100, 100]]
    assert "async / sync median, chain" in out


def test_the_learner_steps_to_the_threshold_and_the_steps_owed_then():
    """Per successful seed, from its first success's eval line; a line without them is left out."""
    nan = float("nan")
    first = _curve(0, [1000, 2000, 3000], [100, 200, 150], pipeline="async")
    second = _curve(1, [1000, 2000, 3000], [100, 150, 300], pipeline="async")
    curves = [
        replace(first, learner_steps=[100.0, 300.0, 400.0], owed=[90.0, 120.0, 10.0]),
        replace(second, learner_steps=[100.0, 200.0, 500.0], owed=[80.0, 60.0, nan]),
        _curve(2, [1000], [100], pipeline="async"),  # never succeeds
    ]
    row = judge(curves, threshold=195)
    assert row.learner_steps_to_threshold == [300.0, 500.0]
    assert row.owed_at_threshold == [120.0]
    cells = [cell.strip() for cell in format_table([row]).splitlines()[-1].split("|")]
    assert cells[6:8] == ["400 [300–500]", "120 [120–120]"]


@pytest.mark.timeout(60)
def test_a_ctrl_c_stops_the_running_runs_and_starts_no_queued_one(tmp_path, monkeypatch):
    started: list[int] = []
    procs: list[subprocess.Popen] = []

    def fake_run_one(spec, overrides, threads, timeout_s):
        # a run that would outlast the test, registered as a real one is; the first one
        # started interrupts the main thread as a Ctrl-C would
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        procs.append(proc)
        learning._RUNNING.add(proc)
        started.append(spec.seed)
        if len(started) == 1:
            os.kill(os.getpid(), signal.SIGINT)
        try:
            proc.wait()
        finally:
            learning._RUNNING.discard(proc)

    # a Ctrl-C as a terminal delivers it: Python's handler. pytest started as a background job
    # (`make test &`, nohup) starts with SIGINT ignored, and Python keeps it so; ignored, the six
    # fake runs would sleep out two minutes each
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    monkeypatch.setattr(learning, "run_one", fake_run_one)
    specs = [RunSpec("c.yaml", "sync", seed, tmp_path / f"s{seed}") for seed in range(6)]
    args = SimpleNamespace(jobs=1, pipelines=["sync"], overrides=[], timeout_s=300.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            learning._train_all(specs, args)
    finally:
        signal.signal(signal.SIGINT, before)
    assert started == [0]  # the five queued runs never started
    assert [p.poll() for p in procs] == [-signal.SIGTERM]  # the running one was stopped
