"""The runner core both pipelines share: the run's setup, its learner step, its end.

Runs in: driver (the async driver calls `open_run`, `learner_step` and `finish_training` on its
heavy thread, `close_run` on the event-loop thread). The sync driver (sync.py) and the async one
(async_driver.py, async_loop.py) differ in *who runs what, and when*; what a run is made of, how a
learner step is taken and logged, and how a run ends are written here once (docs/design.md,
docs/async.md).

The `train` metrics line is the same in both pipelines: the learner metrics averaged over the steps
since the last line, `learner_steps`, `learner_steps_per_busy_s`, `learner_steps_per_s` (over this
process's run), `learner_threads` (of the last step), `budget_queue_len`, `buffer_transitions`,
`buffer_bytes_per_transition`, and the time accounting so far (phases.py: `<phase>_s_total`,
`learner_busy_fraction`, `overlap_bound_s`; the `stop` line has them too). It is written after every
learner step whose train_iter is a multiple of `train_log_interval` (a steady cadence, the same
lines in a run resumed as in the run never stopped), after the step that reaches `max_train_iter`,
and, for steps still unlogged when a run ends (a limit, stop value, cancellation, error), once at
its end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import torch

from zeropipe.config import ConfigError, ExperimentConfig
from zeropipe.learner.learner import Learner
from zeropipe.learner.precision import log_choice
from zeropipe.learner.trainer import Trainer
from zeropipe.outputs.errors import CheckpointError
from zeropipe.outputs.events import RunEvent, StopEvent, TrainEvent
from zeropipe.outputs.phases import PhaseClock
from zeropipe.outputs.progress import ProgressLine
from zeropipe.outputs.run_dir import RunDir, check_run_dir, load_latest
from zeropipe.pipeline.build import build_driver
from zeropipe.pipeline.payload_versions import upgrade_payload
from zeropipe.pipeline.run_lines import start_line, stop_line
from zeropipe.pipeline.run_state import RunState, RunSummary
from zeropipe.pipeline.threads import apply_threads, choose_threads

log = logging.getLogger("zeropipe.driver")

A = TypeVar("A")
Listener = Callable[[RunEvent], None]


def _no_actors() -> None:
    return None


def open_run(
    cfg: ExperimentConfig,
    resume: bool,
    listeners: Iterable[Listener] = (),
    build_actors: Callable[[], A] = _no_actors,  # type: ignore[assignment]
    init_weights: Mapping[str, torch.Tensor] | None = None,
    own_workers: int = 0,
) -> tuple[RunState, A]:
    """Set a run up: check its directory, read the checkpoint to resume, build the learner and
    the buffer, open the run directory, restore.

    Args:
        cfg: the experiment config.
        resume: continue from `<exp_name>/ckpt/ckpt_latest.pth.tar`.
        listeners: called with every run event as it is written.
        build_actors: builds what the driver acts with in-process (the sync pipeline's collector
            and evaluator). It runs after the learner is built, so the actors' networks draw
            from the seeded RNG in the same order as always, and before the run directory is
            opened and the checkpoint's RNG states are restored.
        init_weights: a new run starts from these network weights (`--init-from`; the target
            network too), not from a fresh initialisation.
        own_workers: the run's worker processes that may already be running (the async
            pipeline's): the learner's thread choice does not count them as other load.

    Returns:
        The run's state and what `build_actors` built.

    Raises:
        RunDirExists: a new run was pointed at an existing run's directory (nothing is written).
        CheckpointError: `resume` found no readable checkpoint, or one whose network is not the
            config's (nothing is written).
        ConfigError: `init_weights` do not fit the config's network (nothing is written).
    """
    check_run_dir(cfg, resume)  # fail before anything is written
    loaded = load_latest(cfg.exp_name) if resume else None
    if loaded is not None:  # an older version's payload, with the current keys (or refused)
        loaded = (loaded[0], upgrade_payload(*loaded))
    comps = build_driver(cfg)
    if loaded is not None:
        _check_fits(comps.learner, *loaded)  # one line, before the run directory is touched
    if init_weights is not None:
        _start_from(comps.learner, init_weights)  # a mismatch is one line, before any other
    restored = loaded[1]["learner_threads"] if loaded is not None else None
    threads = choose_threads(
        cfg.policy.learner_num_threads, comps.learner.network, restored, own_workers
    )
    apply_threads(threads)
    log_choice(cfg.policy.learner_autocast, comps.learner.autocast)
    trainer = Trainer(comps.learner, comps.buffer, cfg.policy, PhaseClock())
    actors = build_actors()
    run = RunDir(cfg, resume=resume)
    log.info("%s", start_line(cfg, resume))
    run.metrics.listeners.extend(listeners)
    state = RunState(cfg, run, trainer, threads)
    if loaded is not None:
        state.restore_latest(loaded)
    return state, actors


def _check_fits(learner: Learner, path: Path, payload: Mapping[str, Any]) -> None:
    """Raise CheckpointError, naming the first difference, where the checkpoint's network is
    not the one the config builds (another size, another type)."""
    own = learner.network.state_dict()
    saved = payload["learner"]["model"]
    problem = next(
        (
            f"{name} is {tuple(saved[name].shape)} there, {tuple(own[name].shape)} here"
            for name in own
            if name in saved and tuple(saved[name].shape) != tuple(own[name].shape)
        ),
        None,
    )
    if problem is None and own.keys() != saved.keys():
        missing, extra = sorted(own.keys() - saved.keys()), sorted(saved.keys() - own.keys())
        problem = f"it lacks {missing[:3]}" if missing else f"it has {extra[:3]} besides"
    if problem is not None:
        raise CheckpointError(
            f"--resume: {path} holds another network than the run's config.yaml builds "
            f"({problem}); resume it with the config it was trained with"
        )


def _start_from(learner: Learner, weights: Mapping[str, torch.Tensor]) -> None:
    """Load `weights` into the learner's network and its target copy.

    Raises:
        ConfigError: the weights are of another architecture (naming the first mismatch).
    """
    try:
        learner.network.load_state_dict(weights)
    except RuntimeError as exc:
        first = " ".join(str(exc).split())[:200]
        raise ConfigError(
            f"--init-from: the weights do not fit this config's network: {first}"
        ) from None
    learner.target_network.load_state_dict(learner.network.state_dict())
    log.info("the network starts from the given weights (--init-from)")


def learner_step(state: RunState) -> None:
    """One learner step from the head budget, the periodic save it may be due, its train line."""
    state.trainer.step()
    state.save_periodic()
    cfg = state.cfg
    if state.train_iter % cfg.train_log_interval == 0 or state.train_iter >= cfg.max_train_iter:
        log_train(state)


def log_train(state: RunState) -> None:
    """The `train` metrics line of the steps since the last one (see the module docstring)."""
    trainer = state.trainer
    buffer = trainer.buffer
    means, steps, per_busy_s = trainer.stats.flush()
    state.run.metrics.emit(
        TrainEvent(
            envstep=state.envstep,
            train_iter=state.train_iter,
            learner=means,
            learner_steps=steps,
            learner_steps_per_busy_s=per_busy_s,
            learner_steps_per_s=(state.train_iter - state.start_train_iter) / state.wall_s(),
            learner_threads=torch.get_num_threads(),  # of this thread: the learner's
            budget_queue_len=len(trainer.budgets),
            buffer_transitions=buffer.num_transitions,
            buffer_bytes_per_transition=buffer.nbytes() / max(buffer.num_transitions, 1),
            phases=state.phases.fields(state.wall_s()),
        )
    )


def finish_training(state: RunState) -> CheckpointError | None:
    """Log the steps not logged yet, then write the final checkpoint; its error, if any.

    A failed run (`RunState.fail`) writes none: the last good `ckpt_latest` stays as it was.
    """
    if state.trainer.stats.count:
        log_train(state)
    if state.error is not None:
        log.error("the run failed; ckpt_latest is left as it was: %s", state.error)
        return None
    return state.final_checkpoint()


def close_run(state: RunState, progress: ProgressLine | None) -> RunSummary:
    """The end of every run, after `finish_training`: the `stop` line, the run directory closed,
    the progress line's last draw.

    Returns:
        How the run ended (`wall_s`: since the run directory was opened).
    """
    wall_s = state.wall_s()
    summary = state.summary(wall_s)
    state.run.metrics.emit(
        StopEvent(
            envstep=state.envstep,
            train_iter=state.train_iter,
            reason=summary.stop_reason,
            phases=state.phases.fields(wall_s),
            error=state.error,
        )
    )
    log.info("%s", state.phases.summary(wall_s))
    log.info("%s", stop_line(state.cfg, summary, state.error))
    state.run.close()
    if progress is not None:
        progress.update(state.envstep, state.train_iter, force=True)
        progress.close()
    return summary
