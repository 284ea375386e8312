"""The async loop applies its rules in a real run: weight sync and budget-queue backpressure."""

from __future__ import annotations

import pytest

from tests.runlog import events
from tests.tiny import tiny_config
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.schedule import should_publish

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("no_leaks")]


@pytest.mark.parametrize(
    ("weight_sync_interval", "max_policy_lag"),
    [(5, -1), pytest.param(20, 3, marks=pytest.mark.slow)],
)
async def test_publishes_follow_the_weight_sync_rule(
    tmp_path, weight_sync_interval, max_policy_lag
):
    ap = {"weight_sync_interval": weight_sync_interval, "max_policy_lag": max_policy_lag}
    cfg = tiny_config(tmp_path / "run", eval_freq=10**6, async_pipeline=ap)  # final eval only
    cfg.max_env_step = 160
    await train_async(cfg, show_progress=False)
    log = events(tmp_path / "run")
    collects = [e for e in log if e["event"] == "collect"]  # one collector: launch order
    # Replay the rule over the launches the run made; it must predict every publish exactly.
    last, expected = None, []
    for collect in collects:
        launch = collect["launch_train_iter"]
        if should_publish(launch, last, weight_sync_interval, max_policy_lag):
            last = launch
            expected.append(launch)
        assert collect["policy_version"] == last
        if max_policy_lag >= 0:
            assert launch - collect["policy_version"] <= max_policy_lag
    published = [e["policy_version"] for e in log if e["event"] == "publish"]
    final_eval = [
        e["policy_version"] for e in log if e["event"] == "publish" and e["reason"] == "eval"
    ]
    assert [v for v in published if v not in final_eval] == expected
    assert len(expected) < len(collects)  # the interval really skipped publishes


async def test_the_budget_queue_never_exceeds_its_cap_once_trainable(tmp_path):
    ap = {"num_collector_actors": 2, "max_train_budget_queue_size": 1}
    # Budgets much longer than a collect: the queue fills, and backpressure has to act.
    cfg = tiny_config(tmp_path / "run", update_per_collect=40, async_pipeline=ap)
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
