"""gumbel_muzero: MuZero's family acting through the Gumbel search (Danihelka et al. 2022).

Runs in: any. The network, unroll and acting state are MuZero's (`algos/muzero.py`); the type adds
the Gumbel root's settings (`mcts/policies.gumbel_policy`, sequential halving and completed-Q
policy targets), the three root choices on which LightZero and the paper differ
(`mcts/gumbel.py`; defaults LightZero's), and the policy loss against the improved policy:
LightZero's KL(improved ‖ π) averaged over the A actions by default (`gumbel.policy_loss`).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from zeropipe.algos.losses import PolicyTerms, UnrollInputs, entropy
from zeropipe.algos.muzero import MuZeroFamily, MuZeroFamilyConfig
from zeropipe.algos.search_settings import search_config
from zeropipe.config import PolicyConfig, Section
from zeropipe.mcts import SearchConfig
from zeropipe.mcts.gumbel import GumbelSearchConfig


class GumbelConfig(Section):
    """Gumbel search (gumbel_muzero; Danihelka et al. 2022, "Policy improvement by planning with
    Gumbel")."""

    max_num_considered_actions: int = Field(
        4, ge=2, description="Root actions kept by Gumbel top-k for sequential halving (m)."
    )
    gumbel_scale: float = Field(
        1.0,
        ge=0.0,
        description="Scale of the root Gumbel noise (the paper's and mctx's 1; LightZero uses 10 "
        "but with one fixed noise vector for every search).",
    )
    maxvisit_init: float = Field(
        50.0, ge=0.0, description="c_visit of the σ transform of completed Q (paper: 50)."
    )
    value_scale: float = Field(
        0.1, gt=0.0, description="c_scale of the σ transform of completed Q (paper: 0.1)."
    )
    prior_term: Literal["probability", "logit"] = Field(
        "probability",
        description="What stands for the logits in g + logits + σ(q), the interior rule and the "
        "improved-policy target: the prior probabilities (LightZero, cnode.cpp:379) or the "
        "logits (the paper and mctx). See mcts/gumbel.py.",
    )
    collect_root_noise: bool = Field(
        True,
        description="Mix the Dirichlet root noise (root_noise_weight, root_dirichlet_alpha) into "
        "the root prior in collect and reanalysis (LightZero gumbel_muzero.py:551-562; mctx: no).",
    )
    collect_action: Literal["improved_argmax", "halving_winner"] = Field(
        "improved_argmax",
        description="Collect plays the argmax of the improved policy (LightZero "
        "gumbel_muzero.py:591-592) or the sequential-halving winner (mctx policies.py:211-222).",
    )
    policy_loss: Literal["kl_mean", "cross_entropy"] = Field(
        "kl_mean",
        description="Policy loss against the improved policy per unroll step: kl_mean, "
        "KL(improved || policy) averaged over the A actions (LightZero gumbel_muzero.py:359-361, "
        ":411-412; its gradient is the cross-entropy's divided by A), or cross_entropy, the "
        "cross-entropy summed over the actions (zeropipe before this option; A times the "
        "gradient).",
    )


class GumbelMuZeroConfig(MuZeroFamilyConfig):
    """`policy.type: gumbel_muzero`."""

    # options added later with a default that changes what a run does, and what a run's
    # config.yaml written before each existed meant (config/versions.py reads them)
    OLDER_VALUES: ClassVar[dict[str, Any]] = {
        "gumbel.prior_term": "logit",
        "gumbel.collect_root_noise": False,
        "gumbel.collect_action": "halving_winner",
        "loss_weighting": "appendix_g",
        "gumbel.policy_loss": "cross_entropy",
        **PolicyConfig.OLDER_VALUES,
    }

    type: Literal["gumbel_muzero"] = Field(
        "gumbel_muzero", description="Policy type; see docs/policies/gumbel_muzero.md."
    )
    gumbel: GumbelConfig = Field(default_factory=GumbelConfig, description="Gumbel search.")
    policy_entropy_weight: float = Field(
        0.0,
        ge=0.0,
        description="Entropy bonus weight (the reference's gumbel_muzero learner has none, "
        "policy/gumbel_muzero.py:433-436).",
    )

    def search_config(self, num_simulations: int) -> SearchConfig:
        """PUCT's common settings and the Gumbel root's (a `GumbelSearchConfig`)."""
        g = self.gumbel
        common = search_config(
            self,
            num_simulations,
            max_num_considered_actions=g.max_num_considered_actions,
            gumbel_scale=g.gumbel_scale,
            maxvisit_init=g.maxvisit_init,
            value_scale=g.value_scale,
        )
        return GumbelSearchConfig(
            **{f.name: getattr(common, f.name) for f in fields(SearchConfig)},
            prior_term=g.prior_term,
            collect_root_noise=g.collect_root_noise,
            collect_action=g.collect_action,
        )


def kl_mean_policy_terms(
    logits: torch.Tensor, inp: UnrollInputs, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """KL(target ‖ softmax(logits)) of step k averaged over the A actions, and the policy's
    entropy ([B] each): Σ_a t_a (log t_a − log π_a) / A, with 0·log 0 = 0 (LightZero's
    `KLDivLoss(reduction='none')(log π, improved).mean(dim=-1)`)."""
    target = inp.policy_target[:, k]  # [B, A]
    logp = F.log_softmax(logits, dim=-1)
    kl = (torch.xlogy(target, target) - target * logp).sum(dim=-1)  # [B]
    return kl / logits.shape[-1], entropy(logits)


class GumbelFamily(MuZeroFamily):
    """MuZero's family with `gumbel.policy_loss` as the unroll's policy term."""

    def policy_terms(self, cfg: GumbelMuZeroConfig) -> PolicyTerms | None:
        """`kl_mean_policy_terms`, or MuZero's cross-entropy (None) with `cross_entropy`."""
        return kl_mean_policy_terms if cfg.gumbel.policy_loss == "kl_mean" else None


GUMBEL = GumbelFamily()
