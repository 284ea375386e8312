"""Gumbel MuZero's three root choices on which LightZero and the paper (mctx) differ.

Runs in: any (collector, evaluator, driver reanalysis), through `policies.gumbel_policy`. B
denotes the batch of roots and A the actions. Each choice is a field of `GumbelSearchConfig`
whose default is LightZero's (`lzero/mcts/ctree/ctree_gumbel_muzero/lib/cnode.cpp`,
`lzero/policy/gumbel_muzero.py` at 9f717c8); the other value is the paper's (mctx
`mctx/_src/policies.py`, `action_selection.py` at b53073f):

- `prior_term`: what stands for the logits in g + logits + σ(q) at the root, in the interior
  rule softmax(logits + σ(q)) and in the improved-policy target. "probability" (LightZero): the
  prior probabilities themselves (cnode.cpp:379 `get_policy`, :731 with :1127
  `score_considered`, :769 `cselect_interior_child`); its mixed value weighs the visited Q by
  softmax(prior) (cnode.cpp:1013), which follows here too. "logit" (mctx policies.py:225-227,
  action_selection.py:155-157 and :197-198): the logits, i.e. the log prior up to a constant.
- `collect_root_noise`: Dirichlet noise mixed into the root prior in collect (and reanalysis):
  LightZero yes (gumbel_muzero.py:551-562, `roots.prepare` with `root_noise_weight`), mctx no.
- `collect_action`: "improved_argmax" (LightZero gumbel_muzero.py:591-592: argmax of the
  improved policy over legal actions) or "halving_winner" (mctx policies.py:211-222: among the
  most visited actions, the highest g + logits + σ(q), a sample of the improved policy when the
  halving has equalised the visits).

The "probability" prior term is applied by handing the tree the prior probabilities *as*
logits (at the root and at every expansion): the tree's prior is then softmax(p), whose log is
p minus a constant, so every rule above sees p + σ(q) exactly where mctx sees logits + σ(q),
and the mixed value's weights are LightZero's softmax(p). No tree kernel changes.

The fourth difference, which actions sequential halving considers, is not an option:
LightZero's `min(m, num_simulations)` (cnode.cpp:727) asks, on a root with fewer legal actions,
for a visit count no legal action has (tests/mcts/test_halving.py), so the mctx rule
`min(m, legal actions)` (action_selection.py:144-147) is kept (`halving.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from zeropipe.mcts.contract import RecurrentFn, SearchConfig, SearchRoots, StepOutput
from zeropipe.mcts.noise import masked_softmax, root_prior
from zeropipe.mcts.selection import LOW_LOGIT

PRIOR_TERMS = ("probability", "logit")
COLLECT_ACTIONS = ("improved_argmax", "halving_winner")


@dataclass(frozen=True)
class GumbelSearchConfig(SearchConfig):
    """`SearchConfig` with the Gumbel root's choices (module docstring); defaults LightZero's.

    Attributes:
        prior_term: "probability" (LightZero) or "logit" (mctx, the paper).
        collect_root_noise: mix Dirichlet noise into the root prior outside eval (LightZero).
        collect_action: "improved_argmax" (LightZero) or "halving_winner" (mctx).
    """

    prior_term: str = "probability"
    collect_root_noise: bool = True
    collect_action: str = "improved_argmax"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.prior_term not in PRIOR_TERMS:
            raise ValueError(
                f"GumbelSearchConfig.prior_term must be one of {PRIOR_TERMS}, "
                f"got {self.prior_term!r}"
            )
        if self.collect_action not in COLLECT_ACTIONS:
            raise ValueError(
                f"GumbelSearchConfig.collect_action must be one of {COLLECT_ACTIONS}, "
                f"got {self.collect_action!r}"
            )


def gumbel_options(cfg: SearchConfig) -> GumbelSearchConfig:
    """`cfg` as a `GumbelSearchConfig` (a plain `SearchConfig` gets the default choices)."""
    if isinstance(cfg, GumbelSearchConfig):
        return cfg
    return GumbelSearchConfig(**{f.name: getattr(cfg, f.name) for f in fields(SearchConfig)})


def prepare_gumbel_search(
    roots: SearchRoots,
    recurrent_fn: RecurrentFn,
    cfg: GumbelSearchConfig,
    rng: np.random.Generator,
    noise: bool,
) -> tuple[SearchRoots, RecurrentFn, bool]:
    """The roots, model step and `add_noise` flag that `run_search` gets for `cfg.prior_term`.

    "logit": unchanged, with the search mixing the noise into the root prior. "probability":
    the root logits become the (noised) legal prior probabilities, LOW_LOGIT on illegal
    actions, and every expansion's logits its softmax; the noise is mixed in here, so the
    search adds none.
    """
    if cfg.prior_term == "logit":
        return roots, recurrent_fn, noise
    mask = roots.action_mask.astype(np.bool_)
    prior = root_prior(
        roots.policy_logits,
        mask,
        cfg.root_noise_weight,
        cfg.root_dirichlet_alpha,
        rng if noise else None,
    )
    logits = np.where(mask, prior, LOW_LOGIT).astype(np.float32)
    return replace(roots, policy_logits=logits), _probability_step(recurrent_fn), False


def _probability_step(recurrent_fn: RecurrentFn) -> RecurrentFn:
    """`recurrent_fn` whose policy logits are replaced by their softmax (interior nodes have
    every action legal)."""

    def step(*args: object) -> StepOutput:
        out = recurrent_fn(*args)
        logits = np.asarray(out.policy_logits, dtype=np.float32)
        probs = masked_softmax(logits, np.ones(logits.shape, dtype=np.bool_))
        return replace(out, policy_logits=probs.astype(np.float32))

    return step
