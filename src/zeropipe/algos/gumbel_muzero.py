"""gumbel_muzero: MuZero's family acting through the Gumbel search (Danihelka et al. 2022).

Runs in: any. The network, loss and acting state are MuZero's (`algos/muzero.py`); the type adds
the Gumbel root's settings (`mcts/policies.gumbel_policy`, sequential halving and completed-Q
policy targets) and the three root choices on which LightZero and the paper differ
(`mcts/gumbel.py`; defaults LightZero's).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Literal

from pydantic import Field

from zeropipe.algos.muzero import MuZeroFamilyConfig
from zeropipe.algos.search_settings import search_config
from zeropipe.config import Section
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


class GumbelMuZeroConfig(MuZeroFamilyConfig):
    """`policy.type: gumbel_muzero`."""

    type: Literal["gumbel_muzero"] = Field(
        "gumbel_muzero", description="Policy type; see DESIGN §3."
    )
    gumbel: GumbelConfig = Field(default_factory=GumbelConfig, description="Gumbel search.")

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
