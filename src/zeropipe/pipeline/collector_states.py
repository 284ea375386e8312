"""The collectors' unfinished work a checkpoint keeps: their envs and the steps they hold for
their next segments, so that a resumed run goes on with the same episodes.

Runs in: driver. The sync pipeline's in-process collector is asked for its state when a
checkpoint is written (`capture`); the async pipeline's collector workers send theirs at a stop
with no collect in flight (`workers`, by worker name: async_loop.py). A resumed run hands each
collector the state saved for it (`restored`, `restored_workers`); a collector without one
starts new episodes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

State = dict[str, Any]


@dataclass
class CollectorStates:
    """The collectors' states for `ckpt_latest`, and those of the checkpoint resumed."""

    capture: Callable[[], State | None] | None = None  # sync: the in-process collector's
    restored: State | None = None  # sync: from the checkpoint resumed, until loaded
    workers: dict[str, State] = field(default_factory=dict)  # async: at the stop, by name
    # async: from the checkpoint resumed, sent with each collector's first collect
    restored_workers: dict[str, State] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        """The checkpoint's fields."""
        return {
            "collector": None if self.capture is None else self.capture(),
            "collector_workers": self.workers,
        }

    def restore(self, payload: dict[str, Any]) -> None:
        """Take the states a checkpoint saved."""
        self.restored = payload["collector"]
        self.restored_workers = dict(payload["collector_workers"] or {})
