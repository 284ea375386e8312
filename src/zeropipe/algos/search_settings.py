"""The settings every search reads, from a policy section (each type adds its search's own).

Runs in: any.
"""

from __future__ import annotations

from typing import Any

from zeropipe.config import PolicyConfig
from zeropipe.mcts import SearchConfig


def search_config(cfg: PolicyConfig, num_simulations: int, **options: Any) -> SearchConfig:
    """PUCT's settings from `cfg` plus a search policy's own `options` (SearchConfig fields).

    Args:
        cfg: the policy section.
        num_simulations: simulations per search (collect, eval and reanalysis differ).
        **options: the search policy's own fields (e.g. Gumbel's `max_num_considered_actions`).
    """
    return SearchConfig(
        num_simulations=num_simulations,
        discount=cfg.discount_factor,
        pb_c_base=cfg.pb_c_base,
        pb_c_init=cfg.pb_c_init,
        value_delta_max=cfg.value_delta_max,
        root_dirichlet_alpha=cfg.root_dirichlet_alpha,
        root_noise_weight=cfg.root_noise_weight,
        root_visit_value=cfg.root_visit_value,
        tie_break=cfg.tie_break,
        eval_tie_break=cfg.eval_tie_break,
        **options,
    )
