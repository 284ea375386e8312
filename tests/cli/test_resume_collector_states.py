"""An async run stopped at its env-step limit checkpoints every collector's state (its envs and
the steps it holds for its next segments), and the resumed run goes on from there: every env step
either run took is in the replay buffer or still held by a collector, none lost at the resume.
Through the real CLI, two collectors, each resumed by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import TINY, run_cli
from tests.cli.test_resume_owed_budgets import _resume
from zeropipe.pipeline.checkpoint_format import read_checkpoint

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
