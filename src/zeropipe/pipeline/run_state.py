"""Counters, stop rules, eval bookkeeping and checkpoints of one run (both pipelines).

Runs in: driver. A new best eval saves *the exact evaluated weights* (a snapshot taken when the
eval was launched), not whatever the learner holds when the result arrives.

Checkpoint failures: a failed best, periodic or `ckpt_latest` save during the run is logged once
per streak (a warning and a `checkpoint_error` metrics line) and retried later — the best at the
next checkpoint tick, `ckpt_latest` at its next interval — without stopping training. Only the
final save at the stop is fatal (`final_checkpoint` hands the error back to the driver, which
logs its `stop` line, cleans up and then raises it).
"""

from __future__ import annotations

import logging
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zeropipe.config import ExperimentConfig
from zeropipe.learner.budget import TrainBudget, train_budget
from zeropipe.learner.trainer import Trainer
from zeropipe.outputs.errors import CheckpointDiskFull, CheckpointError, DiskFull
from zeropipe.outputs.events import (
    CheckpointErrorEvent,
    CheckpointEvent,
    CollectEvent,
    EvalEvent,
    ResumeEvent,
    StopReason,
)
from zeropipe.outputs.run_dir import LATEST, RunDir
from zeropipe.outputs.text_log import SHOWN_QUIET
from zeropipe.pipeline.threads import ThreadChoice
from zeropipe.workers.collector import CollectOutcome
from zeropipe.workers.evaluator import EvalOutcome

log = logging.getLogger("zeropipe.driver")


@dataclass(frozen=True)
class RunSummary:
    """How a run ended."""

    stop_reason: StopReason  # ERROR: an exception ended the run; `ckpt_latest` is left as it was
    envstep: int
    train_iter: int
    best_reward: float | None
    last_reward: float | None
    wall_s: float


class RunState:
    """Counters and stop rules shared by the sync and async drivers."""

    def __init__(
        self, cfg: ExperimentConfig, run: RunDir, trainer: Trainer, threads: ThreadChoice
    ) -> None:
        self.cfg = cfg
        self.run = run
        self.trainer = trainer
        self.phases = trainer.phases  # where the run's time goes (phases.py)
        self.threads = threads  # the learner's torch threads (saved: a resumed run keeps them)
        self.envstep = 0
        self.last_eval_iter = 0
        self.best_reward: float | None = None
        self.last_reward: float | None = None
        self.stop_reason: StopReason | None = None
        self.error: str | None = None  # why the run failed (stop_reason ERROR)
        # The sync pipeline's in-process collector: its state goes into ckpt_latest, so that a
        # resumed run continues the same episodes (None: not captured, or no such collector).
        self.collector_state: Callable[[], dict[str, Any] | None] | None = None
        self.restored_collector: dict[str, Any] | None = None  # from the checkpoint resumed
        # The async pipeline's collector workers, by name: their states at a stop with no collect
        # in flight, for the final ckpt_latest; those of the checkpoint resumed, sent with each
        # collector's first collect (async_launch.py).
        self.worker_states: dict[str, dict[str, Any]] = {}
        self.restored_workers: dict[str, dict[str, Any]] = {}
        self.collects = 0
        self.start_envstep = self.start_train_iter = 0  # counters when this process started
        self.last_eval_version: int | None = None  # policy_version of the last recorded eval
        self._latest_at = (time.monotonic(), 0)  # (when, train_iter) of the last latest attempt
        self._pending_best: dict[str, Any] | None = None  # a best whose save failed, to retry
        self._failing: set[str] = set()  # checkpoint kinds in a failure streak (logged once)
        self._disk_full: DiskFull | None = None  # a checkpoint found its disk full: stop

    @property
    def train_iter(self) -> int:
        """The learner's iteration counter."""
        return self.trainer.learner.train_iter

    def absorb_collect(self, outcome: CollectOutcome, **worker_fields: Any) -> None:
        """A finished collect: count its env steps, push its segments, queue its train budget,
        and log it (rates are over this process's run, so a resumed run starts them afresh).

        Args:
            outcome: what the collect returned (in-process, or decoded from a worker's reply).
            worker_fields: more fields of the `collect` line (the async driver's worker name,
                busy fraction and launch train_iter).
        """
        self.envstep += outcome.envstep_delta
        self.collects += 1
        with self.phases.timing("driver"):
            self.trainer.buffer.push(outcome.segments)
        self.trainer.add_budget(train_budget(self.cfg.policy, outcome.segments), self.envstep)
        wall_s = self.wall_s()
        returns = outcome.episode_returns
        self.run.metrics.emit(
            CollectEvent(
                envstep=self.envstep,
                train_iter=self.train_iter,
                envstep_delta=outcome.envstep_delta,
                policy_version=outcome.policy_version,
                policy_lag=self.train_iter - outcome.policy_version,
                segments=len(outcome.segments),
                collect_duration_s=outcome.duration_s,
                collect_envstep_per_s=outcome.envstep_delta / max(outcome.duration_s, 1e-9),
                envstep_per_s=(self.envstep - self.start_envstep) / wall_s,
                learner_steps_per_s=(self.train_iter - self.start_train_iter) / wall_s,
                budget_queue_len=len(self.trainer.budgets),
                episode_return_mean=float(np.mean(returns)) if returns else None,
                **worker_fields,
            )
        )

    def wall_s(self) -> float:
        """Seconds since this process started the run (never 0)."""
        return max(time.monotonic() - self.run.metrics.start, 1e-9)

    def check_limits(self) -> None:
        """Set `stop_reason` from the env-step and train-iter limits.

        Raises:
            DiskFull: a log file or a checkpoint found no space left (the run stops on it:
                `fail`).
        """
        self.run.check_writes()
        if self._disk_full is not None:
            raise self._disk_full
        if self.stop_reason:
            return
        if self.train_iter >= self.cfg.max_train_iter:
            self.stop_reason = StopReason.MAX_TRAIN_ITER
        elif self.envstep >= self.cfg.max_env_step:
            self.stop_reason = StopReason.MAX_ENV_STEP

    def record_eval(
        self,
        result: EvalOutcome,
        model_state: dict[str, torch.Tensor],
        final: bool = False,
        snapshot_at: tuple[int, int] | None = None,
    ) -> bool:
        """Log an eval; save a new best as that exact snapshot; stop at the stop value.

        `final`: the eval of the last weights at a stop by a limit (`needs_final_eval`), outside
        the eval schedule; its line says so. `snapshot_at`: (the env steps collected, the learner
        steps queued and not yet trained) when the evaluated snapshot (version
        `result.policy_version`) was taken; None: now (sync, where nothing moves during an eval).
        The line is at the snapshot's counters (env steps, and train_iter = its version), so that
        a curve says what the evaluated weights had seen: an async eval's result arrives while
        collecting and training go on, and its arrival counters (`result_envstep`,
        `result_train_iter`) would make an async run look as if it needed more env steps to the
        same weights than a sync one. `owed_learner_steps`, on every line, is how far the learner
        trailed the collectors then: the learner steps of the collected data the evaluated
        weights had not yet trained for (sync: what is left of the budget in training, 0 at a
        budget end; async also the budgets collected ahead, up to the budget queue's cap)."""
        at_envstep, at_iter, arrival = self.envstep, self.train_iter, {}
        owed = self.trainer.owed_steps()
        if snapshot_at is not None:
            at_envstep, owed = snapshot_at
            at_iter = result.policy_version
            arrival = {"result_envstep": self.envstep, "result_train_iter": self.train_iter}
        self.last_reward = result.reward_mean
        self.last_eval_version = result.policy_version
        self.run.metrics.emit(
            EvalEvent(
                envstep=at_envstep,
                train_iter=at_iter,
                reward_mean=result.reward_mean,
                reward_std=float(np.std(result.episode_returns)),
                episode_returns=tuple(result.episode_returns),
                policy_version=result.policy_version,
                eval_duration_s=result.duration_s,
                owed_learner_steps=owed,
                **arrival,
                final=True if final else None,
            )
        )
        improved = self.best_reward is None or result.reward_mean > self.best_reward
        if improved:
            self.best_reward = result.reward_mean
            self._pending_best = {
                "model": model_state,
                "policy_version": result.policy_version,
                "reward_mean": result.reward_mean,
                "envstep": at_envstep,
            }
            self._save_best()
        if result.stop and not self.stop_reason:
            self.stop_reason = StopReason.STOP_VALUE
            self.phases.goal_eval_s = result.duration_s  # no pipeline can hide it (phases.py)
        return improved

    def _save_best(self) -> None:
        if self._pending_best is not None and self._try_save(
            "best", "ckpt_best.pth.tar", self._pending_best
        ):
            self._pending_best = None

    def save_periodic(self) -> None:
        """Periodic weights-only checkpoint every `save_ckpt_freq` train iterations.

        A failed one is logged and skipped: the next one comes `save_ckpt_freq` iterations later.
        """
        it = self.train_iter
        if it > 0 and it % self.cfg.policy.save_ckpt_freq == 0:
            payload = {"model": self.trainer.learner.network.state_dict(), "train_iter": it}
            self._try_save("periodic", f"iteration_{it}.pth.tar", payload)

    def maybe_checkpoint(self) -> None:
        """Retry a failed best save; write `ckpt_latest` when its interval is due.

        Cheap when nothing is due; both drivers call it once per loop turn.
        """
        self._save_best()
        ck = self.cfg.checkpoint
        when, at_iter = self._latest_at
        due_s = ck.latest_interval_s > 0 and time.monotonic() - when >= ck.latest_interval_s
        due_iter = (
            ck.latest_interval_train_iter > 0
            and self.train_iter - at_iter >= ck.latest_interval_train_iter
        )
        if due_s or due_iter:
            with self.phases.timing("driver"):
                payload = self.latest_payload()
            self._try_save("latest", LATEST, payload, reason="periodic")

    def final_checkpoint(self) -> CheckpointError | None:
        """Write `ckpt_latest` (and a pending best) at the stop; the error if it failed.

        The error is logged here; the driver raises it once its cleanup is done.
        """
        self._save_best()
        try:
            path = self.run.save(LATEST, self.latest_payload())
        except CheckpointError as exc:
            log.error("final checkpoint failed: %s", exc)
            self._emit_checkpoint_error("final", exc)
            return exc
        self._saved("latest", path, reason="stop")
        return None

    def _try_save(self, kind: str, name: str, payload: dict[str, Any], reason: str = "") -> bool:
        """Save ckpt/<name>; a failure is logged once per streak of `kind` and swallowed."""
        if kind == "latest":
            self._latest_at = (time.monotonic(), self.train_iter)  # a failure retries next time
        try:
            with self.phases.timing("driver"):
                path = self.run.save(name, payload)
        except CheckpointError as exc:
            full = isinstance(exc, CheckpointDiskFull)  # nothing more can be saved: stop
            if full:
                self._disk_full = DiskFull(f"{kind} checkpoint: {exc}")
                log.warning("%s checkpoint failed, the run stops: %s", kind, exc)
            elif kind not in self._failing:
                log.warning("%s checkpoint failed (training goes on; retried later): %s", kind, exc)
            if full or kind not in self._failing:
                self._failing.add(kind)
                self._emit_checkpoint_error(kind, exc)
            return False
        self._saved(kind, path, reason)
        return True

    def _saved(self, kind: str, path: Path, reason: str) -> None:
        if kind in self._failing:
            self._failing.discard(kind)
            log.info("%s checkpoint written again (%s)", kind, path.name)
        if kind == "latest":
            owed = self.trainer.owed_steps()  # trained on resume (run_end reads it)
            self.run.metrics.emit(
                CheckpointEvent(
                    envstep=self.envstep,
                    train_iter=self.train_iter,
                    name=path.name,
                    reason=reason,
                    owed_steps=owed,
                )
            )

    def _emit_checkpoint_error(self, kind: str, exc: CheckpointError) -> None:
        self.run.metrics.emit(
            CheckpointErrorEvent(
                envstep=self.envstep, train_iter=self.train_iter, kind=kind, error=str(exc)
            )
        )

    def latest_payload(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The resumable state: learner, buffer, counters, RNG states (user_lessons: resume)."""
        self.trainer.learner.check_weights()  # never save a non-finite model
        return {
            "learner": self.trainer.learner.state_dict(),
            "buffer": self.trainer.buffer.state_dict(),
            "envstep": self.envstep,
            "last_eval_iter": self.last_eval_iter,
            "last_eval_version": self.last_eval_version,
            "best_reward": self.best_reward,
            "completed_budgets": self.trainer.completed_budgets,
            # the learner steps owed for data already in the buffer (an async run's queue, a
            # budget cut by a stop): a resumed run trains them, as the run never stopped does
            "budgets": [asdict(b) for b in self.trainer.budgets],
            "time_s": self.run.metrics.elapsed_s(),
            "learner_threads": self.threads.threads,
            "collector": None if self.collector_state is None else self.collector_state(),
            "collector_workers": self.worker_states,
            "torch_rng": torch.get_rng_state(),
            "numpy_rng": np.random.get_state(),
            "python_rng": random.getstate(),
            **(extra or {}),
        }

    def restore_latest(self, loaded: tuple[Path, dict[str, Any]]) -> None:
        """Continue from a checkpoint read by `run_dir.load_latest` (before anything was written).

        Everything that decides learning — weights, optimizer moments, target network, replay
        contents, the train budgets still owed, train_iter and the schedules derived from it, RNG
        states — continues where it stopped; the sync collector's envs and unfinished episodes
        too (`restored_collector`), and so do an async run's collectors whose states its stop
        saved (`restored_workers`). Collectors without one (a stop with their collect in flight)
        start new episodes: the steps not yet emitted in a segment are lost, fewer than L+K+T
        (segment and its padding) per collector env, and so are their learner steps.

        Args:
            loaded: (the file read, its payload).
        """
        path, payload = loaded
        self.run.resume_from(path)
        self.trainer.learner.load_state_dict(payload["learner"])
        self.trainer.buffer.load_state_dict(payload["buffer"])
        self.envstep = int(payload["envstep"])
        self.last_eval_iter = int(payload["last_eval_iter"])
        self.last_eval_version = payload.get("last_eval_version")
        self.best_reward = payload["best_reward"]
        self.trainer.completed_budgets = int(payload["completed_budgets"])
        owed = payload.get("budgets", [])  # earlier checkpoints: none saved (those steps lost)
        self.trainer.budgets = deque(TrainBudget(**budget) for budget in owed)
        metrics = self.run.metrics  # the checkpoint's time (earlier runs: none saved), or later
        metrics.time_offset_s = max(float(payload.get("time_s", 0.0)), metrics.last_time_s)
        self.restored_collector = payload.get("collector")
        self.restored_workers = dict(payload.get("collector_workers") or {})
        torch.set_rng_state(payload["torch_rng"])
        if "numpy_rng" in payload:
            np.random.set_state(payload["numpy_rng"])
            random.setstate(payload["python_rng"])
        self.start_envstep, self.start_train_iter = self.envstep, self.train_iter
        self._latest_at = (time.monotonic(), self.train_iter)
        self.run.metrics.emit(
            ResumeEvent(envstep=self.envstep, train_iter=self.train_iter, checkpoint=str(path))
        )
        log.info(
            "resumed from %s at env step %d, train_iter %d",
            path,
            self.envstep,
            self.train_iter,
            extra=SHOWN_QUIET,  # a --quiet run says so too
        )

    def fail(self, exc: BaseException) -> None:
        """The run ends on an error: its stop reason is "error", and no final checkpoint will
        overwrite the last good `ckpt_latest` (a crash may leave the learner in any state).
        A full disk under the logs is no crash: the stop reason is "disk_full" and the final
        checkpoint is written if there is room for it."""
        if isinstance(exc, DiskFull):
            self.stop_reason = StopReason.DISK_FULL
            return
        self.stop_reason = StopReason.ERROR
        self.error = f"{type(exc).__name__}: {exc}"

    def summary(self, wall_s: float) -> RunSummary:
        """The run's outcome."""
        return RunSummary(
            stop_reason=self.stop_reason or StopReason.INTERRUPTED,
            envstep=self.envstep,
            train_iter=self.train_iter,
            best_reward=self.best_reward,
            last_reward=self.last_reward,
            wall_s=wall_s,
        )


def clone_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A CPU copy of a module's state dict (an immutable snapshot of one version)."""
    return {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}
