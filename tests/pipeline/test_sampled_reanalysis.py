"""Continuous reanalysis re-samples: the Trainer writes the re-searched root sampled actions into
the buffer together with the targets over them, for batch and for buffer reanalysis.

Through the real Trainer, Learner (TargetComputer + sampled search) and ReplayBuffer.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.buffer.test_sampled_columns import KS, D, sampled_segment
from tests.tiny import TINY_CONTINUOUS_MODEL
from zeropipe.algos.registry import algorithm
from zeropipe.algos.targets import PolicyWriteback
from zeropipe.buffer import ReplayBuffer
from zeropipe.config import PolicyConfig
from zeropipe.learner.learner import Learner
from zeropipe.learner.trainer import Trainer


class RecordingBuffer(ReplayBuffer):
    """The real buffer, remembering every policy write-back it applies."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.writebacks: list[PolicyWriteback] = []

    def write_policy_targets(self, indices, visits, make_time, sampled_actions=None) -> None:
        self.writebacks.append(PolicyWriteback(indices, visits, make_time, sampled_actions))
        super().write_policy_targets(indices, visits, make_time, sampled_actions)


def _policy(policy_type: str, **policy) -> PolicyConfig:
    return PolicyConfig.model_validate(
        {
            "type": policy_type,
            "model": TINY_CONTINUOUS_MODEL,
            "sampled": {"num_of_sampled_actions": KS},
            "num_unroll_steps": 2,
            "td_steps": 2,
            "discount_factor": 0.99,
            "num_simulations": 4,
            "batch_size": 5,
            "replay_buffer_size": 100,
            "ssl_loss_weight": 0.0,
            "reanalyze_batch_size": 2,
            "reanalyze_partition": 0.75,
            **policy,
        }
    )


def _trainer(cfg: PolicyConfig) -> tuple[Trainer, RecordingBuffer, np.ndarray]:
    seg = sampled_segment(True)  # 6 steps of [5] frames stacked 2, D = 2, Ks = 4
    buffer = RecordingBuffer(
        100, num_unroll_steps=2, td_steps=2, discount=0.99, use_priority=False,
        alpha=0.6, beta=0.4, seed=0,
    )  # fmt: skip
    buffer.push([seg])
    net = algorithm(cfg.type).family.build_network((10,), D, cfg)
    trainer = Trainer(Learner(net, cfg, 1, seed=0), buffer, cfg)
    return trainer, buffer, seg.root_sampled_actions


def _stored(buffer: ReplayBuffer, name: str) -> np.ndarray:
    """Per-step column of the one pushed segment, by flat index (== position)."""
    return buffer.state_dict()["store"]["steps"][name]


def _assert_written(buffer: RecordingBuffer, before: np.ndarray) -> None:
    assert buffer.writebacks
    want_sampled, want_visits = before.copy(), {}
    for wb in buffer.writebacks:
        assert wb.sampled_actions is not None
        assert wb.sampled_actions.shape == (wb.indices.size, KS, D)
        for i, index in enumerate(wb.indices):  # the last write of an index wins
            want_sampled[index] = wb.sampled_actions[i]
            want_visits[int(index)] = wb.visits[i]
    n = before.shape[0]
    np.testing.assert_array_equal(_stored(buffer, "root_sampled_actions")[:n], want_sampled)
    visits = _stored(buffer, "child_visits")
    for index, row in want_visits.items():
        np.testing.assert_array_equal(visits[index], row)
    redone = sorted(want_visits)
    # a fresh search drew new actions (float draws: equal only by accident)
    assert (want_sampled[redone] != before[redone]).all()
    assert (np.abs(want_sampled) < 1.0).all()


@pytest.mark.parametrize("policy_type", ["sampled_muzero", "sampled_efficientzero"])
def test_batch_reanalysis_writes_the_re_sampled_actions(policy_type: str) -> None:
    trainer, buffer, before = _trainer(_policy(policy_type, reanalyze_ratio=1.0))
    assert trainer.add_budget(steps=1, envstep=100)
    trainer.step()
    _assert_written(buffer, before)


@pytest.mark.parametrize("policy_type", ["sampled_muzero", "sampled_efficientzero"])
def test_buffer_reanalysis_writes_the_re_sampled_actions(policy_type: str) -> None:
    trainer, buffer, before = _trainer(_policy(policy_type, buffer_reanalyze_freq=1.0))
    assert trainer.reanalyze_buffer()
    _assert_written(buffer, before)
