"""A run's events as typed, frozen records: the source of every metrics output.

Runs in: driver. The pipeline builds one event per thing that happened (`CollectEvent`,
`TrainEvent`, `EvalEvent`, ...) and hands it to `MetricsLog.emit` once; that stamps its
`time_s`, writes its `record` as one line of `log/metrics.jsonl`, sends its curves to the scalar
sinks and gives the same object to every listener (the status board, the embedder's event bus).
Every field a line carries is declared here: a line is `event` (the class's `event`), `time_s`,
`envstep`, `train_iter`, then the class's fields in order; a field marked `OPTIONAL` is left out
when None, and a mapping field (`TrainEvent.learner`, whose keys are the type's loss terms and
diagnostics) and a `PhaseTotals` are spread into the line. Why a run stopped is a `StopReason`.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any, ClassVar

from zeropipe.outputs.phases import PhaseTotals

# metadata of a field that a line carries only when it has a value
OPTIONAL = MappingProxyType({"optional": True})


class StopReason(enum.StrEnum):
    """Why a run stopped (the `stop` line's `reason`; a str, so it is written as its value)."""

    STOP_VALUE = "stop_value"
    MAX_ENV_STEP = "max_env_step"
    MAX_TRAIN_ITER = "max_train_iter"
    INTERRUPTED = "interrupted"  # Ctrl-C or SIGTERM
    CANCELLED = "cancelled"  # the embedder stopped it (its task was cancelled)
    DISK_FULL = "disk_full"
    ERROR = "error"


# the limits whose stop wants an eval of the final weights (the goal's own eval is one already)
LIMIT_STOPS = (StopReason.MAX_ENV_STEP, StopReason.MAX_TRAIN_ITER)


@dataclass(frozen=True, kw_only=True)
class RunEvent:
    """What every line has: the counters when it happened and the run's clock (`time_s`,
    seconds since the run started, resumed runs included; set by `MetricsLog.emit`)."""

    event: ClassVar[str]
    envstep: int
    train_iter: int
    time_s: float = 0.0

    @cached_property
    def record(self) -> Mapping[str, Any]:
        """The event's metrics.jsonl line (read-only)."""
        line: dict[str, Any] = {
            "event": self.event,
            "time_s": self.time_s,
            "envstep": int(self.envstep),
            "train_iter": int(self.train_iter),
        }
        for f in dataclasses.fields(self):
            if f.name in _BASE:
                continue
            value = getattr(self, f.name)
            if value is None and f.metadata.get("optional"):
                continue
            if isinstance(value, PhaseTotals):
                value = dataclasses.asdict(value)
            if isinstance(value, Mapping):
                line.update({k: _plain(v) for k, v in value.items()})
            else:
                line[f.name] = _plain(value)
        return MappingProxyType(line)


_BASE = ("envstep", "train_iter", "time_s")


@dataclass(frozen=True, kw_only=True)
class CollectEvent(RunEvent):
    """A finished collect: its segments are in the buffer and its train budget is queued. The
    async pipeline adds which worker played it and how it came back."""

    event: ClassVar[str] = "collect"
    envstep_delta: int = 0
    policy_version: int = 0
    policy_lag: int = 0  # learner steps between the weights played and the learner's now
    segments: int = 0
    collect_duration_s: float = 0.0
    collect_envstep_per_s: float = 0.0
    envstep_per_s: float = 0.0  # since this process started the run
    learner_steps_per_s: float = 0.0
    budget_queue_len: int = 0
    episode_return_mean: float | None = None  # None: no episode ended in this collect
    worker: str | None = field(default=None, metadata=OPTIONAL)
    worker_busy_fraction: float | None = field(default=None, metadata=OPTIONAL)
    launch_train_iter: int | None = field(default=None, metadata=OPTIONAL)
    collect_parts: int | None = field(default=None, metadata=OPTIONAL)  # came back in parts
    last_policy_version: int | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class TrainEvent(RunEvent):
    """The learner steps since the last train line: `learner` holds their means (the type's loss
    terms and diagnostics, by name), then the rates, the buffer and the time accounting."""

    event: ClassVar[str] = "train"
    learner: Mapping[str, float] = field(default_factory=dict)
    learner_steps: int = 0  # the steps these means are over
    learner_steps_per_busy_s: float = 0.0
    learner_steps_per_s: float = 0.0  # since this process started the run
    learner_threads: int = 1
    budget_queue_len: int = 0
    buffer_transitions: int = 0
    buffer_bytes_per_transition: float = 0.0
    phases: PhaseTotals | None = field(default=None, metadata=OPTIONAL)

    @property
    def losses(self) -> dict[str, float]:
        """The loss terms (`total_loss`, `value_loss`, ...: every `*_loss` of `learner`)."""
        return {k: v for k, v in self.learner.items() if k.endswith("_loss")}


@dataclass(frozen=True, kw_only=True)
class EvalEvent(RunEvent):
    """An evaluation of one immutable snapshot. `envstep` and `train_iter` are the snapshot's
    (its weights' version); an async eval that came back later also carries the counters on its
    arrival (`result_envstep`, `result_train_iter`)."""

    event: ClassVar[str] = "eval"
    reward_mean: float = 0.0
    reward_std: float = 0.0
    episode_returns: tuple[float, ...] = ()
    policy_version: int = 0
    eval_duration_s: float = 0.0
    owed_learner_steps: int = 0  # data collected that these weights had not trained for
    result_envstep: int | None = field(default=None, metadata=OPTIONAL)
    result_train_iter: int | None = field(default=None, metadata=OPTIONAL)
    # the eval of the last weights at a stop by a limit
    final: bool | None = field(default=None, metadata=OPTIONAL)


@dataclass(frozen=True, kw_only=True)
class PublishEvent(RunEvent):
    """A new weight snapshot in shared memory (`reason`: what asked for it, collect or eval)."""

    event: ClassVar[str] = "publish"
    policy_version: int = 0
    publish_s: float = 0.0
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class RestartEvent(RunEvent):
    """A worker died, or hung past its request deadline, and was replaced."""

    event: ClassVar[str] = "restart"
    worker: str = ""
    generation: int = 0
    seed: int = 0
    cause: str = ""  # "died" | "hung"
    error: str = ""


@dataclass(frozen=True, kw_only=True)
class BufferEvent(RunEvent):
    """The replay buffer's size (async runs, now and then)."""

    event: ClassVar[str] = "buffer"
    transitions: int = 0
    segments: int = 0
    nbytes: int = 0
    snapshot_publish_s_total: float = 0.0


@dataclass(frozen=True, kw_only=True)
class CheckpointEvent(RunEvent):
    """`ckpt_latest` was written (`reason`: periodic or stop) with the learner steps it owes
    (trained on resume)."""

    event: ClassVar[str] = "checkpoint"
    name: str = ""
    reason: str = ""
    owed_steps: int = 0


@dataclass(frozen=True, kw_only=True)
class CheckpointErrorEvent(RunEvent):
    """A checkpoint could not be written (`kind`: latest, best, periodic or final)."""

    event: ClassVar[str] = "checkpoint_error"
    kind: str = ""
    error: str = ""


@dataclass(frozen=True, kw_only=True)
class ResumeEvent(RunEvent):
    """The run goes on from a checkpoint (the first line of a resumed process)."""

    event: ClassVar[str] = "resume"
    checkpoint: str = ""


@dataclass(frozen=True, kw_only=True)
class StopEvent(RunEvent):
    """The run stopped: the last line of a run, with its time accounting."""

    event: ClassVar[str] = "stop"
    reason: StopReason = StopReason.INTERRUPTED
    phases: PhaseTotals | None = field(default=None, metadata=OPTIONAL)
    error: str | None = field(default=None, metadata=OPTIONAL)  # why a failed run failed


def _plain(value: Any) -> Any:
    """A JSON value: a numpy or torch scalar as a number, a non-finite float as None (null)."""
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value
