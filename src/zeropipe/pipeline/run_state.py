"""One run's state, shared by the sync and async drivers: its counters and stop rules, with one
object per other concern — its eval records (eval_records.py), its checkpoints
(checkpointer.py) and its collectors' unfinished work (collector_states.py) — and what makes a
resumable checkpoint of them all (`latest_payload`, `restore_latest`).

Runs in: driver.
"""

from __future__ import annotations

import logging
import random
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zeropipe.config import ExperimentConfig
from zeropipe.config.versions import CONFIG_VERSION
from zeropipe.learner.budget import TrainBudget, train_budget
from zeropipe.learner.trainer import Trainer
from zeropipe.outputs.errors import CheckpointError, DiskFull
from zeropipe.outputs.events import CollectEvent, EvalEvent, ResumeEvent, StopReason
from zeropipe.outputs.run_dir import RunDir
from zeropipe.outputs.text_log import SHOWN_QUIET
from zeropipe.pipeline.checkpointer import Checkpointer
from zeropipe.pipeline.collector_states import CollectorStates
from zeropipe.pipeline.eval_records import EvalRecords
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
        self.collects = 0
        self.start_envstep = self.start_train_iter = 0  # counters when this process started
        self.stop_reason: StopReason | None = None
        self.error: str | None = None  # why the run failed (stop_reason ERROR)
        self.evals = EvalRecords()
        self.collectors = CollectorStates()
        self.checkpoints = Checkpointer(cfg, run, trainer, lambda: (self.envstep, self.train_iter))

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
        if self.checkpoints.disk_full is not None:
            raise self.checkpoints.disk_full
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
        improved = self.evals.note(result.reward_mean, result.policy_version)
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
        if improved:  # the exact evaluated weights, not the learner's now
            self.checkpoints.best(
                {
                    "model": model_state,
                    "policy_version": result.policy_version,
                    "reward_mean": result.reward_mean,
                    "envstep": at_envstep,
                }
            )
        if result.stop and not self.stop_reason:
            self.stop_reason = StopReason.STOP_VALUE
            self.phases.goal_eval_s = result.duration_s  # no pipeline can hide it (phases.py)
        return improved

    def save_periodic(self) -> None:
        """Periodic weights-only checkpoint when due (Checkpointer.periodic)."""
        self.checkpoints.periodic()

    def maybe_checkpoint(self) -> None:
        """Retry a failed best save; `ckpt_latest` when its interval is due (once per loop turn)."""
        self.checkpoints.tick(self.latest_payload)

    def final_checkpoint(self) -> CheckpointError | None:
        """Write `ckpt_latest` (and a pending best) at the stop; the error if it failed."""
        return self.checkpoints.final(self.latest_payload)

    def latest_payload(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """The resumable state: learner, buffer, counters, RNG states (user_lessons: resume)."""
        self.trainer.learner.check_weights()  # never save a non-finite model
        return {
            "config_version": CONFIG_VERSION,  # the format of this payload and its config
            "learner": self.trainer.learner.state_dict(),
            "buffer": self.trainer.buffer.state_dict(),
            "envstep": self.envstep,
            **self.evals.payload(),
            "completed_budgets": self.trainer.completed_budgets,
            # the learner steps owed for data already in the buffer (an async run's queue, a
            # budget cut by a stop): a resumed run trains them, as the run never stopped does
            "budgets": [asdict(b) for b in self.trainer.budgets],
            "time_s": self.run.metrics.elapsed_s(),
            "learner_threads": self.threads.threads,
            **self.collectors.payload(),
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
        too, and so do an async run's collectors whose states its stop saved
        (`CollectorStates`). Collectors without one (a stop with their collect in flight) start
        new episodes: the steps not yet emitted in a segment are lost, fewer than L+K+T
        (segment and its padding) per collector env, and so are their learner steps.

        Args:
            loaded: (the file read, its payload).
        """
        path, payload = loaded  # with the current keys (runner.open_run upgrades older ones)
        self.run.resume_from(path)
        self.trainer.learner.load_state_dict(payload["learner"])
        self.trainer.buffer.load_state_dict(payload["buffer"])
        self.envstep = int(payload["envstep"])
        self.evals.restore(payload)
        self.trainer.completed_budgets = int(payload["completed_budgets"])
        self.trainer.budgets = deque(TrainBudget(**budget) for budget in payload["budgets"])
        metrics = self.run.metrics  # the checkpoint's time, or the log's last if later
        metrics.time_offset_s = max(float(payload["time_s"]), metrics.last_time_s)
        self.collectors.restore(payload)
        torch.set_rng_state(payload["torch_rng"])
        if payload["numpy_rng"] is not None:
            np.random.set_state(payload["numpy_rng"])
            random.setstate(payload["python_rng"])
        self.start_envstep, self.start_train_iter = self.envstep, self.train_iter
        self.checkpoints.latest_at = (time.monotonic(), self.train_iter)
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
            best_reward=self.evals.best_reward,
            last_reward=self.evals.last_reward,
            wall_s=wall_s,
        )


def clone_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A CPU copy of a module's state dict (an immutable snapshot of one version)."""
    return {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}
