"""The start and stop lines a run writes to its text log (and console): what a process runs,
and where and why it stopped.

Runs in: driver.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from zeropipe.outputs.events import StopReason

if TYPE_CHECKING:
    from zeropipe.config import ExperimentConfig
    from zeropipe.pipeline.run_state import RunSummary

# why a run stopped, by its stop_reason (RunSummary); `{cfg}` is the run's config
STOP_WHY = {
    StopReason.STOP_VALUE: "an eval reached env.stop_value {cfg.env.stop_value:g}",
    StopReason.MAX_ENV_STEP: "it reached max_env_step {cfg.max_env_step}",
    StopReason.MAX_TRAIN_ITER: "it reached max_train_iter {cfg.max_train_iter}",
    StopReason.INTERRUPTED: "interrupted (Ctrl-C or SIGTERM); resume it with train --resume",
    StopReason.CANCELLED: "cancelled; resume it with train --resume",
    StopReason.DISK_FULL: "the disk is full",
    StopReason.ERROR: "it failed",
}


def start_line(cfg: ExperimentConfig, resume: bool) -> str:
    """The text log's first line of a process: what it runs."""
    pipeline = "async" if cfg.policy.async_pipeline.enabled else "sync"
    what = "resuming run" if resume else "new run"
    return (
        f"start: {what} {cfg.exp_name}: policy.type {cfg.policy.type} on {cfg.env.env_id}, "
        f"{pipeline} pipeline, seed {cfg.seed}; stops at max_env_step {cfg.max_env_step}, "
        f"max_train_iter {cfg.max_train_iter} or stop_value {cfg.env.stop_value:g} "
        f"(pid {os.getpid()})"
    )


def stop_line(cfg: ExperimentConfig, summary: RunSummary, error: str | None) -> str:
    """The text log's last line of a process: where it stopped, and why."""
    why = STOP_WHY.get(summary.stop_reason, summary.stop_reason).format(cfg=cfg)
    return (
        f"stop: {summary.stop_reason} at env step {summary.envstep}, train_iter "
        f"{summary.train_iter}, after {summary.wall_s:.0f}s: {why}"
        + (f" ({error})" if error else "")
    )
