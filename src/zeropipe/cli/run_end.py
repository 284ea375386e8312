"""How a run ended, read from its `log/metrics.jsonl`: what the CLI says around a resume.

Runs in: driver (the CLI). Two questions, both answered by the log's `checkpoint` records (each
written once a `ckpt_latest` is on disk, with its counters):
- before `train --resume` starts anything: has the run met one of its stop rules already at its
  latest checkpoint? Resumed, it would train on past its end (a collect, or a whole eval
  interval past a met stop value) and stop again at its next check; instead the CLI says so and
  which key to raise. The evals logged before that record are the ones whose best score the
  checkpoint carries.
- after Ctrl-C or SIGTERM: did this process write its final checkpoint, so that the run can be
  resumed from where it stopped?
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from zeropipe.cli.curves import complete_lines
from zeropipe.config import ExperimentConfig

LATEST = "ckpt/ckpt_latest.pth.tar"


@dataclass(frozen=True)
class RunEnd:
    """A stop rule the run's latest checkpoint has met already."""

    rule: str  # the key to raise: "env.stop_value", "max_env_step" or "max_train_iter"
    reached: str  # what met it, e.g. "eval reward_mean 1 >= env.stop_value 0.5"
    envstep: int  # the checkpoint's counters
    train_iter: int

    def message(self, target: str) -> str:
        """One line: what the run met, that nothing is trained, and how to go on."""
        return (
            f"the run has met its stop rule already ({self.reached}; its latest checkpoint is "
            f"at env step {self.envstep}, train_iter {self.train_iter}): nothing to train. To "
            f"train on, raise it: zeropipe train {target} --resume --set {self.rule}=..."
        )


def run_end(cfg: ExperimentConfig) -> RunEnd | None:
    """The stop rule that the latest checkpoint of the run in `cfg.exp_name` has met under the
    limits of `cfg` (the run's config with the resume's --set applied), if any.

    Returns:
        None where the rules leave the run something to do, or where its log holds no
        checkpoint record or no `ckpt_latest` is left (the resume itself then says what is
        missing).

    Raises:
        RunDirLocked: a live process holds the run (its log is not final: that is said first).
    """
    from zeropipe.outputs.run_lock import check_unlocked

    check_unlocked(Path(cfg.exp_name))
    records = _records(cfg)
    saved = [i for i, r in enumerate(records) if r.get("event") == "checkpoint"]
    if not saved or not (Path(cfg.exp_name) / LATEST).is_file():
        return None
    last = records[saved[-1]]
    envstep, train_iter = int(last["envstep"]), int(last["train_iter"])
    scores = [r["reward_mean"] for r in records[: saved[-1]] if r.get("event") == "eval"]
    stop_value = cfg.env.stop_value
    if scores and max(scores) >= stop_value:
        reached = f"eval reward_mean {max(scores):g} >= env.stop_value {stop_value:g}"
        return RunEnd("env.stop_value", reached, envstep, train_iter)
    # env steps spent but learner steps owed (a Ctrl-C while the last budgets trained): the
    # resume trains them, as the run would have
    if envstep >= cfg.max_env_step and not last.get("owed_steps"):
        reached = f"env step {envstep} >= max_env_step {cfg.max_env_step}"
        return RunEnd("max_env_step", reached, envstep, train_iter)
    if train_iter >= cfg.max_train_iter:
        reached = f"train_iter {train_iter} >= max_train_iter {cfg.max_train_iter}"
        return RunEnd("max_train_iter", reached, envstep, train_iter)
    return None


def log_size(cfg: ExperimentConfig) -> int:
    """The size in bytes of the run's log now (0: none yet), to read what a run appends."""
    path = _log_path(cfg)
    return path.stat().st_size if path.is_file() else 0


def interrupted_note(cfg: ExperimentConfig, start: int) -> str:
    """What an interrupted run left to resume from, for the CLI's last line.

    Args:
        cfg: the run's config.
        start: `log_size` before the run started: only records written since count.

    Returns:
        One clause: the final checkpoint written and the command that continues the run, or
        that none was written by this process.
    """
    run = shlex.quote(cfg.exp_name)
    saved = [
        r for r in _records(cfg, start) if r.get("event") == "checkpoint" and r["reason"] == "stop"
    ]
    if saved:
        where = f"{Path(cfg.exp_name) / LATEST}, env step {saved[-1]['envstep']}, train_iter "
        return (
            f"the final checkpoint was written ({where}{saved[-1]['train_iter']}); "
            f"continue the run with: zeropipe train {run} --resume"
        )
    if (Path(cfg.exp_name) / LATEST).is_file():
        return (
            f"no final checkpoint was written; zeropipe train {run} --resume continues from "
            f"the latest one, {Path(cfg.exp_name) / LATEST}"
        )
    return "no checkpoint was written (the run had not started): nothing to resume"


def _log_path(cfg: ExperimentConfig) -> Path:
    return Path(cfg.exp_name) / "log" / "metrics.jsonl"


def _records(cfg: ExperimentConfig, start: int = 0) -> list[dict]:
    """The complete records of the run's log from byte `start` on (none if it has no log)."""
    path = _log_path(cfg)
    if not path.is_file():
        return []
    with path.open("rb") as file:
        file.seek(start)
        text = file.read().decode()
    return [json.loads(line) for line in complete_lines(text) if line.strip()]
