"""ReplayBuffer: FIFO segment storage with uniform or prioritized sampling of unroll windows.

Runs in: driver (single owner: every push, sample and write-back happens on the driver's thread).

Roots are the own positions [0, length) of the stored segments, never padding positions, so every
root's unroll and n-step window lies inside its own segment's stored data (padding included).
Flat indices number the live own transitions, oldest segment first, and shift when old segments
are evicted. Prioritized replay (Schaul et al. 2016, §3.3-3.4): P(i) = p_i^alpha / sum_j p_j^alpha
drawn by stratified sampling from a sum tree, IS weight w_i = (N P(i))^-beta / max over the batch.

Staleness uses a logical clock, not wall time: the clock ticks once per eviction and once at the
end of every push. An eviction sets `clear_time` to its own tick; a sample is stamped with the
clock at sampling time. A write-back stamped `make_time <= clear_time` was sampled before the last
eviction shifted the flat indices, and is dropped. Because each push ticks after its evictions,
samples taken after a push are always fresh.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from zeropipe.buffer.batch import ReanalysisBatch, ReplayBatch
from zeropipe.buffer.reanalysis import choose_reanalysis_roots
from zeropipe.buffer.segment import GameSegment
from zeropipe.buffer.store import SegmentStore
from zeropipe.buffer.sumtree import SumTree
from zeropipe.buffer.windows import WindowSpec, build_batch, frame_stacks

# Priorities are floored so every stored position stays reachable and IS weights stay finite
# (the reference adds the same 1e-6 to its probabilities, `GameBuffer._sample_orig_data`).
MIN_PRIORITY = 1e-6
_STATE_FORMAT = 1


class ReplayBuffer:
    """Replay of GameSegments for MuZero-family learners; never runs a network.

    Args:
        capacity: maximum own transitions kept (FIFO eviction of whole segments).
        num_unroll_steps: K.
        td_steps: T, the n of the n-step value target.
        discount: per-step discount gamma.
        use_priority: sample proportionally to priorities (else uniformly).
        alpha: priority exponent.
        beta: importance-sampling exponent.
        seed: seed of the buffer's random generator.
        n_step_horizon: 'per_step' or 'reference', the n-step horizon rule of the value
            targets (buffer/windows.py).

    Raises:
        ValueError: a non-positive capacity, K or T, a discount outside (0, 1], or an unknown
            n_step_horizon.
    """

    def __init__(
        self,
        capacity: int,
        *,
        num_unroll_steps: int,
        td_steps: int,
        discount: float,
        use_priority: bool,
        alpha: float,
        beta: float,
        seed: int,
        n_step_horizon: str = "per_step",
    ) -> None:
        if n_step_horizon not in ("per_step", "reference"):
            raise ValueError(
                "ReplayBuffer's n_step_horizon is 'per_step' or 'reference'; "
                f"got {n_step_horizon!r}"
            )
        if capacity <= 0 or num_unroll_steps <= 0 or td_steps <= 0 or not 0 < discount <= 1:
            raise ValueError(
                "ReplayBuffer needs capacity > 0, num_unroll_steps > 0, td_steps > 0 and "
                f"0 < discount <= 1; got capacity={capacity}, num_unroll_steps={num_unroll_steps}, "
                f"td_steps={td_steps}, discount={discount}"
            )
        self.capacity = int(capacity)
        self.window = WindowSpec(
            int(num_unroll_steps), int(td_steps), float(discount), n_step_horizon
        )
        self.use_priority = bool(use_priority)
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.num_episodes_completed = 0
        self._store = SegmentStore()
        self._tree = SumTree(self.capacity)  # masses p^alpha; slot = absolute id % tree capacity
        self._priorities = np.zeros(self._tree.capacity, dtype=np.float64)  # raw p by slot
        self._rng = np.random.default_rng(seed)
        self._clock = 0
        self._clear_time = 0

    # ---------------------------------------------------------------- sizes
    @property
    def num_transitions(self) -> int:
        """Live own transitions (sum of the stored segments' `length`)."""
        return self._store.num_transitions

    @property
    def num_segments(self) -> int:
        """Live segments."""
        return self._store.num_segments

    def nbytes(self) -> int:
        """Bytes of the live stored data: frames, steps, segment table and priority arrays."""
        return self._store.nbytes() + self._priority_nbytes()

    def allocated_nbytes(self) -> int:
        """Bytes allocated for storage.

        At least nbytes(): the rings are sized for `capacity` after the first push and grow by
        1.25x on demand.
        """
        return self._store.allocated_nbytes() + self._priority_nbytes()

    # ---------------------------------------------------------------- push / evict
    def push(self, segments: Sequence[GameSegment]) -> None:
        """Store segments (validated), then evict whole oldest segments down to capacity.

        New priorities are the segment's own, else the max live priority before the push (1.0 on
        an empty buffer). Segments that would be evicted at once (a push larger than capacity)
        are never stored.

        Raises:
            ValueError: a segment breaks its invariants or does not match the stored data.
        """
        segments = list(segments)
        self._store.check(segments)
        new_priority = float(self._priorities.max(initial=0.0)) or 1.0
        self.num_episodes_completed += sum(bool(s.ends_episode) for s in segments)
        excess = self.num_transitions + sum(s.length for s in segments) - self.capacity
        if excess > 0:
            lengths = np.cumsum(self._store.table["length"])
            evict = min(int(np.searchsorted(lengths, excess)) + 1, self.num_segments)
            excess -= self._evict(evict)
        while excess > 0:  # the push alone exceeds capacity: its oldest segments go unstored
            excess -= segments.pop(0).length
        first_push = self._store.spec is None
        for segment in segments:
            self._append(segment, new_priority)
        if first_push:
            self._store.reserve(self.capacity)
        self._clock += 1

    def _append(self, segment: GameSegment, new_priority: float) -> None:
        start = self._store.next_abs
        self._store.append(segment)
        given = segment.priorities
        raw = np.full(segment.length, new_priority) if given is None else given
        self._set_priorities(np.arange(start, start + segment.length), raw)

    def _evict(self, num_segments: int) -> int:
        base = self._store.base
        dropped = self._store.evict_oldest(num_segments)
        slots = np.arange(base, base + dropped) % self._tree.capacity
        self._priorities[slots] = 0.0
        self._tree.update(slots, np.zeros(slots.size))
        self._clock += 1
        self._clear_time = self._clock
        return dropped

    # ---------------------------------------------------------------- sampling
    def sample(self, batch_size: int) -> ReplayBatch:
        """Sample `batch_size` roots and build their unroll windows and network-free targets.

        Uniform sampling draws without replacement when batch_size <= num_transitions; PER draws
        one root per stratum of the priority mass (with replacement).

        Raises:
            ValueError: the buffer is empty or batch_size <= 0.
        """
        n = self.num_transitions
        if n == 0 or batch_size <= 0:
            raise ValueError(f"cannot sample {batch_size} roots from {n} stored transitions")
        if self.use_priority:
            flat, weights = self._sample_prioritized(batch_size)
        else:
            replace = batch_size > n
            flat = self._rng.choice(n, size=batch_size, replace=replace).astype(np.int64)
            weights = np.ones(batch_size, dtype=np.float32)
        return build_batch(
            self._store,
            self._store.locate(flat),
            self.window,
            self._rng,
            weights=weights,
            indices=flat,
            make_time=np.full(batch_size, self._clock, dtype=np.int64),
        )

    def _sample_prioritized(self, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        total = self._tree.total
        prefix = (np.arange(batch_size) + self._rng.random(batch_size)) * (total / batch_size)
        slots = self._tree.find(np.minimum(prefix, np.nextafter(total, 0.0)))
        flat = (slots - self._store.base) % self._tree.capacity
        probs = self._tree.leaves(slots) / total
        weights = (self.num_transitions * probs) ** -self.beta
        return flat.astype(np.int64), (weights / weights.max()).astype(np.float32)

    # ---------------------------------------------------------------- write-back
    def update_priorities(
        self, indices: np.ndarray, priorities: np.ndarray, make_time: np.ndarray
    ) -> None:
        """Write new priorities for sampled roots; stale or out-of-range entries are dropped.

        Args:
            indices: [B] flat transition indices (ReplayBatch.indices).
            priorities: [B] new non-negative priorities (floored at MIN_PRIORITY).
            make_time: [B] (or broadcastable) ReplayBatch.make_time of the same samples.

        Raises:
            ValueError: a priority is negative or not finite.
        """
        priorities = np.asarray(priorities, dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(priorities) & (priorities >= 0)):
            raise ValueError("update_priorities: priorities must be finite and >= 0")
        keep = self._fresh(indices, make_time)
        absolute = np.asarray(indices, dtype=np.int64).reshape(-1)[keep] + self._store.base
        self._set_priorities(absolute, priorities[keep])

    def write_policy_targets(
        self,
        indices: np.ndarray,
        visits: np.ndarray,
        make_time: np.ndarray,
        sampled_actions: np.ndarray | None = None,
    ) -> None:
        """Reanalysis write-back of visit distributions into the stored child visits.

        Args:
            indices: [...] flat transition indices (e.g. ReplayBatch.target_indices [B, K+1] or
                ReanalysisBatch.indices [R]); -1 entries are skipped.
            visits: [..., A] normalised visit distributions, one per index.
            make_time: make_time of the sample, broadcastable to `indices` (e.g. [B, 1]).
            sampled_actions: [..., Ks(, D)] the root sampled actions the new targets belong to
                (a sampled search re-samples them); written together with the targets.
        """
        keep = self._fresh(indices, make_time)
        flat = np.asarray(indices, dtype=np.int64).reshape(-1)[keep]
        rows, pos = self._store.locate(flat)
        steps = self._store.table["step_offset"][rows] + pos
        visits = np.asarray(visits, dtype=np.float32)
        visits = visits.reshape(-1, visits.shape[-1])[keep]
        self._store.steps.put("child_visits", steps, visits)
        if sampled_actions is not None:
            shape = self._store.steps.row_specs["root_sampled_actions"][0]
            sampled = np.asarray(sampled_actions).reshape(-1, *shape)[keep]
            self._store.steps.put("root_sampled_actions", steps, sampled)

    def _fresh(self, indices: np.ndarray, make_time: np.ndarray) -> np.ndarray:
        """Positions [M] of the write-back entries to apply: live, fresh, last of duplicates."""
        indices = np.asarray(indices, dtype=np.int64)
        make_time = np.broadcast_to(np.asarray(make_time, dtype=np.int64), indices.shape)
        flat, stamp = indices.reshape(-1), make_time.reshape(-1)
        valid = (flat >= 0) & (flat < self.num_transitions) & (stamp > self._clear_time)
        positions = np.nonzero(valid)[0][::-1]  # newest first, so unique keeps the last write
        _, first = np.unique(flat[positions], return_index=True)
        return np.sort(positions[first])

    def _set_priorities(self, absolute: np.ndarray, raw: np.ndarray) -> None:
        slots = absolute % self._tree.capacity
        raw = np.maximum(np.asarray(raw, dtype=np.float64), MIN_PRIORITY)
        self._priorities[slots] = raw
        self._tree.update(slots, raw**self.alpha)

    # ---------------------------------------------------------------- reanalysis
    def sample_reanalysis(self, num_sequences: int, partition: float) -> ReanalysisBatch:
        """Roots for a periodic reanalysis pass over the oldest data (see reanalysis.py).

        Args:
            num_sequences: roots wanted (R); fewer if the candidates hold fewer positions.
            partition: fraction of the oldest segments that are candidates, in (0, 0.75].

        Returns:
            Stacks, legal masks, flat indices and make_time of the roots; the chosen segments'
            reanalyze counters are incremented.
        """
        table = self._store.table
        chosen, rows, pos = choose_reanalysis_roots(
            table["length"],
            table["reanalyze_count"],
            num_sequences,
            partition,
            self.window.num_unroll_steps,
            self._rng,
        )
        table["reanalyze_count"][chosen] += 1
        seg = self._store.rows_of(rows)
        return ReanalysisBatch(
            obs=frame_stacks(self._store, seg, pos),
            legal_masks=self._store.steps.take("action_masks", seg.step_offset + pos),
            indices=(seg.flat_start + pos).astype(np.int64),
            make_time=np.full(rows.size, self._clock, dtype=np.int64),
        )

    def reanalyze_counts(self) -> np.ndarray:
        """[G] times each live segment (oldest first) was chosen for reanalysis."""
        return self._store.table["reanalyze_count"].copy()

    # ---------------------------------------------------------------- checkpoint
    def state_dict(self) -> dict:
        """Full contents as picklable plain data and numpy arrays (for resumable checkpoints)."""
        base, n = self._store.base, self.num_transitions
        return {
            "format": _STATE_FORMAT,
            "store": self._store.state_dict(),
            "priorities": self._priorities[np.arange(base, base + n) % self._tree.capacity].copy(),
            "clock": self._clock,
            "clear_time": self._clear_time,
            "num_episodes_completed": self.num_episodes_completed,
            "rng": self._rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict) -> None:
        """Replace the contents with a `state_dict()`; evicts down to this buffer's capacity.

        Raises:
            ValueError: the state has an unknown format.
        """
        if state.get("format") != _STATE_FORMAT:
            raise ValueError(f"unknown ReplayBuffer state format {state.get('format')!r}")
        self._store.load_state_dict(state["store"])
        self._clock, self._clear_time = int(state["clock"]), int(state["clear_time"])
        self.num_episodes_completed = int(state["num_episodes_completed"])
        self._rng.bit_generator.state = state["rng"]
        raw = np.asarray(state["priorities"], dtype=np.float64)
        excess = self.num_transitions - self.capacity
        if excess > 0:
            lengths = np.cumsum(self._store.table["length"])
            evicted = self._store.evict_oldest(int(np.searchsorted(lengths, excess)) + 1)
            raw = raw[evicted:]
            self._clock += 1
            self._clear_time = self._clock
        self._priorities[:] = 0.0
        self._priorities[(self._store.base + np.arange(raw.size)) % self._tree.capacity] = raw
        self._tree.rebuild(np.where(self._priorities > 0, self._priorities**self.alpha, 0.0))

    def _priority_nbytes(self) -> int:
        return self._priorities.nbytes + self._tree.capacity * 2 * 8
