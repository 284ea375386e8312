"""`zeropipe compare A B`: an async run with a budget queue of one is its sync run
(the README's parity reading rests on this), and with the default queue it is not, which the
command says with the first differing learner step. Real runs through the CLI; then the
comparison's rules on written logs: machine keys left out, a resumed log's repeated learner step
read at its last line and its first line after the resume (a shorter window) not compared, bad
input exit 2. (tests/cli/test_resume_equals_uninterrupted.py compares a real resumed run so.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import TINY, run_cli
from zeropipe.cli import compare as same_run

ROOT = Path(__file__).resolve().parents[2]
# both pipelines score the versions at multiples of eval_freq (`learner_step`), so their evals
# are of the same weights; one learner thread, so a learner step is the same arithmetic in both
SETTINGS = [
    "--quiet", "--set", "policy.learner_num_threads=1", "--set", "policy.eval_freq=10",
    "--set", "policy.eval_grid=learner_step",
]  # fmt: skip


def _same_run(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "zeropipe", "compare", str(a), str(b)],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def _train(tmp_path: Path, name: str, *args: str) -> Path:
    name_it = ["--set", f"exp_name={name}"]
    done = run_cli("train", "tiny.yaml", *SETTINGS, *name_it, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / name


@pytest.mark.usefixtures("no_leaks")
@pytest.mark.timeout(300)
def test_async_with_a_queue_of_one_is_the_sync_run_and_with_two_it_is_not(tmp_path: Path):
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run"))
    sync = _train(tmp_path, "sync")
    one = _train(
        tmp_path, "one", "--async-pipeline",
        "--set", "policy.async_pipeline.max_train_budget_queue_size=1",
    )  # fmt: skip
    two = _train(tmp_path, "two", "--async-pipeline")  # the queue's default: two budgets

    same = _same_run(sync, one)
    assert same.returncode == 0, same.stdout + same.stderr
    lines = same_run.train_lines(same_run.read_records(sync))
    assert f"train lines at the same learner step: {len(lines)} " in same.stdout
    assert f"equal: {len(lines)}\n" in same.stdout and "same run up to learner step" in same.stdout

    other = _same_run(sync, two)
    assert other.returncode == 1, other.stdout + other.stderr
    # two budgets queued: the collector runs a segment ahead from the first budget on
    assert "first difference at learner step 10: " in other.stdout
    assert "not the same run" in other.stdout


def _write(run: Path, *records: dict) -> Path:
    (run / "log").mkdir(parents=True)
    text = "".join(json.dumps(r) + "\n" for r in records)
    (run / "log" / "metrics.jsonl").write_text(text)
    return run


def _train_line(step: int, loss: float, **more: object) -> dict:
    return {"event": "train", "train_iter": step, "envstep": 4 * step, "value_loss": loss, **more}


def test_machine_keys_are_left_out_and_a_repeated_step_counts_at_its_last_line(tmp_path: Path):
    a = _write(
        tmp_path / "a",
        _train_line(10, 1.0, time_s=3.0, learner_steps_per_s=9.0, budget_queue_len=1),
        _train_line(20, 0.5, time_s=6.0, learner_steps_per_s=8.0, budget_queue_len=1),
        {"event": "eval", "policy_version": 20, "envstep": 80, "reward_mean": 1.0},
    )
    resumed = _write(
        tmp_path / "resumed",
        _train_line(10, 1.0, time_s=30.0, learner_steps_per_s=1.0, budget_queue_len=2),
        _train_line(20, 0.7, time_s=40.0),  # logged before the kill, trained again after it
        {"event": "resume"},
        _train_line(20, 0.5, time_s=50.0),
        _train_line(30, 0.4, time_s=60.0),  # past the shorter run's end: not compared
        {"event": "eval", "policy_version": 20, "envstep": 80, "reward_mean": 1.0},
    )
    same, report = same_run.compare(a, resumed)
    assert same, report
    assert report[0] == "train lines at the same learner step: 2 (10-20), equal: 2"

    # the first line after a resume averages fewer learner steps: counted, not compared
    window = _write(
        tmp_path / "window",
        _train_line(10, 1.0, learner_steps=10),
        {"event": "resume"},
        _train_line(20, 0.9, learner_steps=1),
    )
    whole = _write(
        tmp_path / "whole",
        _train_line(10, 1.0, learner_steps=10),
        _train_line(20, 0.5, learner_steps=10),
    )
    same, report = same_run.compare(whole, window)
    assert same, report
    assert report[0].endswith("equal: 1, over other windows (a resume): 1")

    changed = _write(tmp_path / "changed", _train_line(10, 1.0), _train_line(20, 0.5, entropy=2.0))
    same, report = same_run.compare(a, changed)
    assert not same
    assert report[1] == "first difference at learner step 20: entropy - / 2.0"


def test_runs_without_common_learner_steps_or_metrics_are_bad_input(tmp_path: Path):
    a = _write(tmp_path / "a", _train_line(10, 1.0))
    b = _write(tmp_path / "b", _train_line(20, 1.0))
    done = _same_run(a, b)
    assert done.returncode == 2 and "no train line at the same learner step" in done.stderr
    done = _same_run(a, tmp_path)
    assert done.returncode == 2 and "has no log/metrics.jsonl" in done.stderr
