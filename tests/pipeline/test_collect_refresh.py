"""`policy.async_pipeline.collect_freshness: refresh`: a collect comes back in parts (a fifth of a
game segment's steps each), each played with the newest snapshot, and the driver treats the
parts as the one collect they add up to.

The collector's side (parts play what one call plays), the launcher's bookkeeping on a real run
state (launch_fakes.py), and a real async run through worker processes.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from tests.pipeline.launch_fakes import RecordingPool, VersionStore, fake_launcher
from tests.runlog import events
from tests.tiny import tiny_config
from zeropipe.backends.base import WorkerHandle
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.build import build_collector
from zeropipe.pipeline.run_state import RunState
from zeropipe.pipeline.runner import open_run
from zeropipe.workers.collector import CollectOutcome

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("no_leaks")]


def _played(segments) -> list[tuple[int, int, list[int]]]:
    return [(s.episode_id, s.start_step, [int(a) for a in s.actions[: s.length]]) for s in segments]


def test_a_collect_in_parts_plays_what_one_collect_plays(tmp_path):
    cfg = tiny_config(tmp_path / "run", num_segments=6)
    whole, parted = build_collector(cfg), build_collector(cfg)
    try:
        parted.load_weights(whole.search.network.state_dict(), 0)
        one = whole.collect(1.0, 0.25)
        parts: list[CollectOutcome] = []
        while sum(len(p.segments) for p in parts) < 6:
            left = 6 - sum(len(p.segments) for p in parts)
            parts.append(parted.collect(1.0, 0.25, num_segments=left, max_steps=3))
    finally:
        whole.close()
        parted.close()
    assert all(p.envstep_delta <= 3 * 2 for p in parts)  # 3 steps of its 2 envs at most
    assert len(parts) > 2
    assert sum(p.envstep_delta for p in parts) == one.envstep_delta
    assert _played([s for p in parts for s in p.segments]) == _played(one.segments)


@pytest.fixture
def state(tmp_path) -> Iterator[RunState]:
    # a segment of 25 steps comes back in parts of 25 // 5 = 5 steps
    ap = {"collect_freshness": "refresh"}
    cfg = tiny_config(tmp_path / "run", num_segments=4, game_segment_length=25, async_pipeline=ap)
    run_state, _ = open_run(cfg, resume=False)
    yield run_state
    run_state.run.close()


def _part(num_segments: int, version: int, envsteps: int) -> CollectOutcome:
    return CollectOutcome([object()] * num_segments, envsteps, version, [1.0], 0.5)  # type: ignore[list-item]


async def _launched(state: RunState):
    """A launcher with one collector, after its first launch: (launcher, collector, pool, store)."""
    collector = WorkerHandle("collector", 0)
    pool = RecordingPool(workers=[collector])
    store = VersionStore()
    launcher = fake_launcher(state, pool, store)
    await launcher.launch_collects()
    return launcher, collector, pool, store


async def test_the_launcher_sends_a_collect_on_until_its_segments_are_done(state):
    launcher, collector, pool, store = await _launched(state)
    assert [(r.num_segments, r.max_steps, r.snapshot.version) for r in pool.sent] == [(4, 5, 0)]
    launcher.finish(collector, pool.sent[-1].request_id)
    assert launcher.collect_part(collector, _part(1, 0, 10)) is None
    state.trainer.learner.train_iter = 7  # the learner trained meanwhile
    await launcher.continue_collect(collector)
    assert [(r.num_segments, r.snapshot.version) for r in pool.sent[1:]] == [(3, 7)]
    launcher.finish(collector, pool.sent[-1].request_id)
    outcome, fields = launcher.collect_part(collector, _part(3, 7, 10))
    assert (len(outcome.segments), outcome.envstep_delta, outcome.policy_version) == (4, 20, 0)
    assert outcome.episode_returns == [1.0, 1.0] and outcome.duration_s == 1.0
    assert fields == {"launch_train_iter": 0, "collect_parts": 2, "last_policy_version": 7}
    assert not launcher.collects and sum(store.leases.values()) == 0


async def test_a_collector_lost_mid_collect_loses_its_parts(state):
    launcher, collector, pool, store = await _launched(state)
    launcher.finish(collector, pool.sent[-1].request_id)
    assert launcher.collect_part(collector, _part(2, 0, 10)) is None
    await launcher.continue_collect(collector)
    launcher.forget(collector)  # it died with the second part in flight
    assert not launcher.collects and sum(store.leases.values()) == 0
    await launcher.launch_collects()  # its replacement starts a whole new collect
    assert pool.sent[-1].num_segments == 4


async def test_an_async_run_in_parts_plays_newer_weights_within_a_collect(tmp_path):
    ap = {"collect_freshness": "refresh"}  # segments of 10 steps: parts of 2
    cfg = tiny_config(
        tmp_path / "run", update_per_collect=20, game_segment_length=10, async_pipeline=ap
    )
    cfg.max_env_step = 240
    await train_async(cfg, show_progress=False)
    log = events(tmp_path / "run")
    collects = [e for e in log if e["event"] == "collect"]
    stop = next(e for e in log if e["event"] == "stop")
    assert stop["reason"] == "max_env_step"
    # each line is a whole collect: its num_segments (2) segments, from parts of <= 2 steps
    assert all(e["segments"] >= 2 for e in collects)
    assert all(e["envstep_delta"] <= 2 * 2 * e["collect_parts"] for e in collects)
    assert max(e["collect_parts"] for e in collects) > 1
    assert any(e["last_policy_version"] > e["policy_version"] for e in collects)
    assert stop["envstep"] == sum(e["envstep_delta"] for e in collects)
    # one budget per whole collect after the first trainable one, all of them trained
    earned = sum(20 for e in collects if e["budget_queue_len"] > 0)
    assert stop["train_iter"] == earned > 0
    assert np.all(np.diff([e["envstep"] for e in collects]) > 0)
