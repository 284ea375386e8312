"""Where a run's scalars go besides metrics.jsonl: TensorBoard (always) and wandb (optional).

Runs in: driver. Every metrics line is one event; its numeric fields that draw a curve become
the scalars `event/field` against env steps (`curve_scalars`). Fields that draw none are left
out: `time_s` (TensorBoard keeps each point's wall time itself, and a `checkpoint/time_s` curve
only says when a checkpoint was written), identifiers (`policy_version`, a restart's
`generation` and `seed`, `launch_train_iter`) and constants (`learner_threads`, `segments`); so
the events that carry only those (`checkpoint`, `stop`, `resume`, `restart`,
`checkpoint_error`) draw nothing. metrics.jsonl keeps every field.

At a new run's start each sink records the resolved config once: TensorBoard as hyperparameters
(the HParams tab, one entry per config leaf, e.g. `policy.learning_rate`, against the final
`eval/reward_mean`) and as the YAML text (the Text tab, tag `config`); wandb as the run's config.
"""

from __future__ import annotations

import logging
import math
import threading
from pathlib import Path
from typing import Any, Protocol

from zeropipe.config import ConfigError, ExperimentConfig, dump_config

# Fields that are no curve (see the module docstring).
# the end of a run: its time accounting is on the train lines already, as curves; a checkpoint:
# the learner steps it owes are the train lines' budget queue, already a curve
NOT_CURVE_EVENTS = frozenset({"stop", "checkpoint"})
NOT_CURVES = frozenset(
    {
        "time_s",
        "envstep",
        "train_iter",
        "policy_version",
        "launch_train_iter",
        "generation",
        "seed",
        "learner_threads",
        "segments",
    }
)
# The metrics the HParams tab shows beside each run's hyperparameters.
HPARAM_METRICS = ("eval/reward_mean",)
# events the TensorBoard writer may hold unwritten (tensorboardX: 10); a train line has ~25
QUEUE_EVENTS = 1000

log = logging.getLogger("zeropipe.run")
_NO_WANDB = (
    "wandb.enabled: wandb is not installed; install zeropipe's wandb extra "
    '(pip install -e ".[wandb]") or leave wandb off'
)


class ScalarSink(Protocol):
    """One destination of a run's scalars."""

    def add_scalars(self, scalars: dict[str, float], envstep: int) -> None:
        """Record `tag -> value` at `envstep`."""

    def close(self) -> None:
        """Flush and release."""


def curve_scalars(record: dict[str, Any]) -> dict[str, float]:
    """The `event/field -> value` scalars of one metrics line (finite numbers that draw a
    curve; see the module docstring)."""
    event = record["event"]
    if event in NOT_CURVE_EVENTS:
        return {}
    return {
        f"{event}/{key}": float(value)
        for key, value in record.items()
        if key not in NOT_CURVES and _is_number(value)
    }


def flat_config(cfg: ExperimentConfig) -> dict[str, str | float | int | bool]:
    """The resolved config as dotted leaves (`policy.model.latent_dim`), for hyperparameter
    tables: numbers, strings and booleans as they are, a list as its text, None left out."""
    flat: dict[str, str | float | int | bool] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                walk(f"{prefix}.{key}" if prefix else str(key), value)
        elif isinstance(node, list | tuple):
            flat[prefix] = str(list(node))
        elif node is not None:
            flat[prefix] = node

    walk("", cfg.model_dump(mode="json"))
    return flat


class TensorBoardSink:
    """TensorBoard event files in the run's `log/` (tensorboardX's writer).

    Args:
        log_dir: the run's `log/` directory.
        cfg: the resolved config, written once as hyperparameters and text; None (a resumed
            run, whose first event file has them) writes neither.
    """

    def __init__(self, log_dir: Path, cfg: ExperimentConfig | None) -> None:
        from tensorboardX import SummaryWriter

        # A queue that a few lines' scalars never fill: its writer thread is checked before each
        # line (see add_scalars), and a put into a full queue of a dead thread would block.
        _writer_failures_said_once()
        self._writer = SummaryWriter(str(log_dir), flush_secs=10, max_queue=QUEUE_EVENTS)
        self._stopped = False  # the writer thread died (a write failed); nothing more is sent
        if cfg is not None:
            self._write_config(cfg)

    def _write_config(self, cfg: ExperimentConfig) -> None:
        from tensorboardX.summary import hparams

        # The experiment and session-start summaries go into this run's own event file (the
        # writer's add_hparams would open a sub-run directory per call); no session end: the
        # run has not ended.
        experiment, session_start, _ = hparams(flat_config(cfg), dict.fromkeys(HPARAM_METRICS, 0.0))
        self._writer.file_writer.add_summary(experiment)
        self._writer.file_writer.add_summary(session_start)
        # Indented four spaces: the Text tab renders markdown, and this keeps the YAML verbatim.
        yaml_text = "".join(f"    {line}\n" for line in dump_config(cfg).splitlines())
        self._writer.add_text("config", yaml_text, 0)

    def add_scalars(self, scalars: dict[str, float], envstep: int) -> None:
        if self._stopped or not self._writing():
            return
        for tag, value in scalars.items():
            self._writer.add_scalar(tag, value, envstep)

    def _writing(self) -> bool:
        """Whether tensorboardX's writer thread is alive. It dies on a failed write (a full
        disk) and never takes from its queue again, so the run's next puts would fill the queue
        and block it forever: the sink stops instead, said once; metrics.jsonl keeps every
        record (and fails loudly itself if it cannot write)."""
        event_writer = self._writer.file_writer.event_writer
        worker = getattr(event_writer, "_worker", None)
        if worker is None or worker.is_alive():
            return True
        self._stopped = True
        # tensorboardX closes its writers at exit, which flushes to the failed file again and
        # prints a traceback after the run's last line; marked closed, that close does nothing
        event_writer._closed = True
        log.warning(
            "TensorBoard event file in %s stopped: its writer failed (a full disk?); the curves "
            "from here on are in metrics.jsonl only",
            self._writer.logdir,
        )
        return False

    def close(self) -> None:
        if self._stopped or not self._writing():
            return  # closing would flush to the failed file and wait for the dead thread
        self._writer.close()


def _writer_failures_said_once() -> None:
    """Once per process: tensorboardX's writer thread dying on an OSError (a full disk) is not
    printed as a traceback; the sink notices the dead thread and says it in one line
    (`TensorBoardSink._writing`). Any other thread's exception goes to the hook that was there."""
    if getattr(threading.excepthook, "zeropipe_tensorboard", False):
        return
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if isinstance(args.exc_value, OSError) and type(args.thread).__module__.startswith(
            "tensorboardX"
        ):
            log.debug("TensorBoard's writer thread stopped: %s", args.exc_value)
            return
        previous(args)

    hook.zeropipe_tensorboard = True  # type: ignore[attr-defined]
    threading.excepthook = hook


class WandbSink:
    """A wandb run mirroring the TensorBoard scalars (`wandb.enabled`).

    Args:
        log_dir: the run's `log/` directory (wandb's own files go under it).
        cfg: the resolved config (the wandb run's config and settings).

    Raises:
        ConfigError: wandb is not installed (naming the extra).
    """

    def __init__(self, log_dir: Path, cfg: ExperimentConfig) -> None:
        try:
            import wandb
        except ImportError:
            raise ConfigError(_NO_WANDB) from None
        settings = cfg.wandb
        self._run = wandb.init(
            project=settings.project,
            entity=settings.entity,
            name=settings.name or Path(cfg.exp_name).name,
            mode=settings.mode,
            dir=str(log_dir),
            config=flat_config(cfg),
        )

    def add_scalars(self, scalars: dict[str, float], envstep: int) -> None:
        # step = env steps, the x axis of the TensorBoard curves; it never decreases in a run.
        self._run.log(scalars, step=envstep)

    def close(self) -> None:
        self._run.finish()


def check_sinks(cfg: ExperimentConfig) -> None:
    """The sinks `cfg` asks for can be opened (checked before anything is written).

    Raises:
        ConfigError: wandb enabled but not installed (naming the extra).
    """
    if not cfg.wandb.enabled:
        return
    try:
        import wandb  # noqa: F401
    except ImportError:
        raise ConfigError(_NO_WANDB) from None


def open_sinks(log_dir: Path, cfg: ExperimentConfig, resume: bool) -> list[ScalarSink]:
    """The sinks of a run: TensorBoard, and wandb when enabled.

    Raises:
        ConfigError: wandb enabled but not installed.
    """
    check_sinks(cfg)
    sinks: list[ScalarSink] = []
    if cfg.wandb.enabled:
        sinks.append(WandbSink(log_dir, cfg))
    sinks.append(TensorBoardSink(log_dir, None if resume else cfg))
    return sinks


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
