"""Per-env root KV caches of the recent (observation, action) history for UniZero acting.

Runs in: collector, evaluator. Each env keeps its raw history (the last `context_steps`
observations and the actions before them) and, while the weights are unchanged, its packed
transformer window. A root step extends a valid window by [a_prev, o]; an invalid one (new weights,
`invalidate`, never built) is rebuilt from the raw history encoded with the *current* weights, so no
stale keys/values are ever read (LightZero clears its caches after every weight update instead).

Two clocks clear the caches (`KvCacheClock`). 'since_invalidation' drops only keys/values: the raw
history is kept and re-encoded exactly, so the roots see the same context as without the clear.
'episode_step' clears as LightZero does, where the root cache *is* the context: a clear leaves each
env only its newest observation, so its next root is encoded from [o_prev, a_prev, o]
(model/unizero_world_models/world_model.py:1636-1690, :1713-1740: the cache is looked up by the
previous observation; a miss starts the window at it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import torch
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence

from zeropipe.models.network import NetworkOutput
from zeropipe.models.transformer import CausalTransformer

KvCacheClock = Literal["since_invalidation", "episode_step"]


class ContextNetwork(Protocol):
    """What the caches read of the network that owns them (world_model.py's UniZeroNetwork;
    a protocol, so that this module needs nothing of the module that creates it)."""

    context_steps: int
    weights_version: int  # bumped when the weights change: older windows are stale
    transformer: CausalTransformer

    def parameters(self) -> Iterator[torch.nn.Parameter]: ...
    def encode(self, obs: Tensor) -> Tensor: ...
    def embed_actions(self, actions: Tensor) -> Tensor: ...
    def action_tensor(self, actions: Sequence[Any], device: torch.device) -> Tensor: ...
    def observation_heads(self, outputs: Tensor) -> tuple[Tensor, Tensor]: ...
    def zero_reward_logits(self, batch: int) -> Tensor: ...


@dataclass
class RootContextStats:
    """Counters of `RootContexts.root` rows, by how their window was obtained.

    Attributes:
        hits: extended a valid cached window.
        rebuilds: re-encoded the raw history (the cache was invalid or missing).
        starts: episode starts (window = [o]).
    """

    hits: int = 0
    rebuilds: int = 0
    starts: int = 0


def _is_start(action: Any) -> bool:
    """Whether a previous action marks an episode start: −1, or for a continuous action vector
    every entry −1 (the actors set the row to −1; played actions lie strictly inside (−1, 1))."""
    if isinstance(action, (list, tuple)):
        return all(a == -1 for a in action)
    return action < 0


class _EnvHistory:
    """One env's raw history and cached window."""

    def __init__(self, context_steps: int) -> None:
        self.obs: deque[Tensor] = deque(maxlen=context_steps)  # each [*input_shape]
        # the action before each obs: an int, or a list of D floats (continuous)
        self.actions: deque[Any] = deque(maxlen=context_steps)
        self.window: Tensor | None = None  # [D]
        self.version = -1
        # env steps since the episode start or the last weight change (the 'episode_step' clock)
        self.steps = 0

    def clear(self) -> None:
        self.obs.clear()
        self.actions.clear()
        self.window = None
        self.steps = 0

    def keep_newest(self) -> None:
        """Forget the context but the newest observation (its action is no token of a window
        that starts at it), and the window."""
        while len(self.obs) > 1:
            self.obs.popleft()
            self.actions.popleft()
        self.window = None


class RootContexts:
    """Per-env root KV caches of the recent (obs, action) history (collector/evaluator).

    Attributes:
        stats: hit / rebuild / start counters.
    """

    def __init__(
        self,
        network: ContextNetwork,
        num_envs: int,
        clear_interval_steps: int = 0,
        clock: KvCacheClock = "since_invalidation",
    ) -> None:
        """Create empty contexts.

        Args:
            network: the model; its `weights_version` decides which cached windows are valid.
            num_envs: env ids are 0..num_envs−1.
            clear_interval_steps: `tick` clears every env's cache by `clock` at this interval of
                env steps (LightZero `kv_cache_clear_interval`); 0 never.
            clock: 'since_invalidation': the keys/values of every env are dropped once this many
                steps passed since the last invalidation (contexts kept); 'episode_step': every
                env's context but its newest observation is dropped when one env's steps since
                its episode start (or the last weight change) reach a multiple of the interval,
                and at every weight change (`invalidate`).
        """
        self.network = network
        self.clear_interval_steps = clear_interval_steps
        self.clock = clock
        self.stats = RootContextStats()
        self._envs = [_EnvHistory(network.context_steps) for _ in range(num_envs)]
        self._steps_since_clear = 0

    @torch.no_grad()
    def root(
        self, obs: Tensor, env_ids: Sequence[int], prev_actions: Sequence[Any]
    ) -> NetworkOutput:
        """Search roots for the current observations of some envs, with their history as context.

        Args:
            obs: current observations of envs `env_ids`.  # [b, *input_shape]
            env_ids: which env each row belongs to (distinct).
            prev_actions: the action taken before each observation (an int, or a list of D
                floats for continuous actions); −1 (every entry −1) at an episode start, which
                also resets that env.

        Returns:
            value/policy at o, zero-reward logits, and the packed window as `latent` [b, D].
        """
        net = self.network
        tokens = net.encode(obs)  # [b, E]
        hits: list[int] = []
        rebuilds: list[int] = []
        starts = [_is_start(action) for action in prev_actions]
        for row, (env_id, action) in enumerate(zip(env_ids, prev_actions, strict=True)):
            env = self._envs[env_id]
            if starts[row]:
                env.clear()
                self.stats.starts += 1
            valid = env.window is not None and env.version == net.weights_version
            env.obs.append(obs[row].detach().clone())
            env.actions.append(action)
            if valid and not starts[row]:
                hits.append(row)
            else:
                rebuilds.append(row)
        self.stats.hits += len(hits)
        self.stats.rebuilds += len(rebuilds) - sum(starts[r] for r in rebuilds)
        parts = []
        if hits:
            parts.append(self._extend_cached(tokens, hits, env_ids, prev_actions))
        if rebuilds:
            parts.append(self._rebuild(tokens, rebuilds, env_ids))
        order = torch.tensor(hits + rebuilds, device=obs.device).argsort()
        outputs = torch.cat([p[0] for p in parts])[order]  # [b, E]
        windows = torch.cat([p[1] for p in parts])[order]  # [b, D]
        for row, env_id in enumerate(env_ids):
            self._envs[env_id].window = windows[row]
            self._envs[env_id].version = net.weights_version
        value_logits, policy_logits = net.observation_heads(outputs)
        return NetworkOutput(windows, value_logits, net.zero_reward_logits(len(obs)), policy_logits)

    def reset(self, env_id: int) -> None:
        """Episode end: forget that env's history and cache."""
        self._envs[env_id].clear()

    def invalidate(self) -> None:
        """The weights changed: drop every env's keys/values, and restart the `tick` clock.

        'since_invalidation': kept raw histories are re-encoded on the next `root`; no cache lives
        more than `clear_interval_steps` env steps, whether it was dropped by the clock or by new
        weights (one rule in collect and eval). 'episode_step': each env keeps only its newest
        observation and its step count restarts, as LightZero's clear after every train phase
        (policy/unizero.py:2728-2753; its segment collector counts steps afresh in each collect,
        worker/muzero_segment_collector.py:373, :530-534).
        """
        self._steps_since_clear = 0
        for env in self._envs:
            env.window = None
            if self.clock == "episode_step":
                env.keep_newest()
                env.steps = 0

    def state_dict(self) -> dict[str, Any]:
        """Each env's raw history and the clock, as plain data (the caches are rebuilt)."""
        return {
            "obs": [[o.cpu() for o in env.obs] for env in self._envs],
            "actions": [list(env.actions) for env in self._envs],
            "steps_since_clear": self._steps_since_clear,
            "episode_steps": [env.steps for env in self._envs],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a `state_dict()`; every window is rebuilt from its raw history."""
        device = next(self.network.parameters()).device
        # a state saved before the per-env counts were kept (only the 'since_invalidation'
        # clock existed, which does not read them): they start from 0
        episode_steps = state.get("episode_steps", [0] * len(self._envs))
        envs = zip(self._envs, state["obs"], state["actions"], episode_steps, strict=True)
        for env, obs, actions, steps in envs:
            env.clear()
            env.obs.extend(o.to(device) for o in obs)
            env.actions.extend(actions)
            env.steps = int(steps)
        self._steps_since_clear = int(state["steps_since_clear"])

    def tick(self, env_ids: Sequence[int]) -> None:
        """Envs `env_ids` each took one env step (one step of the batch): clear by the clock.

        'since_invalidation' counts the batch's steps and invalidates every env once
        `clear_interval_steps` passed. 'episode_step' counts each env's own steps and, when one
        reaches a multiple of the interval (an episode's last step included), leaves every env
        only its newest observation, as LightZero's `clear_caches` does (`current_steps %
        clear_interval == 0`, policy/unizero.py:2307-2325, eval :2413-2425).
        """
        for env_id in env_ids:
            self._envs[env_id].steps += 1
        if self.clear_interval_steps <= 0:
            return
        if self.clock == "episode_step":
            if any(self._envs[e].steps % self.clear_interval_steps == 0 for e in env_ids):
                for env in self._envs:
                    env.keep_newest()
            return
        self._steps_since_clear += 1
        if self._steps_since_clear >= self.clear_interval_steps:
            self.invalidate()

    def _extend_cached(
        self, tokens: Tensor, rows: list[int], env_ids: Sequence[int], prev_actions: Sequence[Any]
    ) -> tuple[Tensor, Tensor]:
        """Extend valid windows by [a_prev, o]: (outputs at o [h, E], windows [h, D])."""
        net = self.network
        windows = torch.stack([self._envs[env_ids[r]].window for r in rows])  # [h, D]
        actions = net.action_tensor([prev_actions[r] for r in rows], tokens.device)
        new = torch.stack([net.embed_actions(actions), tokens[rows]], dim=1)  # [h, 2, E]
        out, windows = net.transformer.extend(windows, new)
        return out[:, -1], windows

    def _rebuild(
        self, tokens: Tensor, rows: list[int], env_ids: Sequence[int]
    ) -> tuple[Tensor, Tensor]:
        """Windows from raw histories, one padded cache-free pass: (outputs [r, E], windows)."""
        net = self.network
        histories = [self._envs[env_ids[r]] for r in rows]
        past = [obs for env in histories for obs in list(env.obs)[:-1]]
        past_tokens = net.encode(torch.stack(past)) if past else tokens[:0]  # [P, E]
        # The first kept obs's action follows an obs that is no longer kept: it is not a token.
        actions = [a for env in histories for a in list(env.actions)[1:]]
        action_tokens = net.embed_actions(net.action_tensor(actions, tokens.device))
        sequences: list[Tensor] = []
        used = 0
        for row, env in zip(rows, histories, strict=True):
            steps = len(env.obs)
            obs_tokens = torch.cat([past_tokens[used : used + steps - 1], tokens[row : row + 1]])
            act_tokens = action_tokens[used : used + steps - 1]
            used += steps - 1
            interleaved = tokens.new_empty(2 * steps - 1, tokens.shape[1])
            interleaved[0::2], interleaved[1::2] = obs_tokens, act_tokens
            sequences.append(interleaved)
        lengths = torch.tensor([len(s) for s in sequences], device=tokens.device)  # [r]
        padded = pad_sequence(sequences, batch_first=True)  # [r, T, E]
        empty = net.transformer.empty_state(len(rows), padded)
        out, windows = net.transformer.extend(empty, padded)
        # Rows shorter than T end earlier: cut their windows; the padding slots are never read.
        windows = net.transformer.layout.with_length(windows, lengths)
        return out[torch.arange(len(rows), device=out.device), lengths - 1], windows
