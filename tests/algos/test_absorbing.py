"""`policy.absorbing_terminal`: the muzero family trains the states past a true terminal.

The buffer marks them (`ReplayBatch.absorbing`); the family hands them to the unroll loss only
when the option is on, so that with it the loss of a root whose unroll crosses a terminal reads
the value and reward targets past it (0 from the buffer), and without it masks them.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.buffer.factories import make_segment
from tests.learner.factories import all_roots, tiny_network, tiny_policy
from zeropipe.algos.losses import unroll_loss
from zeropipe.algos.muzero import MUZERO, loss_weights
from zeropipe.algos.targets import Targets
from zeropipe.config import ConfigError, config_from_dict


def _inputs(cfg, batch):
    b, k1 = batch.value_mask.shape
    targets = Targets(
        value=torch.zeros(b, k1),
        reward=torch.zeros(b, k1 - 1),
        policy=torch.full((b, k1, 2), 0.5),
        writeback=None,
    )
    return MUZERO.unroll_inputs(batch, targets, 1, cfg)


@pytest.mark.parametrize("terminated", [True, False])
def test_the_option_trains_only_the_states_past_a_true_terminal(terminated):
    on, off = tiny_policy(absorbing_terminal=True), tiny_policy()
    batch, row_of = all_roots(on, make_segment(6, ends_episode=True, terminated=terminated))
    last = int(row_of[5])  # c = 5, 6 = n, 7 > n
    inp_on, inp_off = _inputs(on, batch), _inputs(off, batch)
    assert inp_off.absorbing is None
    expected = [0.0, 0.0, 1.0] if terminated else [0.0, 0.0, 0.0]
    assert inp_on.absorbing[last].tolist() == expected
    net = tiny_network(on)
    loss_on = unroll_loss(net, inp_on, loss_weights(on)).per_sample.detach()
    loss_off = unroll_loss(net, inp_off, loss_weights(off)).per_sample.detach()
    crossing = np.zeros(len(loss_on), dtype=bool)
    crossing[last] = terminated
    assert np.all((loss_on != loss_off).numpy() == crossing)


def test_the_option_belongs_to_muzero():
    with pytest.raises(ConfigError, match="absorbing_terminal"):
        config_from_dict(
            {
                "env": {"env_id": "CartPole-v1"},
                "policy": {"type": "unizero", "absorbing_terminal": True},
            }
        )
