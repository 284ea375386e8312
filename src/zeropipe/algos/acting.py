"""Acting with a MuZero-family network: one batched search per env step, then an action.

Runs in: collector, evaluator, driver (reanalysis). The network runs in eval mode under no_grad;
the batched search calls it once per simulation for the whole batch of roots.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from zeropipe.algos.observation import stack_frames, to_tensor
from zeropipe.config import PolicyConfig
from zeropipe.mcts import SearchConfig, SearchOutput, SearchRoots, StepOutput, run_search
from zeropipe.models import MuZeroNetwork, NetworkOutput, logits_to_scalar


@dataclass(frozen=True)
class SearchResult:
    """Search statistics for a batch of roots."""

    visit_dist: np.ndarray  # [B, A] float32 normalised root visit counts
    root_value: np.ndarray  # [B] float32 search value
    predicted_value: np.ndarray  # [B] float32 network value of the root
    visit_counts: np.ndarray  # [B, A] int32


class NetworkSearch:
    """Runs the batched search over a MuZero network.

    Args:
        network: the model; switched to eval mode for every search.
        frame_ndim: axes of one observation frame (1 for vectors, 3 for images).
        device: where the network lives.
    """

    def __init__(self, network: MuZeroNetwork, frame_ndim: int, device: str = "cpu") -> None:
        self.network = network
        self.frame_ndim = frame_ndim
        self.device = torch.device(device)

    @torch.no_grad()
    def search(
        self,
        frames: np.ndarray,
        action_mask: np.ndarray,
        cfg: SearchConfig,
        rng: np.random.Generator,
        add_noise: bool,
    ) -> SearchResult:
        """Search from a batch of observations.

        Args:
            frames: [B, S, *frame] stacked observations.
            action_mask: [B, A] bool legal actions.
            cfg: search settings (simulations, discount, PUCT constants, noise).
            rng: generator for the root noise.
            add_noise: mix Dirichlet noise into the root priors (collect and reanalysis).

        Returns:
            SearchResult for the batch.
        """
        self.network.eval()
        out = self.network.initial_inference(self.inputs(frames))
        return self.search_from(out, action_mask, cfg, rng, add_noise)

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
        add_noise: bool,
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
        result: SearchOutput = run_search(roots, self._recurrent, cfg, rng, add_noise)
        counts = result.visit_counts
        totals = np.maximum(counts.sum(axis=1, keepdims=True), 1)
        return SearchResult(
            visit_dist=(counts / totals).astype(np.float32),
            root_value=result.root_value.astype(np.float32),
            predicted_value=value,
            visit_counts=counts,
        )

    def _recurrent(self, latent: torch.Tensor, actions: np.ndarray) -> StepOutput:
        action = torch.from_numpy(np.ascontiguousarray(actions, dtype=np.int64)).to(self.device)
        out = self.network.recurrent_inference(latent, action)
        return StepOutput(
            latent=out.latent,
            reward=_scalar(out.reward_logits, self.network.reward_support),
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
    )


class ContextFreeRoots:
    """Roots from the current observation alone (the MuZero family); the cache API is a no-op.

    A network with per-env context (UniZero) provides `new_root_contexts(num_envs)` instead, with
    the same `root / reset / invalidate` methods backed by KV caches.
    """

    def __init__(self, network) -> None:
        self.network = network

    def root(self, obs: torch.Tensor, env_ids, prev_actions) -> NetworkOutput:
        """The network's initial inference on `obs` [B, *input]."""
        return self.network.initial_inference(obs)

    def reset(self, env_id: int) -> None:
        """Nothing is kept per env."""

    def invalidate(self) -> None:
        """Nothing is cached."""


def root_source(network, num_envs: int):
    """Per-env root provider: KV-cached contexts when the network has them, else context-free."""
    make = getattr(network, "new_root_contexts", None)
    return make(num_envs) if make is not None else ContextFreeRoots(network)


@torch.no_grad()
def root_inference(
    search: NetworkSearch, roots, frames: np.ndarray, prev_actions: np.ndarray
) -> NetworkOutput:
    """Root outputs of every env [B] from its stacked frames and the action that led there."""
    search.network.eval()
    env_ids = list(range(frames.shape[0]))
    return roots.root(search.inputs(frames), env_ids, prev_actions.tolist())


def load_weights(network, roots, state_dict) -> None:
    """Load new weights; every cache computed with the old ones becomes invalid."""
    network.load_state_dict(state_dict)
    clear = getattr(network, "clear_caches", None)
    if clear is not None:
        clear()
    roots.invalidate()
