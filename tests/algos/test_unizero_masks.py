"""`policy.loss_masks`: which unroll steps each UniZero loss term trains, and its divisor.

A world model whose outputs are set by hand makes every step's loss a known number, so each
term's per-sample value under either option is worked out below from the masks alone:

- the observation o_j is the number j (the encoder is the identity, the prediction of every next
  latent 0), so the latent loss of the prediction at a_k against o_{k+1} is (k+1)²: 1, 4, 9;
- at step k the reward, value and policy heads spread their probability evenly over the first
  m_k = 2, 4, 8 atoms or actions and the target is the first: each cross-entropy and the policy's
  entropy are ln m_k = (1, 2, 3)·ln 2; with the entropy weight ½ the policy term is ½ of that.

Two samples, K = 3:
- s0: its root two steps before its segment's end; step 2 is the successor's step padded on
  (its action exists, but it is not the segment's own);
- s1: its episode ends after the root's action: only step 0's action exists, state 1 is the
  final observation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.buffer.factories import make_segment
from tests.learner.factories import all_roots, tiny_policy
from zeropipe.algos.losses import UnrollInputs
from zeropipe.algos.registry import algorithm
from zeropipe.algos.sampled_unizero import SampledUniZeroConfig, SampledUniZeroModelConfig
from zeropipe.algos.targets import Targets
from zeropipe.algos.unizero import UniZeroConfig, unizero_loss
from zeropipe.config import UniZeroModelConfig, WorldModelConfig
from zeropipe.models.support import DiscreteSupport
from zeropipe.models.world_model import SequenceOutput

K, ATOMS = 3, 8
LN2 = math.log(2.0)
EVEN_OVER = (2, 4, 8)  # m_k: atoms or actions that step k's heads spread evenly over

MASKS = {  # [s0, s1]
    "reward_mask": [[1, 1, 1], [1, 0, 0]],  # action k exists
    "policy_mask": [[1, 1, 1, 1], [1, 0, 0, 0]],  # a search policy is stored at state k
    "value_mask": [[1, 1, 1, 1], [1, 1, 0, 0]],  # state k exists
    "own_segment_mask": [[1, 1, 0, 0], [1, 0, 0, 0]],  # step k is the root segment's own
}

# per-sample [s0, s1] of each term; the policy and entropy in units of ln 2
PER_TERM = {  # each term over its own mask, divided by its count per sample
    "latent_loss": [(1 + 4 + 9) / 3, 1 / 1],
    "reward_loss": [(1 + 2 + 3) / 3, 1 / 1],
    "value_loss": [(1 + 2 + 3) / 3, (1 + 2) / 2],  # s1's final observation too
    "policy_loss": [0.5 * (1 + 2 + 3) / 3, 0.5 * 1 / 1],
    "entropy": [(1 + 2 + 3) / 3, 1 / 1],
}
REFERENCE = {  # one mask (own segment); the latent of a_k by step k+1's mask, k < K-1
    "latent_loss": [1 / 1, 0.0],  # s0: a_0 → o_1 only; s1: none (its count clamped to 1)
    "reward_loss": [(1 + 2) / 2, 1 / 1],
    "value_loss": [(1 + 2) / 2, 1 / 1],
    "policy_loss": [0.5 * (1 + 2) / 2, 0.5 * 1 / 1],
    "entropy": [(1 + 2) / 2, 1 / 1],
}
# continuous actions: the sums over each sample's steps, divided by the batch's count of the mask
# (3 steps, 1 next-latent step), times B = 2 so that the batch mean is the reference's ratio
REFERENCE_CONTINUOUS = {
    "latent_loss": [1 * 2 / 1, 0.0],
    "reward_loss": [(1 + 2) * 2 / 3, 1 * 2 / 3],
    "value_loss": [(1 + 2) * 2 / 3, 1 * 2 / 3],
    "policy_loss": [0.5 * (1 + 2) * 2 / 3, 0.5 * 1 * 2 / 3],
    "entropy": [(1 + 2) * 2 / 3, 1 * 2 / 3],
}
IN_LN2 = {"policy_loss", "entropy", "reward_loss", "value_loss"}
WEIGHTED = {"latent_loss", "reward_loss", "value_loss", "policy_loss"}


def _even_over(m: int) -> torch.Tensor:
    """Logits [ATOMS] with all the mass spread evenly over the first m atoms (a finite log 0,
    so that a zero target times it stays 0)."""
    logits = torch.full((ATOMS,), -1e4)
    logits[:m] = 0.0
    return logits


class HandWorldModel:
    """The UniZero network's training interface with outputs set by hand (module docstring)."""

    value_support = reward_support = DiscreteSupport(0, ATOMS)

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        return obs  # [N, 1]: o_j is its own latent

    def sequence(self, tokens: torch.Tensor, actions: torch.Tensor) -> SequenceOutput:
        b, k, _ = tokens.shape
        logits = torch.stack([_even_over(m) for m in EVEN_OVER]).expand(b, k, ATOMS)
        return SequenceOutput(
            value_logits=logits,
            policy_logits=logits,
            reward_logits=logits,
            next_latent=torch.zeros(b, k, 1),
        )


def _inputs() -> UnrollInputs:
    policy = torch.zeros(2, K + 1, ATOMS)
    policy[..., 0] = 1.0
    masks = {name: torch.tensor(rows, dtype=torch.float32) for name, rows in MASKS.items()}
    return UnrollInputs(
        root_obs=torch.zeros(2, 1),
        actions=torch.zeros(2, K, dtype=torch.int64),
        value_target=torch.zeros(2, K + 1),
        reward_target=torch.zeros(2, K),
        policy_target=policy,
        obs_seq=torch.arange(K + 1, dtype=torch.float32).expand(2, K + 1)[..., None],
        **masks,
    )


def _config(loss_masks: str, continuous: bool, weighted: str):
    """A config whose world-model loss weights are 1 for the term `weighted`, 0 for the rest."""
    weights = {f"{name.removesuffix('_loss')}_loss_weight": 0.0 for name in WEIGHTED}
    weights[f"{weighted.removesuffix('_loss')}_loss_weight"] = 1.0
    wm = WorldModelConfig(context_steps=K, label_smoothing_eps=0.0, **weights)
    common = dict(num_unroll_steps=K, policy_entropy_weight=0.5, loss_masks=loss_masks)
    if continuous:
        model = SampledUniZeroModelConfig(continuous_action_space=True, world_model=wm)
        return SampledUniZeroConfig(model=model, **common)
    return UniZeroConfig(model=UniZeroModelConfig(world_model=wm), **common)


CASES = [
    pytest.param("per_term", False, PER_TERM, id="per_term"),
    pytest.param("reference", False, REFERENCE, id="reference"),
    pytest.param("per_term", True, PER_TERM, id="per_term-continuous"),
    pytest.param("reference", True, REFERENCE_CONTINUOUS, id="reference-continuous"),
]


@pytest.mark.parametrize("term", sorted(WEIGHTED))
@pytest.mark.parametrize(("loss_masks", "continuous", "table"), CASES)
def test_each_terms_per_sample_loss_by_hand(loss_masks, continuous, table, term):
    cfg = _config(loss_masks, continuous, weighted=term)
    net = HandWorldModel()
    loss = unizero_loss(net, net, _inputs(), cfg, train_iter=0)
    unit = LN2 if term in IN_LN2 else 1.0
    want = torch.tensor(table[term]) * unit
    torch.testing.assert_close(loss.per_sample, want)
    torch.testing.assert_close(loss.terms[term], want.mean())
    entropy = torch.tensor(table["entropy"]).mean() * LN2
    torch.testing.assert_close(loss.terms["entropy"], entropy)


def _constant_value_model(value_atom: int) -> HandWorldModel:
    """The hand model with every value head on one atom (its scalar h⁻¹(atom))."""
    net = HandWorldModel()
    sequence = net.sequence

    def one_atom(tokens, actions):
        out = sequence(tokens, actions)
        value = torch.full_like(out.value_logits, -1e4)
        value[..., value_atom] = 0.0
        return SequenceOutput(value, out.policy_logits, out.reward_logits, out.next_latent)

    net.sequence = one_atom
    return net


@pytest.mark.parametrize(
    ("loss_masks", "want"),
    [
        # |v̂ − z_k| = |0 − z_k| with z = (1, 2, 4): s0 over the steps whose action exists
        # (0, 1, 2) or its own steps (0, 1); s1 over step 0 either way
        ("per_term", [(1 + 2 + 4) / 3, 1.0]),
        ("reference", [(1 + 2) / 2, 1.0]),
    ],
)
def test_unroll_mean_priorities_follow_the_options_mask(loss_masks, want):
    cfg = _config(loss_masks, continuous=False, weighted="value_loss")
    inp = _inputs()
    inp.value_target.copy_(torch.tensor([1.0, 2.0, 4.0, 9.0]))
    loss = unizero_loss(_constant_value_model(0), HandWorldModel(), inp, cfg, train_iter=0)
    torch.testing.assert_close(loss.root_value, torch.zeros(2))
    torch.testing.assert_close(loss.priority_td, torch.tensor(want))


def test_reference_masks_need_the_own_segment_mask():
    cfg = _config("reference", continuous=False, weighted="value_loss")
    inp = _inputs()
    bare = UnrollInputs(**{**vars(inp), "own_segment_mask": None})
    with pytest.raises(ValueError, match="own_segment_mask"):
        unizero_loss(HandWorldModel(), HandWorldModel(), bare, cfg, train_iter=0)


@pytest.mark.parametrize("policy_type", ["unizero", "sampled_unizero"])
def test_the_own_segment_mask_leaves_out_the_successors_padding(policy_type):
    """Through the buffer: a segment of 3 own steps padded with 2 of its successor's; K = 2.
    The action at c exists for c < 5, the step is the segment's own for c < 3."""
    extra = {"sampled": {"num_of_sampled_actions": 2}} if policy_type == "sampled_unizero" else {}
    cfg = tiny_policy(type=policy_type, **extra)
    batch, row_of = all_roots(cfg, make_segment(3, pad=2))
    zeros = torch.zeros
    targets = Targets(zeros(3, 3), zeros(3, 2), zeros(3, 3, 2), writeback=None)
    inputs = algorithm(policy_type).family.unroll_inputs(batch, targets, 1, cfg)
    own = inputs.own_segment_mask.numpy()[row_of]
    np.testing.assert_array_equal(own, [[1, 1, 1], [1, 1, 0], [1, 0, 0]])
    np.testing.assert_array_equal(inputs.reward_mask.numpy()[row_of], np.ones((3, 2)))
