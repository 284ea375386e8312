"""The Python API: load a config, train, evaluate, as the CLI does, from a script or notebook.

Runs in: driver. The same checks as `zeropipe train | eval` run before anything is written;
errors are raised, not printed: `ConfigError` for a bad config (every problem, one line each),
`InputError` for a path that cannot be used. Overrides are a mapping of dotted keys to values,
taken as they are: ``{"policy.batch_size": 64}``, not ``"policy.batch_size=64"``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from zeropipe.config import ConfigError, ExperimentConfig, config_from_dict
from zeropipe.config.env_swap import EnvSwap, env_swap
from zeropipe.config.loader import load_overridden, read_yaml
from zeropipe.config.overrides import (
    Override,
    apply_overrides,
    mapping_overrides,
    parse_override,
    refuse_async_keys_in_sync_run,
)

# Overrides: {"policy.batch_size": 64}; a list of "KEY=VALUE" strings (the CLI's form, which
# examples written before the mapping existed use) is still read.
Overrides = Mapping[str, Any] | Sequence[str] | None

if TYPE_CHECKING:
    from zeropipe.cli.evaluation import CheckpointScore
    from zeropipe.pipeline.run_state import RunSummary


def load_config(path: str | Path, overrides: Overrides = None) -> ExperimentConfig:
    """Load a YAML experiment file and set keys on top of it.

    Args:
        path: the YAML file, e.g. ``configs/cartpole_muzero.yaml``.
        overrides: dotted keys to values, e.g. ``{"policy.batch_size": 64, "seed": 1}``; each
            value is validated as its field's type (``1e6`` fills an int field, ``1.5`` does not).
            A list of ``"KEY=VALUE"`` strings (the CLI's ``--set`` form) is read too.

    Returns:
        The validated config with every default filled in.

    Raises:
        ConfigError: unreadable file, bad YAML, unknown keys or values of the wrong type: every
            problem, one line each, naming the file or the override.
    """
    return load_overridden(path, _overrides(overrides))


def train(
    config_or_path: ExperimentConfig | str | Path,
    overrides: Overrides = None,
    pipeline: Literal["sync", "async"] = "sync",
    resume: bool = False,
    show_progress: bool = False,
) -> RunSummary:
    """Train until a stop rule fires, as ``zeropipe train`` does.

    Args:
        config_or_path: a config (``load_config``), a YAML file or, with ``resume``, a run
            directory.
        overrides: dotted keys to values set on top of the config. A
            ``policy.async_pipeline.*`` key needs ``pipeline="async"``, as one in the YAML file
            does where it is not its default. With ``resume``, only what
            ``zeropipe train --resume --set`` may change.
        pipeline: ``"sync"`` (one process; the config's async settings unused, whatever its
            ``policy.async_pipeline.enabled`` says) or ``"async"``
            (collector and evaluator worker processes; call this from code that has no running
            event loop: in async code ``await zeropipe.train_async(cfg)`` instead).
        resume: continue the run in ``exp_name`` (or the run directory given) from its
            ``ckpt/ckpt_latest.pth.tar`` with its own config.yaml.
        show_progress: draw the progress line on stderr.

    Returns:
        How the run ended: stop reason, env steps, train iterations, best eval, wall seconds.

    Raises:
        ConfigError: a bad config, an async key in a sync run, a new run pointed at an existing
            run's directory, or a resume that would change the run.
        ValueError: ``pipeline`` is neither "sync" nor "async".
        CheckpointError: ``resume`` found no readable checkpoint, or the final checkpoint could
            not be written (``zeropipe.outputs.errors``).
        WorkerFailed: an async worker failed beyond its restarts (``zeropipe.backends.errors``).
        KeyboardInterrupt: after the final checkpoint is written (Ctrl-C).
    """
    if pipeline not in ("sync", "async"):
        raise ValueError(f"pipeline must be 'sync' or 'async' (got {pipeline!r})")
    given = _overrides(overrides)
    if pipeline == "sync":
        refuse_async_keys_in_sync_run(given)
    from zeropipe.cli.main import load_checked

    if resume:
        cfg = load_checked("", (), cfg=_resumed(config_or_path, given))
    else:
        loaded, swap = _config(config_or_path, given)
        if pipeline == "sync" and not isinstance(config_or_path, ExperimentConfig):
            raw = read_yaml(config_or_path)  # its async settings would be ignored
            refuse_async_keys_in_sync_run(given, raw, loaded, str(config_or_path))
        cfg = load_checked("", (), loaded, swap=swap)
    cfg.policy.async_pipeline.enabled = pipeline == "async"
    if pipeline == "sync":
        from zeropipe.pipeline.sync import train_sync

        return train_sync(cfg, resume=resume, show_progress=show_progress)
    return _train_async(cfg, resume, show_progress)


def evaluate(run_dir_or_checkpoint: str | Path, episodes: int | None = None) -> CheckpointScore:
    """Score a checkpoint with the run's evaluator, as ``zeropipe eval`` does.

    Args:
        run_dir_or_checkpoint: a run directory (its ``ckpt/ckpt_best.pth.tar``, else
            ``ckpt/ckpt_latest.pth.tar``) or a checkpoint file in ``<run>/ckpt/``; the run's
            ``config.yaml`` builds the network and the evaluator.
        episodes: episodes to play (default: the config's ``env.n_evaluator_episode``).

    Returns:
        The score: ``episode_returns``, ``eval_seed``, the mean recorded at save time if any.

    Raises:
        InputError: no checkpoint or no config.yaml there, or weights that do not fit
            (``zeropipe.cli.errors.InputError``).
        ConfigError: the run's config no longer loads.
    """
    from zeropipe.cli.evaluation import checkpoint_of, run_config_path, score_checkpoint
    from zeropipe.cli.main import load_checked
    from zeropipe.config.resume import load_run_config

    checkpoint = checkpoint_of(Path(run_dir_or_checkpoint))
    config = run_config_path(checkpoint)
    overrides = [] if episodes is None else [f"env.n_evaluator_episode={int(episodes)}"]
    cfg, _notes = load_run_config(_existing(config), overrides)
    return score_checkpoint(load_checked("", (), cfg=cfg), checkpoint)


def _overrides(overrides: Overrides) -> list[Override]:
    """The overrides as parsed items: a mapping's values as given, strings parsed as YAML.

    Raises:
        TypeError: a single string (a list of them, or a mapping, is expected).
        ConfigError: a string that is not KEY=VALUE.
    """
    if isinstance(overrides, str):
        raise TypeError(f"overrides: expected a mapping such as {{'seed': 1}}, got {overrides!r}")
    if overrides is None or isinstance(overrides, Mapping):
        return mapping_overrides(overrides)
    return [parse_override(item) for item in overrides]


def _config(
    config_or_path: ExperimentConfig | str | Path, given: list[Override]
) -> tuple[ExperimentConfig, EnvSwap | None]:
    """A new run's config: the file loaded, or a copy of the config given, overrides applied;
    and, for a file moved to another env by an override, that swap (the CLI fits the config to
    the new env, as for `--set env.env_id=...`).

    Raises:
        ConfigError: a directory where a file was expected, or a bad config.
    """
    if not isinstance(config_or_path, ExperimentConfig):
        path = Path(config_or_path)
        if path.is_dir():
            raise ConfigError(
                f"{path} is a directory (a run?): pass resume=True to continue it, or a YAML file"
            )
        cfg = load_overridden(path, given)
        keys = [f"{o.key}=" for o in given]  # env_swap reads the keys only
        return cfg, env_swap(read_yaml(path), cfg.env.env_id, keys)
    raw = config_or_path.model_dump(mode="json")
    problems = apply_overrides(raw, given)
    return config_from_dict(raw, source="config", overrides=given, problems=problems), None


def _resumed(
    config_or_path: ExperimentConfig | str | Path, given: list[Override]
) -> ExperimentConfig:
    """A resumed run's config: its own config.yaml, with what a resume may change."""
    from zeropipe.config.resume import load_resume_config

    target = (
        config_or_path.exp_name
        if isinstance(config_or_path, ExperimentConfig)
        else str(config_or_path)
    )
    # JSON is YAML: each value reaches the field as it was given
    items = [f"{o.key}={json.dumps(o.value)}" for o in given]
    cfg, _notes = load_resume_config(target, items)
    return cfg


def _train_async(cfg: ExperimentConfig, resume: bool, show_progress: bool) -> RunSummary:
    """The async driver on a fresh event loop (uvloop when installed), checked first."""
    import asyncio

    from zeropipe.pipeline.async_driver import check_async_options, train_async

    check_async_options(cfg)
    try:
        import uvloop

        factory = uvloop.new_event_loop
    except ImportError:  # pragma: no cover - uvloop is a dependency on POSIX
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(train_async(cfg, show_progress=show_progress, resume=resume))


def _existing(config: Path) -> Path:
    """`config` if it is a file.

    Raises:
        InputError: it is not.
    """
    from zeropipe.cli.errors import InputError

    if not config.is_file():
        raise InputError(f"no config at {config}: is this checkpoint inside <run>/ckpt/?")
    return config
