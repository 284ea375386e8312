"""A run's live status, kept from its event stream: counters, rates, evals, losses, workers.

Runs in: driver (event-loop thread). `StatusBoard` listens to the `EventBus` and keeps the newest
value of each figure the run writes to metrics.jsonl (and TensorBoard); `snapshot()` is what
`run.status()` and `GET /status` return, and what `GET /metrics` exports. It never reads the
buffer or the learner (they belong to the driver), only the records and the worker handles.

Rates are windowed: env steps and learner steps per second over the last 10 and 60 seconds of
the run, up to the moment of the snapshot (a run that stopped progressing shows its rates
falling), and `time_s` is the run's clock at the snapshot, not at its last record. The run
averages of the newest collect line stay, as `envstep_per_s_run` and `learner_steps_per_s_run`.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from zeropipe.pipeline.events import EventBus
from zeropipe.pipeline.phases import PHASES

WorkerStates = Callable[[], dict[str, dict[str, Any]]]


WINDOWS_S = (10, 60)  # the rate windows


class StatusBoard:
    """The newest figures of one run, updated by each metrics record.

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

    def update(self, record: Mapping[str, Any]) -> None:
        """Fold one metrics record in."""
        f = self.figures
        kind = record["event"]
        f["time_s"] = record["time_s"]
        f["envstep"] = record["envstep"]
        f["train_iter"] = record["train_iter"]
        self._sample(record["time_s"], record["envstep"], record["train_iter"])
        for key in ("budget_queue_len", "policy_lag"):
            if record.get(key) is not None:
                f[key] = record[key]
        for key in ("envstep_per_s", "learner_steps_per_s"):
            if record.get(key) is not None:
                f[f"{key}_run"] = record[key]
        if kind in ("train", "stop"):
            self._phases(record)
        if kind == "train":
            self.losses = {k: v for k, v in record.items() if k.endswith("_loss")}
        elif kind == "collect":
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

    def _phases(self, record: Mapping[str, Any]) -> None:
        for phase in PHASES:
            if record.get(f"{phase}_s_total") is not None:
                self.phase_s[phase] = record[f"{phase}_s_total"]
        for key in ("learner_busy_fraction", "overlap_bound_s"):
            if record.get(key) is not None:
                self.figures[key] = record[key]

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
