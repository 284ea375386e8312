"""`n_step_horizon`: the value targets' n-step horizon under 'per_step' and 'reference', by hand.

K=2, T=3, gamma=0.5; the factories' step t has reward t + 1 and frame value t. Each table row is
(value_reward_sum, bootstrap_discount) of the K+1 unroll steps c = pos, pos+1, pos+2; n is the
segment's stored steps. 'reference' (LightZero `MuZeroGameBuffer._prepare_reward_value_context`):
td = min(T, n - pos) for every step, bootstrap only where c + td < n. 'per_step': td =
min(T, n - c), bootstrap at c + td = n unless the data ends in a true terminal.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.tiny import tiny_config
from zeropipe.buffer import ReplayBatch, ReplayBuffer
from zeropipe.config import PolicyConfig
from zeropipe.config.policy import registered_policy_types
from zeropipe.pipeline.build import build_driver

from .factories import make_segment

K, T, GAMMA = 2, 3, 0.5


def _root(segment, pos: int, horizon: str) -> tuple[ReplayBatch, int]:
    """A batch holding every root of `segment` once, and the row of root `pos`."""
    buffer = ReplayBuffer(
        1000, num_unroll_steps=K, td_steps=T, discount=GAMMA, use_priority=False,
        alpha=1.0, beta=1.0, seed=0, n_step_horizon=horizon,
    )  # fmt: skip
    buffer.push([segment])
    batch = buffer.sample(buffer.num_transitions)
    return batch, int(np.nonzero(batch.indices == pos)[0][0])


def _check(segment, pos: int, horizon: str, sums: list[float], discounts: list[float]) -> None:
    batch, i = _root(segment, pos, horizon)
    np.testing.assert_allclose(batch.value_reward_sum[i], sums)
    np.testing.assert_allclose(batch.bootstrap_discount[i], discounts)


def _time_limit(length: int, pad: int = 0):
    return make_segment(length, pad=pad, ends_episode=True, terminated=False)


# an episode cut by a time limit after 10 steps (n = 10)
TIME_LIMIT = [
    # pos 6, c = 6, 7, 8. per_step td = 3, 3, 2: c = 7 and 8 bootstrap from o_10 (gamma^3,
    # gamma^2). reference td = 3: 7 + 3 = 10 is not < 10, so only c = 6 bootstraps (from o_9)
    (6, "per_step", [7 + 4 + 2.25, 8 + 4.5 + 2.5, 9 + 5], [0.125, 0.125, 0.25]),
    (6, "reference", [7 + 4 + 2.25, 8 + 4.5 + 2.5, 9 + 5], [0.125, 0, 0]),
    # pos 8, c = 8, 9, 10 = n. per_step td = 2, 1, 0: o_10 every time. reference td = 2 from the
    # root: every c + 2 >= 10, the rewards that exist alone
    (8, "per_step", [9 + 5, 10, 0], [0.25, 0.5, 1.0]),
    (8, "reference", [9 + 5, 10, 0], [0, 0, 0]),
]


@pytest.mark.parametrize(("pos", "horizon", "sums", "discounts"), TIME_LIMIT)
def test_a_time_limit_end(pos, horizon, sums, discounts):
    _check(_time_limit(10), pos, horizon, sums, discounts)


def test_the_bootstrap_state_at_a_time_limit_is_the_final_observation():
    # where per_step bootstraps at the data's end, it reads o_n (frame value 10)
    batch, i = _root(_time_limit(10), 8, "per_step")
    np.testing.assert_array_equal(batch.bootstrap_obs[i, :, 0, 0], [10, 10, 10])


# a segment of 4 own steps padded by the 2 steps of its successor that reach a time limit
# (n = 6; the collector pads with up to K+T = 5 steps, fewer when the episode ends sooner)
PADDED = [
    # pos 1, c = 1, 2, 3: td = 3 under both; c = 3 reaches n = 6: per_step bootstraps from o_6,
    # reference drops it (3 + 3 is not < 6)
    (1, "per_step", [2 + 1.5 + 1, 3 + 2 + 1.25, 4 + 2.5 + 1.5], [0.125, 0.125, 0.125]),
    (1, "reference", [2 + 1.5 + 1, 3 + 2 + 1.25, 4 + 2.5 + 1.5], [0.125, 0.125, 0]),
    # pos 3, c = 3, 4, 5 (4 and 5 are the successor's): per_step td = 3, 2, 1 into o_6;
    # reference td = 3 from the root, every c + 3 >= 6
    (3, "per_step", [4 + 2.5 + 1.5, 5 + 3, 6], [0.125, 0.25, 0.5]),
    (3, "reference", [4 + 2.5 + 1.5, 5 + 3, 6], [0, 0, 0]),
]


@pytest.mark.parametrize(("pos", "horizon", "sums", "discounts"), PADDED)
def test_a_segment_padded_by_its_successor_up_to_a_time_limit(pos, horizon, sums, discounts):
    _check(_time_limit(4, pad=2), pos, horizon, sums, discounts)


@pytest.mark.parametrize("horizon", ["per_step", "reference"])
def test_fully_padded_segments_bootstrap_at_td_steps_under_both(horizon):
    # 4 own steps + K+T = 5 padding (n = 9): c + T <= pos + K + T < n for every own root
    _check(
        make_segment(4, pad=5), 3, horizon, [4 + 2.5 + 1.5, 5 + 3 + 1.75, 6 + 3.5 + 2], [0.125] * 3
    )


# a true terminal after 10 steps: both rules give the same targets. At c + T >= n the per-step
# td = n - c and the reference's td (T, or n - pos) both sum the rewards of [c, n) and neither
# bootstraps; before that both take td = T
TERMINAL = [
    (6, [7 + 4 + 2.25, 8 + 4.5 + 2.5, 9 + 5], [0.125, 0, 0]),
    (8, [9 + 5, 10, 0], [0, 0, 0]),
    (9, [10, 0, 0], [0, 0, 0]),  # c = 11 > n: value_mask 0
]


@pytest.mark.parametrize("horizon", ["per_step", "reference"])
@pytest.mark.parametrize(("pos", "sums", "discounts"), TERMINAL)
def test_a_true_terminal_is_monte_carlo_under_both(pos, sums, discounts, horizon):
    _check(make_segment(10, ends_episode=True, terminated=True), pos, horizon, sums, discounts)


@pytest.mark.parametrize(
    ("pos", "horizon", "discounts"),
    [
        # n = 10 cut by a time limit, pos 7: per_step td = 3, 3, 2 -> every step reads o_10;
        # reference td = 3 -> only c + 3 < 10 would bootstrap: none
        (7, "per_step", [0.125, 0.25, 0.5]),
        (7, "reference", [0, 0, 0]),
    ],
)
def test_the_sequence_window_is_the_same_under_both(pos, horizon, discounts):
    # the bootstrap states u = min(c + td, n) = 10, 10, 10 and positions 0, 0, 0 either way:
    # only whether they are read differs
    batch, i = _root(_time_limit(10), pos, horizon)
    np.testing.assert_array_equal(batch.bootstrap_obs[i, :, 0, 0], [10, 10, 10])
    assert batch.bootstrap_positions[i].tolist() == [0, 0, 0]
    np.testing.assert_allclose(batch.bootstrap_discount[i], discounts)


@pytest.mark.parametrize("policy_type", registered_policy_types())
def test_every_type_defaults_to_per_step(policy_type):
    # one-step unrolls fit the UniZero types' default context window
    cfg = PolicyConfig.model_validate({"type": policy_type, "num_unroll_steps": 1})
    assert cfg.n_step_horizon == "per_step"


@pytest.mark.parametrize("horizon", ["per_step", "reference"])
def test_the_option_reaches_the_buffer(tmp_path, horizon):
    cfg = tiny_config(tmp_path / "run", n_step_horizon=horizon)
    assert build_driver(cfg).buffer.window.horizon == horizon


def test_an_unknown_horizon_is_refused():
    with pytest.raises(ValueError, match="n_step_horizon"):
        _root(_time_limit(10), 0, "per_sample")
