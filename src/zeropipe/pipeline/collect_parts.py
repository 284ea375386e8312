"""A collect that comes back in parts (`policy.async_pipeline.collect_freshness: refresh`).

Runs in: driver (event-loop thread). Otherwise a collect is one request and one part. With it, a
collector returns after a fifth of a game segment's steps of its envs with the segments done so
far; the driver sends it on with the newest snapshot and the same temperature and epsilon, until
the collect's `num_segments` segments are done. Only then is the collect whole: one push, one
train budget, one `collect` line — what one request would have given, played by fresher weights
(`Collector.collect` carries its envs and trajectories across the calls).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from zeropipe.workers.collector import CollectOutcome


@dataclass
class CollectInParts:
    """One collect in flight on one collector: its launch and the parts returned so far."""

    launch_iter: int  # train_iter when the collect was launched
    temperature: float
    epsilon: float
    num_segments: int  # segments the whole collect completes
    started: float = field(default_factory=time.monotonic)
    parts: list[CollectOutcome] = field(default_factory=list)

    @property
    def segments_left(self) -> int:
        """Segments still to complete (≤ 0: the collect is whole)."""
        return self.num_segments - sum(len(p.segments) for p in self.parts)

    def merged(self) -> CollectOutcome:
        """The parts as one collect. Its `policy_version` is the first part's: the oldest
        weights it played, which the `collect` line's policy_lag is measured against."""
        parts = self.parts
        return CollectOutcome(
            segments=[s for p in parts for s in p.segments],
            envstep_delta=sum(p.envstep_delta for p in parts),
            policy_version=parts[0].policy_version,
            episode_returns=[r for p in parts for r in p.episode_returns],
            duration_s=sum(p.duration_s for p in parts),
        )

    def line_fields(self, in_parts: bool) -> dict[str, Any]:
        """Fields of the whole collect's `collect` line beyond the outcome's (`in_parts`:
        the collect came back in parts: how many, and the newest version played)."""
        fields: dict[str, Any] = {"launch_train_iter": self.launch_iter}
        if in_parts:
            fields["collect_parts"] = len(self.parts)
            fields["last_policy_version"] = self.parts[-1].policy_version
        return fields
