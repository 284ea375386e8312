"""An async run stopped at its env-step limit, or by SIGTERM, checkpoints every idle collector's
state (its envs and the steps it holds for its next segments), and the resumed run goes on from
there: every env step either run took is in the replay buffer or still held by a collector, none
lost at the resume. Through the real CLI, each collector resumed by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import TINY, default_sigint, run_cli
from tests.cli.test_resume_owed_budgets import _resume
from tests.cli.test_run_recovery import ignored_sigint, shm_of, sigterm_once_training
from tests.leaks import live_pids
from zeropipe.outputs.checkpoint_format import read_checkpoint

pytestmark = [pytest.mark.usefixtures("no_leaks"), pytest.mark.timeout(400)]

# 8 envs each: the odds that every env stops right at an episode's start (nothing held) are nil
COLLECTORS = ["--set", "policy.async_pipeline.num_collector_actors=2"]
COLLECTORS += ["--set", "env.collector_env_num=8"]
FIRST, RESUMED = 240, 480  # env steps; the buffer (1,000 transitions) evicts nothing


def _held(payload: dict) -> int:
    """Env steps the checkpointed collectors took but did not emit in a segment yet."""
    states = payload["collector_workers"].values()
    return sum(len(t["_actions"]) for state in states for t in state["trajectories"])


def _stored(payload: dict) -> int:
    """Own transitions in the checkpointed replay buffer."""
    return int(payload["buffer"]["store"]["table"]["length"].sum())


def _events(run: Path, event: str) -> list[dict]:
    lines = [json.loads(x) for x in (run / "log" / "metrics.jsonl").read_text().splitlines()]
    return [e for e in lines if e["event"] == event]


def test_a_resumed_async_run_keeps_the_steps_its_collectors_held(tmp_path: Path):
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run"))
    first = run_cli("train", "tiny.yaml", "--quiet", "--async-pipeline", *COLLECTORS, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    run = tmp_path / "run"
    latest = run / "ckpt" / "ckpt_latest.pth.tar"
    stopped = read_checkpoint(latest)
    assert _events(run, "stop")[-1]["reason"] == "max_env_step"
    assert sorted(stopped["collector_workers"]) == ["collector-0", "collector-1"]
    assert stopped["budgets"] == []  # a limit stop trains every budget: the steps held are owed
    assert _held(stopped) > 0  # what a resume without the collectors' states would lose
    assert _stored(stopped) + _held(stopped) == stopped["envstep"]

    code, err = _resume(tmp_path, "--set", f"max_env_step={RESUMED}")
    assert code == 0, err
    resumed = read_checkpoint(latest)
    assert resumed["envstep"] >= RESUMED > stopped["envstep"]
    # the steps held at the stop reached the buffer in the resumed run (and so its budgets)
    assert _stored(resumed) + _held(resumed) == resumed["envstep"]
    # and were trained on: each collect owes int(replay_ratio 0.5 × its transitions), and a
    # limit stop trains every budget, so both runs trained half the buffer, less the roundings
    trained, collects = _events(run, "stop")[-1]["train_iter"], len(_events(run, "collect"))
    assert 0 <= _stored(resumed) / 2 - trained <= collects / 2


# one collector, and a budget queue of one: once a collect's budget is queued the collector waits
# idle until the learner has trained it (256 learner steps), so a SIGTERM sent at the first
# `train` line finds it idle
IDLE_AT_FIRST_TRAIN = [*COLLECTORS[2:], "--set", "policy.replay_ratio=4"]
IDLE_AT_FIRST_TRAIN += ["--set", "policy.async_pipeline.max_train_budget_queue_size=1"]


@pytest.mark.parametrize(
    "sigint",  # SIGTERM cancels the driver through asyncio.Runner's SIGINT handler, or itself
    [
        pytest.param(ignored_sigint, id="sigint-ignored"),
        pytest.param(default_sigint, id="sigint-default", marks=pytest.mark.slow),
    ],
)
def test_sigterm_keeps_the_collectors_states_and_the_resume_goes_on_with_them(
    tmp_path: Path, sigint
):
    run = tmp_path / "run"
    pipeline = ["--async-pipeline", *IDLE_AT_FIRST_TRAIN]
    proc, err = sigterm_once_training(tmp_path, pipeline, sigint=sigint)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "no state from" not in err, err
    assert not live_pids("session", proc.pid) and not shm_of(proc.pid)
    stopped = read_checkpoint(run / "ckpt" / "ckpt_latest.pth.tar")
    assert _events(run, "stop")[-1]["reason"] == "cancelled"
    assert list(stopped["collector_workers"]) == ["collector-0"]
    assert _held(stopped) > 0  # what the resume would lose without them
    assert _stored(stopped) + _held(stopped) == stopped["envstep"]

    # one collect more: the collector's first, from where it stopped
    code, err = _resume(tmp_path, "--set", f"max_env_step={stopped['envstep'] + 1}")
    assert code == 0, err
    resumed = read_checkpoint(run / "ckpt" / "ckpt_latest.pth.tar")
    (collect,) = [e for e in _events(run, "collect") if e["envstep"] > stopped["envstep"]]
    assert resumed["envstep"] == stopped["envstep"] + collect["envstep_delta"]
    # the steps held at the SIGTERM reached the buffer in the resumed run: none lost, no reset
    assert _stored(resumed) + _held(resumed) == resumed["envstep"]
