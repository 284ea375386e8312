"""Acting with a network: one batched search policy call per env step gives the action.

Runs in: collector, evaluator, driver (reanalysis). The network runs in eval mode under no_grad;
the batched search calls it once per simulation for the whole batch of roots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from zeropipe.algos.algorithm import RootSource
from zeropipe.algos.observation import stack_frames, to_tensor
from zeropipe.algos.registry import algorithm
from zeropipe.config import ExperimentConfig, PolicyConfig
from zeropipe.mcts import ActingParams, PolicyOutput, SearchConfig, SearchRoots, StepOutput
from zeropipe.mcts.policies import SearchPolicy
from zeropipe.models import Network, NetworkOutput, logits_to_scalar


@dataclass(frozen=True)
class SearchResult:
    """A search policy's output for a batch of roots, with the network's own root values."""

    output: PolicyOutput  # action, policy target, root value, root Q, visits
    predicted_value: np.ndarray  # [B] float32 network value of each root


class NetworkSearch:
    """Runs a search policy over a network.

    Args:
        network: the model; switched to eval mode for every search.
        frame_ndim: axes of one observation frame (1 for vectors, 3 for images).
        policy: the algorithm's search policy (`mcts.SEARCH_POLICIES`).
        device: where the network lives.
    """

    def __init__(
        self, network: Network, frame_ndim: int, policy: SearchPolicy, device: str = "cpu"
    ) -> None:
        self.network = network
        self.frame_ndim = frame_ndim
        self.policy = policy
        self.device = torch.device(device)

    @torch.no_grad()
    def search(
        self,
        frames: np.ndarray,
        action_mask: np.ndarray,
        cfg: SearchConfig,
        rng: np.random.Generator,
        acting: ActingParams,
    ) -> SearchResult:
        """Search from a batch of observations.

        Args:
            frames: [B, S, *frame] stacked observations.
            action_mask: [B, A] bool legal actions.
            cfg: search settings.
            rng: generator of the search's noise and of the action choice.
            acting: collect, eval or reanalyze (and the collect temperature and ε).

        Returns:
            SearchResult for the batch.
        """
        self.network.eval()
        out = self.network.initial_inference(self.inputs(frames))
        return self.search_from(out, action_mask, cfg, rng, acting)

    def inputs(self, frames: np.ndarray) -> torch.Tensor:
        """Stacked frames [B, S, *frame] as the network's input tensor on its device."""
        return to_tensor(stack_frames(frames, self.frame_ndim), self.device)

    @torch.no_grad()
    def search_from(
        self,
        out: NetworkOutput,
        action_mask: np.ndarray,
        cfg: SearchConfig,
        rng: np.random.Generator,
        acting: ActingParams,
    ) -> SearchResult:
        """Search from roots the network already produced (e.g. with a UniZero context)."""
        self.network.eval()
        value = _scalar(out.value_logits, self.network.value_support)
        roots = SearchRoots(
            latent=out.latent,
            value=value,
            policy_logits=out.policy_logits.float().cpu().numpy(),
            action_mask=action_mask.astype(bool, copy=False),
        )
        output = self.policy(roots, self._recurrent, cfg, rng, acting)
        return SearchResult(output=output, predicted_value=value)

    def _recurrent(
        self, latent: torch.Tensor, actions: np.ndarray, from_chance: np.ndarray | None = None
    ) -> StepOutput:
        """The search's model step; with `from_chance` ([B] bool, the chance rule) the network's
        two-kind `search_step` (afterstates from states, states from afterstates)."""
        dtype = np.float32 if np.issubdtype(actions.dtype, np.floating) else np.int64
        action = torch.from_numpy(np.ascontiguousarray(actions, dtype=dtype)).to(self.device)
        if from_chance is None:
            out = self.network.recurrent_inference(latent, action)
        else:
            kinds = torch.from_numpy(np.ascontiguousarray(from_chance, dtype=np.bool_))
            out = self.network.search_step(latent, action, kinds.to(self.device))
        reward = self.network.transition_reward(latent, out)
        return StepOutput(
            latent=out.latent,
            reward=reward.float().cpu().numpy().astype(np.float32),
            value=_scalar(out.value_logits, self.network.value_support),
            policy_logits=out.policy_logits.float().cpu().numpy(),
        )


def _scalar(logits: torch.Tensor, support) -> np.ndarray:
    return logits_to_scalar(logits.float(), support).cpu().numpy().astype(np.float32)


def visit_temperature(
    fixed_value: float, manual_decay: bool, threshold_steps: int, train_iter: int
) -> float:
    """Visit-count temperature for collection (MuZero app. D; reference defaults).

    Manual decay: 1.0 before half the threshold, 0.5 before three quarters, 0.25 after.
    """
    if not manual_decay:
        return fixed_value
    if train_iter < 0.5 * threshold_steps:
        return 1.0
    if train_iter < 0.75 * threshold_steps:
        return 0.5
    return 0.25


def epsilon_at(
    enabled: bool, kind: str, start: float, end: float, decay: int, envstep: int
) -> float:
    """Epsilon-greedy schedule over collected env steps (0 when disabled)."""
    if not enabled:
        return 0.0
    if kind == "linear":
        return max(end, start - (start - end) * envstep / decay)
    return end + (start - end) * float(np.exp(-envstep / decay))


def search_config(cfg: PolicyConfig, num_simulations: int) -> SearchConfig:
    """Search settings from the policy config."""
    return SearchConfig(
        num_simulations=num_simulations,
        discount=cfg.discount_factor,
        pb_c_base=cfg.pb_c_base,
        pb_c_init=cfg.pb_c_init,
        value_delta_max=cfg.value_delta_max,
        root_dirichlet_alpha=cfg.root_dirichlet_alpha,
        root_noise_weight=cfg.root_noise_weight,
        max_num_considered_actions=cfg.gumbel.max_num_considered_actions,
        gumbel_scale=cfg.gumbel.gumbel_scale,
        maxvisit_init=cfg.gumbel.maxvisit_init,
        value_scale=cfg.gumbel.value_scale,
        num_sampled_actions=cfg.sampled.num_of_sampled_actions,
        sampled_prior=cfg.sampled.prior,
        continuous_actions=cfg.model.continuous_action_space,
        chance_space_size=cfg.stochastic.chance_space_size,
        root_visit_value=cfg.root_visit_value,
    )


def actor_search(
    cfg: ExperimentConfig, network: Network, frame_ndim: int, num_envs: int, device: str
) -> tuple[NetworkSearch, RootSource]:
    """The policy type's search over `network` (moved to `device`) and its per-env root state."""
    algo = algorithm(cfg.policy.type)
    search = NetworkSearch(network.to(device), frame_ndim, algo.search_policy, device)
    return search, algo.family.root_source(search.network, num_envs, cfg.policy)


@torch.no_grad()
def root_inference(
    search: NetworkSearch, roots: RootSource, frames: np.ndarray, prev_actions: np.ndarray
) -> NetworkOutput:
    """Root outputs of every env [B] from its stacked frames and the action that led there."""
    search.network.eval()
    env_ids = list(range(frames.shape[0]))
    return roots.root(search.inputs(frames), env_ids, prev_actions.tolist())


def load_weights(network: Network, roots: RootSource, state_dict) -> None:
    """Load new weights; every cache computed with the old ones becomes invalid."""
    network.load_state_dict(state_dict)
    network.clear_caches()
    roots.invalidate()
