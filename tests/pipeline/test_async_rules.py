"""The async loop applies its rules in a real run: weight sync and budget-queue backpressure."""

from __future__ import annotations

from collections import deque
from types import SimpleNamespace

import pytest

from tests.runlog import events
from tests.tiny import tiny_config
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.async_launch import Launcher

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("no_leaks")]


@pytest.mark.parametrize(
    ("weight_sync_interval", "max_policy_lag", "longest_lag", "shortest_publish_gap"),
    [
        # a negative lag never forces: versions go out every 5 iterations, so a collect runs
        # weights up to 4 iterations old
        (5, -1, 4, 5),
        # lag 4 under a long interval: a collect may run weights exactly 4 iterations old; one
        # launched 5 (or more) past the last publish forces a new one. (4: on the tiny config a
        # collect brings a budget of 4 learner steps, so launches 4 apart are common and the
        # boundary is met; launches 3 apart were never seen.)
        pytest.param(20, 4, 4, 5, marks=pytest.mark.slow),
    ],
)
async def test_publishes_follow_the_weight_sync_rule(
    tmp_path, weight_sync_interval, max_policy_lag, longest_lag, shortest_publish_gap
):
    # one weights version per collect (the reference's rule), so that a collect's version is
    # the one its launch got: the weight-sync rule is about launches
    ap = {
        "weight_sync_interval": weight_sync_interval,
        "max_policy_lag": max_policy_lag,
        "collect_freshness": "reference",
    }
    cfg = tiny_config(tmp_path / "run", eval_freq=10**6, async_pipeline=ap)  # final eval only
    cfg.max_env_step = 160
    await train_async(cfg, show_progress=False)
    log = events(tmp_path / "run")
    collects = [e for e in log if e["event"] == "collect"]  # one collector: launch order
    # The expected bounds are written out above (not computed by schedule.should_publish): a
    # collect that reuses the last version ran it at most `longest_lag` iterations old, and a
    # collect that got a new version got the one of its launch, at least
    # `shortest_publish_gap` iterations past the previous one.
    assert collects[0]["policy_version"] == collects[0]["launch_train_iter"]
    new_versions = [collects[0]["policy_version"]]
    for collect in collects:
        launch, version = collect["launch_train_iter"], collect["policy_version"]
        if version != new_versions[-1]:
            assert version == launch
            assert version - new_versions[-1] >= shortest_publish_gap, (new_versions, collect)
            new_versions.append(version)
        assert 0 <= launch - version <= longest_lag, collect
    published = [
        e["policy_version"] for e in log if e["event"] == "publish" and e["reason"] != "eval"
    ]
    assert published == new_versions
    assert len(new_versions) < len(collects)  # the interval really skipped publishes


async def test_the_budget_queue_never_exceeds_its_cap_once_trainable(tmp_path):
    ap = {"num_collector_actors": 2, "max_train_budget_queue_size": 1}
    # Budgets much longer than a collect: the queue fills, and backpressure has to act.
    cfg = tiny_config(tmp_path / "run", update_per_collect=20, async_pipeline=ap)
    cfg.max_env_step = 240
    await train_async(cfg, show_progress=False)
    log = events(tmp_path / "run")
    collects = [e for e in log if e["event"] == "collect"]
    first_budget = next(i for i, e in enumerate(collects) if e["budget_queue_len"] > 0)
    # Collects launched before the buffer was trainable may still land on the first budget.
    settled = collects[first_budget + 2 :]
    assert len(settled) >= 5
    assert max(e["budget_queue_len"] for e in settled) <= 1
    trains = [e for e in log if e["event"] == "train" and e["time_s"] > settled[0]["time_s"]]
    assert max(e["budget_queue_len"] for e in trains) <= 1


def _jit_due(owed: int, step_s: float | None, collects_s: list[float]) -> bool:
    """`Launcher._due_just_in_time` on a launcher reduced to what the rule reads."""
    stats = SimpleNamespace(step_s=step_s)
    trainer = SimpleNamespace(owed_steps=lambda: owed, stats=stats)
    launcher = SimpleNamespace(
        state=SimpleNamespace(trainer=trainer),
        collect_s=deque(collects_s),  # the walls of whole collects
    )
    return Launcher._due_just_in_time(launcher)


def test_just_in_time_launches_once_the_owed_steps_fit_in_one_collect():
    # median collect 2.0 s (of 1, 2, 9); a learner step 0.05 s: 40 owed steps take 2.0 s
    assert _jit_due(40, 0.05, [1.0, 2.0, 9.0])
    assert not _jit_due(41, 0.05, [1.0, 2.0, 9.0])
    assert _jit_due(0, 0.05, [1.0, 2.0, 9.0])  # nothing owed: the learner would idle
    assert _jit_due(500, None, [1.0])  # no learner step measured yet
    assert _jit_due(500, 0.05, [])  # no collect measured yet


def _held(freshness: str, evals_inflight: int, owed: int) -> bool:
    """`Launcher._hold_for_eval_or_freshness` with a 0.05 s learner step and 2.0 s collects."""
    stats = SimpleNamespace(step_s=0.05)
    trainer = SimpleNamespace(owed_steps=lambda: owed, stats=stats)
    launcher = SimpleNamespace(
        ap=SimpleNamespace(collect_freshness=freshness),
        state=SimpleNamespace(trainer=trainer),
        collect_s=deque([2.0]),
        inflight=lambda role: evals_inflight if role == "evaluator" else 0,
    )
    launcher._due_just_in_time = lambda: Launcher._due_just_in_time(launcher)
    return Launcher._hold_for_eval_or_freshness(launcher)


@pytest.mark.parametrize("freshness", ["reference", "refresh"])
def test_while_an_eval_runs_a_collect_waits_until_it_is_due_just_in_time(freshness):
    assert not _held(freshness, evals_inflight=0, owed=400)  # no eval: launched as always
    assert _held(freshness, evals_inflight=1, owed=400)  # 20 s of owed training: it waits
    assert not _held(freshness, evals_inflight=1, owed=40)  # the owed steps fit in one collect
    assert not _held(freshness, evals_inflight=1, owed=0)  # nothing owed: never starve


def test_just_in_time_holds_with_or_without_an_eval():
    assert _held("just_in_time", evals_inflight=0, owed=400)
    assert not _held("just_in_time", evals_inflight=0, owed=40)


async def test_a_just_in_time_run_trains_every_budget_and_stops(tmp_path):
    ap = {"collect_freshness": "just_in_time"}
    cfg = tiny_config(tmp_path / "run", update_per_collect=20, async_pipeline=ap)
    cfg.max_env_step = 240
    await train_async(cfg, show_progress=False)
    log = events(tmp_path / "run")
    stop = next(e for e in log if e["event"] == "stop")
    assert stop["reason"] == "max_env_step"
    # every collect after the first trainable one earned 20 learner steps, all of them trained
    earned = sum(20 for e in log if e["event"] == "collect" and e["budget_queue_len"] > 0)
    assert stop["train_iter"] == earned > 0
