"""A run's live status, kept from its event stream: counters, rates, evals, workers, drops.

Runs in: driver (event-loop thread). `StatusBoard` listens to the `EventBus` and keeps the newest
value of each figure the run writes to metrics.jsonl (and TensorBoard); `snapshot()` is what
`run.status()` and `GET /status` return, and what `GET /metrics` exports. It never reads the
buffer or the learner (they belong to the driver), only the records and the worker handles.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from zeropipe.pipeline.events import EventBus

WorkerStates = Callable[[], dict[str, dict[str, Any]]]


class StatusBoard:
    """The newest figures of one run, updated by each metrics record."""

    def __init__(self) -> None:
        self.figures: dict[str, Any] = {
            "running": True,
            "stop_reason": None,
            "time_s": 0.0,
            "envstep": 0,
            "train_iter": 0,
            "collects": 0,
            "evals": 0,
            "publishes": 0,
            "restarts": 0,
            "checkpoints": 0,
            "envstep_per_s": 0.0,
            "learner_steps_per_s": 0.0,
            "last_eval": None,
            "best_eval": None,
            "policy_lag": None,
            "budget_queue_len": 0,
            "publish_s_total": 0.0,
            "publish_s_last": None,
        }
        self.busy_fraction: dict[str, float] = {}
        self.worker_states: WorkerStates | None = None  # set by the driver once it has workers

    def update(self, record: Mapping[str, Any]) -> None:
        """Fold one metrics record in."""
        f = self.figures
        kind = record["event"]
        f["time_s"] = record["time_s"]
        f["envstep"] = record["envstep"]
        f["train_iter"] = record["train_iter"]
        for key in ("envstep_per_s", "learner_steps_per_s", "budget_queue_len", "policy_lag"):
            if record.get(key) is not None:
                f[key] = record[key]
        if kind == "collect":
            f["collects"] += 1
            if record.get("worker") and record.get("worker_busy_fraction") is not None:
                self.busy_fraction[record["worker"]] = record["worker_busy_fraction"]
        elif kind == "eval":
            f["evals"] += 1
            f["last_eval"] = record["reward_mean"]
            if f["best_eval"] is None or record["reward_mean"] > f["best_eval"]:
                f["best_eval"] = record["reward_mean"]
        elif kind == "publish":
            f["publishes"] += 1
            f["publish_s_total"] += record["publish_s"]
            f["publish_s_last"] = record["publish_s"]
        elif kind == "restart":
            f["restarts"] += 1
        elif kind == "checkpoint":
            f["checkpoints"] += 1
        elif kind == "stop":
            f["running"] = False
            f["stop_reason"] = record["reason"]

    def snapshot(self, dropped: int = 0) -> dict[str, Any]:
        """The status as plain JSON-able data (a copy)."""
        workers = self.worker_states() if self.worker_states is not None else {}
        for name, busy in self.busy_fraction.items():
            workers.setdefault(name, {})["busy_fraction"] = busy
        return {**self.figures, "events_dropped": dropped, "workers": workers}


class RunMonitor:
    """The event bus and status board of one run, created before the run starts.

    Args:
        loop: the loop the driver runs on.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.bus = EventBus(loop)
        self.board = StatusBoard()
        self.bus.listeners.append(self.board.update)

    def status(self) -> dict[str, Any]:
        """Counters, rates, best eval, worker states and dropped events (see StatusBoard)."""
        return self.board.snapshot(self.bus.dropped)
