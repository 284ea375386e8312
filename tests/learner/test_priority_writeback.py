"""Priorities of a learner step reach the replay buffer stamped with the batch's make_time.

Through the real Trainer, Learner and ReplayBuffer: a fresh write-back lands on the sampled roots;
one made stale by an eviction between sampling and write-back (flat indices shifted) is dropped.
"""

from __future__ import annotations

import numpy as np

from tests.buffer.factories import make_segment
from zeropipe.buffer import ReplayBatch, ReplayBuffer
from zeropipe.learner.learner import Learner, StepResult
from zeropipe.learner.trainer import Trainer

from .factories import replay_buffer, tiny_network, tiny_policy

SEGMENT = 6  # own transitions per pushed segment, all with priority 1


class RecordingBuffer(ReplayBuffer):
    """The real buffer, remembering the batches it hands out."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.batches: list[ReplayBatch] = []

    def sample(self, batch_size: int) -> ReplayBatch:
        batch = super().sample(batch_size)
        self.batches.append(batch)
        return batch


class EvictingLearner:
    """The real learner; after its step, a push evicts the oldest segment (as a collect could)."""

    def __init__(self, learner: Learner, buffer: ReplayBuffer) -> None:
        self.learner, self.buffer = learner, buffer

    def __getattr__(self, name: str):
        return getattr(self.learner, name)

    def step(self, batch: ReplayBatch) -> StepResult:
        result = self.learner.step(batch)
        self.buffer.push([_segment(episode_id=9)])
        return result


def _segment(episode_id: int):
    return make_segment(
        SEGMENT, ends_episode=True, terminated=True, episode_id=episode_id,
        priorities=np.ones(SEGMENT),
    )  # fmt: skip


def _trainer(evict_during_step: bool) -> tuple[Trainer, RecordingBuffer]:
    cfg = tiny_policy(use_priority=True, replay_buffer_size=3 * SEGMENT, batch_size=4)
    buffer = replay_buffer(cfg, use_priority=True, cls=RecordingBuffer)
    buffer.push([_segment(episode_id=e) for e in range(3)])  # full: the next push evicts one
    learner = Learner(tiny_network(cfg), cfg, 1, seed=0)
    trainer = Trainer(
        EvictingLearner(learner, buffer) if evict_during_step else learner, buffer, cfg
    )
    assert trainer.add_budget(steps=1, envstep=10 * SEGMENT)
    return trainer, buffer


def _live_priorities(buffer: ReplayBuffer) -> np.ndarray:
    return buffer.state_dict()["priorities"]  # [N] raw priorities by flat index


def test_fresh_priorities_land_on_the_sampled_roots():
    trainer, buffer = _trainer(evict_during_step=False)
    result = trainer.step()
    (batch,) = buffer.batches
    assert not np.any(np.isclose(result.priorities, 1.0))  # the write-back is visible
    want = np.ones(buffer.num_transitions)
    want[batch.indices] = result.priorities  # duplicates: the last write wins, as in numpy
    np.testing.assert_allclose(_live_priorities(buffer), want, rtol=1e-6)


def test_a_write_back_made_stale_by_an_eviction_is_dropped():
    trainer, buffer = _trainer(evict_during_step=True)
    result = trainer.step()
    (batch,) = buffer.batches
    assert buffer.num_transitions == 3 * SEGMENT  # one segment evicted, one pushed
    assert not np.any(np.isclose(result.priorities, 1.0))
    # Applied with fresh stamps, the priorities would have landed on shifted positions.
    assert np.all(batch.indices < buffer.num_transitions)
    np.testing.assert_array_equal(_live_priorities(buffer), np.ones(buffer.num_transitions))
