"""Learning targets that need a network: n-step value bootstraps and policy reanalysis.

Runs in: driver. The buffer returns raw windows (rewards already summed and discounted, the frames
to bootstrap from, masks); this module runs the *target* network over them (the reference's
`_compute_target_reward_value` and policy targets: value targets and reanalysis use the target model
in eval mode). It never mutates the buffer: reanalysed policy targets come back as a write-back for
the caller to apply.

A bootstrap value is the target network's value of one observation alone, or, for a sequence
model (the UniZero types by default), read from one teacher-forced pass over each sample's K
bootstrap observations and the actions between them, so the value at the j-th bootstrap state
sees the j (observation, action) pairs before it in that window: the reference's UniZero targets
(`UniZeroGameBuffer._compute_target_reward_value` → `WorldModel.wm_forward_for_initial_infererence`
with the bootstrap actions).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from zeropipe.algos.graphs import FrozenGraph
from zeropipe.algos.network_search import NetworkSearch
from zeropipe.algos.observation import stack_frames, to_tensor
from zeropipe.buffer import ReanalysisBatch, ReplayBatch
from zeropipe.mcts import ActingParams, PolicyOutput, SearchConfig, SearchPolicy
from zeropipe.models import Network, logits_to_scalar

# Bootstrap observations go through the target network in slices of this many (sequences: this
# many observations in all), so a large batch never allocates one huge activation tensor.
_INFER_CHUNK = 4096


_REANALYZE = ActingParams("reanalyze")


class _Values(torch.nn.Module):
    """Observations -> (the network's scalar values,), under bfloat16 autocast with `bf16`
    (read out in float32): the bootstrap's forward pass, as one module to trace."""

    def __init__(self, network: Network, bf16: bool) -> None:
        super().__init__()
        self.network = network
        self.bf16 = bf16

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor]:
        net = self.network
        with torch.autocast(obs.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            out = net.initial_inference(obs)
        return (logits_to_scalar(out.value_logits.float(), net.value_support),)


class _SequenceValues(torch.nn.Module):
    """(Observations [M, J, *input], actions [M, J(, D)]) -> scalar values [M, J] at each
    observation of one teacher-forced pass (`UniZeroNetwork.sequence_value_logits`), under
    bfloat16 autocast with `bf16` (read out in float32)."""

    def __init__(self, network: Network, bf16: bool) -> None:
        super().__init__()
        self.network = network
        self.bf16 = bf16

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        net = self.network
        with torch.autocast(obs.device.type, dtype=torch.bfloat16, enabled=self.bf16):
            logits = net.sequence_value_logits(obs, actions)
        return logits_to_scalar(logits.float(), net.value_support)


@dataclass(frozen=True)
class PolicyWriteback:
    """Reanalysed policy targets to write back into the buffer."""

    indices: np.ndarray  # [R] int64 flat transition indices
    visits: np.ndarray  # [R, A] float32 policy targets (the search policy's, e.g. visit shares)
    make_time: np.ndarray  # [R] int64
    # sampled search: [R, Ks(, D)] the re-sampled root actions `visits` belongs to, to be
    # written together with it (`ReplayBuffer.write_policy_targets(..., sampled_actions)`)
    sampled_actions: np.ndarray | None = None


@dataclass(frozen=True)
class Targets:
    """Per-batch learning targets as tensors."""

    # [B, K+1] scalar value targets; with the sequence bootstrap column K is NaN: its window
    # holds the K bootstrap states of the steps the UniZero loss trains (o_0..o_{K-1})
    value: torch.Tensor
    reward: torch.Tensor  # [B, K] scalar reward targets
    policy: torch.Tensor  # [B, K+1, A] policy targets
    writeback: PolicyWriteback | None
    # sampled search: [B, K+1, Ks(, D)] the root sampled actions `policy` belongs to (the
    # batch's, re-sampled where reanalysed); None when the batch carries none
    sampled_actions: np.ndarray | None = None


class TargetComputer:
    """Computes value and (optionally reanalysed) policy targets with the target network.

    Args:
        target_network: the learner's target model; used in eval mode, never trained.
        frame_ndim: axes of one observation frame.
        search_cfg: search settings for reanalysis.
        policy: the algorithm's search policy; reanalysis stores its policy targets.
        reanalyze_ratio: fraction of each batch whose policy targets are re-searched.
        seed: seed of the reanalysis noise generator.
        device: device of the target network.
        inference: how the search's model step runs (`policy.actor_inference`).
        bf16: run the bootstrap values' forward pass under bfloat16 autocast
            (`policy.learner_autocast: bf16`; the values are read out in float32).
        sequence_bootstrap: read the bootstrap values from one teacher-forced pass over each
            sample's K bootstrap observations and actions (`sequence_bootstrap_values`; the
            network has `sequence_value_logits`), not from each observation alone. The
            value target of step K is then not computed (NaN).
    """

    def __init__(
        self,
        target_network: Network,
        frame_ndim: int,
        search_cfg: SearchConfig,
        policy: SearchPolicy,
        reanalyze_ratio: float,
        seed: int,
        device: str = "cpu",
        inference: str = "eager",
        bf16: bool = False,
        sequence_bootstrap: bool = False,
    ) -> None:
        self.network = target_network
        self.sequence_bootstrap = sequence_bootstrap
        self._sequence_values = _SequenceValues(target_network, bf16)
        self.frame_ndim = frame_ndim
        self.search_cfg = search_cfg
        self.reanalyze_ratio = reanalyze_ratio
        self.device = torch.device(device)
        self.rng = np.random.default_rng(seed)
        self._search = NetworkSearch(target_network, frame_ndim, policy, device, inference)
        self._values = _Values(target_network, bf16)
        self._graph = FrozenGraph(
            self._values,
            inference in ("frozen", "compiled"),
            1e-2 if bf16 else 1e-4,
            "the bootstrap values",
        )
        traceable = getattr(target_network, "TRACEABLE_STEP", False)
        self._graph.enabled = bool(traceable) and inference in ("traced", "frozen", "compiled")

    def graphs_state(self) -> dict[str, dict[str, bool]]:
        """Which of the target network's graphs (bootstrap values, reanalysis step) run
        frozen at their next use: a checkpoint keeps it, so a resumed run rounds as the run
        never stopped (algos/graphs.py)."""
        state = {"values": self._graph.state_dict()}
        if self._search.traced is not None:
            state["search"] = self._search.traced.state_dict()
        return state

    def load_graphs_state(self, state: dict[str, dict[str, bool]]) -> None:
        """Restore a `graphs_state()`, after the target network's weights."""
        self._graph.load_state_dict(state["values"])
        if self._search.traced is not None and "search" in state:
            self._search.traced.load_state_dict(state["search"])

    @torch.no_grad()
    def compute(self, batch: ReplayBatch) -> Targets:
        """Targets for one sampled batch."""
        self._graph.begin()
        value = self._value_targets(batch)
        policy, sampled = batch.policy_targets, batch.root_sampled_actions
        writeback = None
        num_reanalyze = round(batch.policy_targets.shape[0] * self.reanalyze_ratio)
        if num_reanalyze > 0:
            policy, sampled, writeback = self._reanalyze_policy(batch, num_reanalyze)
        return Targets(
            value=torch.from_numpy(value).to(self.device),
            reward=to_tensor(batch.reward_targets, self.device),
            policy=to_tensor(policy, self.device),
            writeback=writeback,
            sampled_actions=sampled,
        )

    @torch.no_grad()
    def bootstrap_values(self, frames: np.ndarray) -> np.ndarray:
        """Target-network values of stacked frames [M, S, *frame] → [M] float32."""
        self.network.eval()
        values = np.empty(frames.shape[0], dtype=np.float32)
        for start in range(0, frames.shape[0], _INFER_CHUNK):
            chunk = stack_frames(frames[start : start + _INFER_CHUNK], self.frame_ndim)
            obs = to_tensor(chunk, self.device)
            out = self._graph(obs)
            scalar = out[0] if out is not None else self._values(obs)[0]
            values[start : start + chunk.shape[0]] = scalar.cpu().numpy()
        return values

    @torch.no_grad()
    def sequence_bootstrap_values(self, frames: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Target-network values at every observation of teacher-forced windows.

        Args:
            frames: each window's stacked observations.  # [M, J, S, *frame]
            actions: the action after each observation, int64 [M, J] (continuous:
                [M, J, D] float32).

        Returns:
            float32 values; [m, j] sees the window's first j observations and actions.  # [M, J]
        """
        self.network.eval()
        m, j = frames.shape[:2]
        values = np.empty((m, j), dtype=np.float32)
        rows = max(1, _INFER_CHUNK // max(j, 1))
        for start in range(0, m, rows):
            chunk = stack_frames(frames[start : start + rows], self.frame_ndim)  # [m', J, ...]
            obs = to_tensor(chunk, self.device)
            acts = to_tensor(actions[start : start + rows], self.device)
            values[start : start + chunk.shape[0]] = self._sequence_values(obs, acts).cpu().numpy()
        return values

    def _value_targets(self, batch: ReplayBatch) -> np.ndarray:
        """n-step value targets [B, K+1] (see `ReplayBatch`), masked by `value_mask`."""
        if self.sequence_bootstrap:
            return self._sequence_value_targets(batch)
        discount = batch.bootstrap_discount  # [B, K+1]
        value = batch.value_reward_sum.astype(np.float32, copy=True)
        need = discount > 0
        if need.any():
            frames = batch.bootstrap_obs[need]  # [M, S, *frame]
            value[need] += discount[need] * self.bootstrap_values(frames)
        return value * batch.value_mask

    def _sequence_value_targets(self, batch: ReplayBatch) -> np.ndarray:
        """Value targets whose bootstrap values come from one teacher-forced window per sample:
        its K bootstrap states u_0, u_0+1, ... and the actions between them (the reference's
        UniZero default; its last action precedes no observation, so 2K − 1 tokens). Step j
        reads the window at its own state's position, so a state n repeated past the end of
        the data is read where it first appears, with the context before it. Column K is NaN:
        the window holds K states."""
        if batch.bootstrap_actions is None or batch.bootstrap_positions is None:
            raise ValueError(
                "the sequence bootstrap needs the batch's bootstrap_actions and "
                "bootstrap_positions (buffer/windows.py builds them)"
            )
        k = batch.bootstrap_actions.shape[1]
        discount = batch.bootstrap_discount[:, :k]  # [B, K]
        value = batch.value_reward_sum.astype(np.float32, copy=True)  # [B, K+1]
        need = discount > 0
        rows = np.flatnonzero(need.any(axis=1))
        if rows.size:
            window = self.sequence_bootstrap_values(
                batch.bootstrap_obs[rows, :k], batch.bootstrap_actions[rows]
            )  # [M, K]
            read = np.take_along_axis(window, batch.bootstrap_positions[rows, :k], axis=1)
            value[rows, :k] += np.where(need[rows], discount[rows] * read, 0.0)
        value *= batch.value_mask
        value[:, k] = np.nan
        return value

    def _reanalyze_policy(self, batch: ReplayBatch, num: int):
        """(policy targets, root sampled actions or None, write-back) with the first `num`
        roots' existing states re-searched."""
        policy = batch.policy_targets.copy()
        s = batch.bootstrap_obs.shape[2]
        k1 = policy.shape[1]
        # Root of unroll step k is the stack obs[k : k+S]; only states that exist get a target.
        rows, cols = np.nonzero(batch.policy_mask[:num] > 0)
        offsets = cols[:, None] + np.arange(s)[None, :]
        frames = batch.obs[rows[:, None], offsets]  # [R, S, *frame]
        out = self._search_output(frames, batch.legal_masks[rows, cols])
        visits = out.policy_target
        policy[rows, cols] = visits
        sampled = batch.root_sampled_actions
        new_sampled = None if out.sampled_actions is None else out.sampled_actions
        if sampled is not None and new_sampled is not None:
            sampled = sampled.copy()
            sampled[rows, cols] = new_sampled
        flat = batch.target_indices[rows, cols]
        keep = flat >= 0
        make_time = np.broadcast_to(batch.make_time[:, None], (batch.make_time.shape[0], k1))
        writeback = PolicyWriteback(
            indices=flat[keep],
            visits=visits[keep],
            make_time=make_time[rows, cols][keep],
            sampled_actions=None if new_sampled is None else new_sampled[keep],
        )
        return policy, sampled, writeback

    def search_policy_targets(self, frames: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """Re-search roots [R, S, *frame] with the target network → policy targets [R, A]."""
        if frames.shape[0] == 0:
            return np.zeros((0, legal.shape[1]), dtype=np.float32)
        return self._search_output(frames, legal).policy_target

    def _search_output(self, frames: np.ndarray, legal: np.ndarray) -> PolicyOutput:
        """The search policy's output for roots [R, S, *frame] (R > 0 expected; R = 0 gives
        empty targets and no sampled actions)."""
        if frames.shape[0] == 0:
            empty = np.zeros((0, legal.shape[1]), dtype=np.float32)
            return PolicyOutput(empty, empty, empty[:, 0], empty, empty)
        result = self._search.search(frames, legal, self.search_cfg, self.rng, _REANALYZE)
        return result.output

    def reanalyze(self, roots: ReanalysisBatch) -> PolicyWriteback:
        """Periodic buffer reanalysis: fresh policy targets (and sampled actions) for the roots."""
        out = self._search_output(roots.obs, roots.legal_masks)
        return PolicyWriteback(
            indices=roots.indices,
            visits=out.policy_target,
            make_time=roots.make_time,
            sampled_actions=out.sampled_actions,
        )
