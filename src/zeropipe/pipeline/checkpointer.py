"""A run's checkpoints: the best eval's exact weights, periodic weights, and `ckpt_latest` on its
interval and at the stop.

Runs in: driver (the heavy thread). A new best eval saves *the exact evaluated weights* (a
snapshot taken when the eval was launched), not whatever the learner holds when the result
arrives.

Failures: a failed best, periodic or `ckpt_latest` save during the run is logged once per streak
(a warning and a `checkpoint_error` metrics line) and retried later — the best at the next
checkpoint tick, `ckpt_latest` at its next interval — without stopping training. A full disk
stops the run (`disk_full`, raised by the run's limit check). Only the final save at the stop is
fatal (`final` hands the error back to the driver, which logs its `stop` line, cleans up and then
raises it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zeropipe.config import ExperimentConfig
from zeropipe.learner.trainer import Trainer
from zeropipe.outputs.errors import CheckpointDiskFull, CheckpointError, DiskFull
from zeropipe.outputs.events import CheckpointErrorEvent, CheckpointEvent
from zeropipe.outputs.run_dir import LATEST, RunDir

log = logging.getLogger("zeropipe.driver")

Payload = dict[str, Any]


class Checkpointer:
    """Writes a run's checkpoints into its run directory.

    Args:
        cfg: the run's config (`policy.save_ckpt_freq`, the `checkpoint` section).
        run: the run directory.
        trainer: the learner's weights (periodic saves) and the steps owed (the `checkpoint`
            line's `owed_steps`, trained on resume).
        counters: the run's (env steps, train_iter) now, for the lines this writes.
    """

    def __init__(
        self,
        cfg: ExperimentConfig,
        run: RunDir,
        trainer: Trainer,
        counters: Callable[[], tuple[int, int]],
    ) -> None:
        self.cfg = cfg
        self.run = run
        self.trainer = trainer
        self.phases = trainer.phases
        self.counters = counters
        self.latest_at = (time.monotonic(), 0)  # (when, train_iter) of the last latest attempt
        self.disk_full: DiskFull | None = None  # a checkpoint found its disk full: stop
        self._pending_best: Payload | None = None  # a best whose save failed, to retry
        self._failing: set[str] = set()  # checkpoint kinds in a failure streak (logged once)

    def best(self, payload: Payload) -> None:
        """Save a new best (`payload`: its weights and eval); retried at each tick until saved."""
        self._pending_best = payload
        self._save_best()

    def periodic(self) -> None:
        """Weights-only checkpoint every `save_ckpt_freq` train iterations.

        A failed one is logged and skipped: the next one comes `save_ckpt_freq` iterations later.
        """
        _, it = self.counters()
        if it > 0 and it % self.cfg.policy.save_ckpt_freq == 0:
            payload = {"model": self.trainer.learner.network.state_dict(), "train_iter": it}
            self._try_save("periodic", f"iteration_{it}.pth.tar", payload)

    def tick(self, latest_payload: Callable[[], Payload]) -> None:
        """Retry a failed best save; write `ckpt_latest` when its interval is due.

        Cheap when nothing is due; both drivers call it once per loop turn.
        """
        self._save_best()
        ck = self.cfg.checkpoint
        when, at_iter = self.latest_at
        _, train_iter = self.counters()
        due_s = ck.latest_interval_s > 0 and time.monotonic() - when >= ck.latest_interval_s
        due_iter = (
            ck.latest_interval_train_iter > 0
            and train_iter - at_iter >= ck.latest_interval_train_iter
        )
        if due_s or due_iter:
            with self.phases.timing("driver"):
                payload = latest_payload()
            self._try_save("latest", LATEST, payload, reason="periodic")

    def final(self, latest_payload: Callable[[], Payload]) -> CheckpointError | None:
        """Write `ckpt_latest` (and a pending best) at the stop; the error if it failed.

        The error is logged here; the driver raises it once its cleanup is done.
        """
        self._save_best()
        try:
            path = self.run.save(LATEST, latest_payload())
        except CheckpointError as exc:
            log.error("final checkpoint failed: %s", exc)
            self._emit_error("final", exc)
            return exc
        self._saved("latest", path, reason="stop")
        return None

    def _save_best(self) -> None:
        if self._pending_best is not None and self._try_save(
            "best", "ckpt_best.pth.tar", self._pending_best
        ):
            self._pending_best = None

    def _try_save(self, kind: str, name: str, payload: Payload, reason: str = "") -> bool:
        """Save ckpt/<name>; a failure is logged once per streak of `kind` and swallowed."""
        if kind == "latest":  # a failure retries at the next interval
            self.latest_at = (time.monotonic(), self.counters()[1])
        try:
            with self.phases.timing("driver"):
                path = self.run.save(name, payload)
        except CheckpointError as exc:
            full = isinstance(exc, CheckpointDiskFull)  # nothing more can be saved: stop
            if full:
                self.disk_full = DiskFull(f"{kind} checkpoint: {exc}")
                log.warning("%s checkpoint failed, the run stops: %s", kind, exc)
            elif kind not in self._failing:
                log.warning("%s checkpoint failed (training goes on; retried later): %s", kind, exc)
            if full or kind not in self._failing:
                self._failing.add(kind)
                self._emit_error(kind, exc)
            return False
        self._saved(kind, path, reason)
        return True

    def _saved(self, kind: str, path: Path, reason: str) -> None:
        if kind in self._failing:
            self._failing.discard(kind)
            log.info("%s checkpoint written again (%s)", kind, path.name)
        if kind == "latest":
            envstep, train_iter = self.counters()
            self.run.metrics.emit(
                CheckpointEvent(
                    envstep=envstep,
                    train_iter=train_iter,
                    name=path.name,
                    reason=reason,
                    owed_steps=self.trainer.owed_steps(),  # trained on resume (run_end reads it)
                )
            )

    def _emit_error(self, kind: str, exc: CheckpointError) -> None:
        envstep, train_iter = self.counters()
        self.run.metrics.emit(
            CheckpointErrorEvent(envstep=envstep, train_iter=train_iter, kind=kind, error=str(exc))
        )
