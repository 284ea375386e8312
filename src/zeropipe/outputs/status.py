"""A run's live status, kept from its event stream: counters, rates, evals, losses, workers.

Runs in: driver (event-loop thread). `StatusBoard` listens to the `EventBus` and keeps the newest
value of each figure the run writes to metrics.jsonl (and TensorBoard); `snapshot()` is what
`run.status()` and `GET /status` return, and what `GET /metrics` exports. It never reads the
buffer or the learner (they belong to the driver), only the events and the worker handles.

Rates are windowed: env steps and learner steps per second over the last 10 and 60 seconds of
the run, up to the moment of the snapshot (a run that stopped progressing shows its rates
falling), and `time_s` is the run's clock at the snapshot, not at its last record. The run
averages of the newest collect line stay, as `envstep_per_s_run` and `learner_steps_per_s_run`.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from zeropipe.outputs.event_bus import EventBus
from zeropipe.outputs.events import (
    CheckpointEvent,
    CollectEvent,
    EvalEvent,
    PublishEvent,
    RestartEvent,
    RunEvent,
    StopEvent,
    TrainEvent,
)
from zeropipe.outputs.phases import PHASES, PhaseTotals

WorkerStates = Callable[[], dict[str, dict[str, Any]]]


WINDOWS_S = (10, 60)  # the rate windows


class StatusBoard:
    """The newest figures of one run, updated by each run event.

    Args:
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._origin: float | None = None  # clock() at the run's time_s 0
        self._samples: deque[tuple[float, int, int]] = deque()  # (time_s, envstep, train_iter)
        self.losses: dict[str, float] = {}  # the newest train line's loss terms
        self.info: dict[str, str] = {}  # run labels (type, env, pipeline, version)
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
            "envstep_per_s_run": 0.0,
            "learner_steps_per_s_run": 0.0,
            "last_eval": None,
            "best_eval": None,
            "policy_lag": None,
            "budget_queue_len": 0,
            "publish_s_total": 0.0,
            "publish_s_last": None,
            "learner_busy_fraction": None,
            "overlap_bound_s": None,
        }
        self.phase_s: dict[str, float] = {}  # seconds per phase (phases.py), newest line's
        self.busy_fraction: dict[str, float] = {}
        self.worker_states: WorkerStates | None = None  # set by the driver once it has workers

    def update(self, event: RunEvent) -> None:
        """Fold one event in."""
        f = self.figures
        f["time_s"] = event.time_s
        f["envstep"] = event.envstep
        f["train_iter"] = event.train_iter
        self._sample(event.time_s, event.envstep, event.train_iter)
        match event:
            case CollectEvent():
                self._collect(event)
            case TrainEvent():
                f["budget_queue_len"] = event.budget_queue_len
                f["learner_steps_per_s_run"] = event.learner_steps_per_s
                self._phases(event.phases)
                self.losses = event.losses
            case EvalEvent():
                f["evals"] += 1
                f["last_eval"] = event.reward_mean
                if f["best_eval"] is None or event.reward_mean > f["best_eval"]:
                    f["best_eval"] = event.reward_mean
            case PublishEvent():
                f["publishes"] += 1
                f["publish_s_total"] += event.publish_s
                f["publish_s_last"] = event.publish_s
            case RestartEvent():
                f["restarts"] += 1
            case CheckpointEvent():
                f["checkpoints"] += 1
            case StopEvent():
                self._phases(event.phases)
                f["running"] = False
                f["stop_reason"] = str(event.reason)

    def _collect(self, event: CollectEvent) -> None:
        f = self.figures
        f["collects"] += 1
        f["budget_queue_len"] = event.budget_queue_len
        f["policy_lag"] = event.policy_lag
        f["envstep_per_s_run"] = event.envstep_per_s
        f["learner_steps_per_s_run"] = event.learner_steps_per_s
        if event.worker and event.worker_busy_fraction is not None:
            self.busy_fraction[event.worker] = event.worker_busy_fraction

    def _phases(self, totals: PhaseTotals | None) -> None:
        if totals is None:
            return
        for phase in PHASES:
            self.phase_s[phase] = getattr(totals, f"{phase}_s_total")
        self.figures["learner_busy_fraction"] = totals.learner_busy_fraction
        self.figures["overlap_bound_s"] = totals.overlap_bound_s

    def _sample(self, time_s: float, envstep: int, train_iter: int) -> None:
        if self._origin is None or time_s == 0.0:
            self._origin = self.clock() - time_s
        self._samples.append((time_s, envstep, train_iter))
        while len(self._samples) > 2 and self._samples[1][0] < time_s - max(WINDOWS_S):
            self._samples.popleft()

    def run_time_s(self) -> float:
        """The run's clock now (its time_s), or the newest record's before the first one."""
        if self._origin is None:
            return self.figures["time_s"]
        return self.clock() - self._origin

    def rates(self, now_s: float) -> dict[str, float]:
        """Env and learner steps per second over each window ending now."""
        out: dict[str, float] = {}
        for window in WINDOWS_S:
            start = now_s - window
            # the newest sample at or before the window's start, else the oldest one kept
            base = next((x for x in reversed(self._samples) if x[0] <= start), None)
            base = base or (self._samples[0] if self._samples else (0.0, 0, 0))
            span = max(now_s - base[0], 1e-9)
            out[f"envstep_per_s_{window}s"] = (self.figures["envstep"] - base[1]) / span
            out[f"learner_steps_per_s_{window}s"] = (self.figures["train_iter"] - base[2]) / span
        return out

    def snapshot(self, dropped: int = 0) -> dict[str, Any]:
        """The status as plain JSON-able data (a copy)."""
        workers = self.worker_states() if self.worker_states is not None else {}
        for name, busy in self.busy_fraction.items():
            workers.setdefault(name, {})["busy_fraction"] = busy
        now_s = self.run_time_s() if self.figures["running"] else self.figures["time_s"]
        return {
            **self.figures,
            "time_s": now_s,
            **self.rates(now_s),
            "losses": dict(self.losses),
            "phase_s": dict(self.phase_s),
            "info": dict(self.info),
            "events_dropped": dropped,
            "workers": workers,
        }


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
