"""A search policy over a network: one batched search call per env step gives the action.

Runs in: collector, evaluator, driver (reanalysis). The network runs in eval mode under no_grad;
the batched search calls it once per simulation for the whole batch of roots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from zeropipe.algos.compiled_search import CompiledLoop
from zeropipe.algos.observation import stack_frames, to_tensor
from zeropipe.algos.traced_step import TracedStep
from zeropipe.mcts import ActingParams, PolicyOutput, SearchConfig, SearchRoots, StepOutput
from zeropipe.mcts.contract import ModelStep
from zeropipe.mcts.policies import SearchPolicy
from zeropipe.models import Network, NetworkOutput, logits_to_scalar
from zeropipe.models.non_finite import NonFiniteError


class RootSource(Protocol):
    """Per-env root provider of a collector or evaluator (the family's acting state).

    A context-free family encodes the current observation alone; UniZero keeps a KV-cached
    context per env. Both reset an env at its episode start and drop everything on a weight load.
    """

    def root(self, obs: torch.Tensor, env_ids: list[int], prev_actions: list[int]):
        """Root outputs (a `NetworkOutput`) for stacked observations [B, *input] of `env_ids`."""
        ...

    def reset(self, env_id: int) -> None:
        """Env `env_id` starts a new episode."""
        ...

    def invalidate(self) -> None:
        """Everything computed with the old weights is stale."""
        ...

    def tick(self, env_ids: Sequence[int]) -> None:
        """Envs `env_ids` each took one env step (a clock for periodic cache clearing; the same
        rule in collect and eval)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """What it keeps per env, as tensors and plain data (a collector's checkpoint)."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a `state_dict()`."""
        ...


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
        inference: how the model step runs (`policy.actor_inference`, algos/traced_step.py):
            'compiled' (the whole simulation loop in numba where the network allows it,
            algos/compiled_search.py, else as 'frozen'), 'frozen' or 'traced' (one graph
            where the network allows it) or 'eager'.
    """

    def __init__(
        self,
        network: Network,
        frame_ndim: int,
        policy: SearchPolicy,
        device: str = "cpu",
        inference: str = "eager",
    ) -> None:
        self.network = network
        self.frame_ndim = frame_ndim
        self.policy = policy
        self.device = torch.device(device)
        traced = inference in ("traced", "frozen", "compiled")
        freeze = inference in ("frozen", "compiled")
        self.traced = TracedStep(network, freeze=freeze) if traced else None
        compiled = inference == "compiled" and self.device.type == "cpu"
        self.compiled = CompiledLoop(network) if compiled else None
        # the search runs the traced graph on its own arrays where it can (mcts.search)
        tensors = self.traced.tensors if self.traced is not None else None
        self.step = ModelStep(self._recurrent, tensors, self.compiled)

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
        eval_mode(self.network)
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
        eval_mode(self.network)
        mark = self.traced.begin_search() if self.traced is not None else None
        if self.compiled is not None:
            self.compiled.begin_search(mark)
        value = _scalar(out.value_logits, self.network.value_support)
        logits = out.policy_logits.float().cpu().numpy()
        if not (np.isfinite(logits).all() and np.isfinite(value).all()):
            raise NonFiniteError(
                "search: the network's outputs at the roots (policy logits, value) are not "
                "finite: its weights have blown up"
            )
        roots = SearchRoots(
            latent=out.latent,
            value=value,
            policy_logits=logits,
            action_mask=action_mask.astype(bool, copy=False),
        )
        output = self.policy(roots, self.step, cfg, rng, acting)
        return SearchResult(output=output, predicted_value=value)

    def _recurrent(
        self, latent: torch.Tensor, actions: np.ndarray, from_chance: np.ndarray | None = None
    ) -> StepOutput:
        """The search's model step; with `from_chance` ([B] bool, the chance rule) the network's
        two-kind `search_step` (afterstates from states, states from afterstates)."""
        action = action_tensor(actions, self.device)
        if from_chance is None and self.traced is not None:
            step = self.traced(latent, action)
            if step is not None:
                return step
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


def action_tensor(actions: np.ndarray, device: torch.device) -> torch.Tensor:
    """[B] (or [B, D] continuous) actions as the model step's tensor on `device` (int64, or
    float32 for continuous actions)."""
    dtype = np.float32 if actions.dtype.kind == "f" else np.int64
    action = torch.from_numpy(np.ascontiguousarray(actions, dtype=dtype))
    return action if device.type == "cpu" else action.to(device)


def eval_mode(network: Network) -> None:
    """Switch `network` to eval mode unless it is there: `Module.eval()` walks every submodule,
    which costs more than a small network's whole search step (train() and eval() set the flag
    of the module they are called on, so the top one tells)."""
    if network.training:
        network.eval()


def _scalar(logits: torch.Tensor, support) -> np.ndarray:
    return logits_to_scalar(logits.float(), support).cpu().numpy().astype(np.float32)


@torch.no_grad()
def root_inference(
    search: NetworkSearch,
    roots: RootSource,
    frames: np.ndarray,
    prev_actions: np.ndarray,
    env_ids: list[int] | None = None,
) -> NetworkOutput:
    """Root outputs [B] from stacked frames [B, S, *frame] and the action that led to each.

    Args:
        search: the search whose network and device are used.
        roots: the per-env root state.
        frames: [B, S, *frame] stacked observations, row i for env `env_ids[i]`.
        prev_actions: [B] (or [B, D]) the action each env took to get here; -1 at a start.
        env_ids: which env each row is (None: row i is env i).
    """
    eval_mode(search.network)
    ids = list(range(frames.shape[0])) if env_ids is None else env_ids
    return roots.root(search.inputs(frames), ids, prev_actions.tolist())


def load_weights(network: Network, roots: RootSource, state_dict) -> None:
    """Load new weights; every cache computed with the old ones becomes invalid."""
    network.load_state_dict(state_dict)
    network.clear_caches()
    roots.invalidate()
