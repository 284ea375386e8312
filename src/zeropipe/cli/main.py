"""Command line: `zeropipe train | config | eval | plot | import | compare`.

Runs in: driver. A thin layer: it parses arguments, loads and checks the config (before anything is
written to the run directory), and calls the pipeline (`train`), prints the resolved config
(`config`), scores a checkpoint (`eval`, cli/evaluation.py), draws learning curves (`plot`,
cli/curves.py) or says whether two runs are the same run (`compare`, cli/compare.py; exit 1 when
they are not). Exit status: 0 on success (for `train`: the run ended by its own stop rule, or a
--resume found that it had met one already and trained nothing), 2 for a bad configuration or
input file (including an exp_name that already holds a run, without --resume), 130 after
Ctrl-C, 143 after SIGTERM (which takes the Ctrl-C path: final checkpoint, clean shutdown; the
last line says what was written and how to resume), 1 for any other error (a worker failure, an
unreadable checkpoint on --resume, a final checkpoint that could not be written).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zeropipe.cli.async_run import Terminated, run_async, sigterm_as_ctrl_c
from zeropipe.cli.compare import add_compare_parser, run_compare
from zeropipe.cli.errors import InputError
from zeropipe.cli.held_import import import_holding_ctrl_c
from zeropipe.cli.import_config import add_import_parser, run_import
from zeropipe.cli.run_end import interrupted_note, log_size, run_end
from zeropipe.cli.seeds import add_seed_arguments
from zeropipe.config import ConfigError, ExperimentConfig, dump_config, load_config
from zeropipe.config.describe import describe_config
from zeropipe.config.env_swap import EnvSwap, env_swap
from zeropipe.config.loader import read_yaml
from zeropipe.config.overrides import parse_override, refuse_async_keys_in_sync_run

if TYPE_CHECKING:
    from zeropipe.envs.spec import EnvSpec
    from zeropipe.pipeline.run_state import RunSummary

log = logging.getLogger("zeropipe.cli")

EXIT_OK, EXIT_ERROR, EXIT_CONFIG, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143


def _version() -> str:
    """The installed package's version (the CLI sits below the package's own __init__)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("zeropipe")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zeropipe", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"zeropipe {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "config",
        help="experiment YAML file, e.g. configs/cartpole_muzero.yaml (train --resume: the run "
        "directory, or a YAML file whose exp_name is the run)",
    )
    common.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field, e.g. --set policy.batch_size=64 (repeatable; values are "
        "YAML, 1e6 included). train: a policy.async_pipeline.* setting, here or in the YAML "
        "file (where it is not its default), needs --async-pipeline",
    )
    train = sub.add_parser("train", parents=[common], help="train an agent")
    train.add_argument(
        "--async-pipeline",
        action="store_true",
        help="use the async segment pipeline (same as policy.async_pipeline.enabled: true)",
    )
    train.add_argument(
        "--quiet",
        action="store_true",
        help="no progress line or info logs on the console, but for the line saying where a "
        "resumed run continues from (log/train.log still has them all)",
    )
    train.add_argument(
        "--wandb",
        action="store_true",
        help="mirror the TensorBoard scalars to Weights & Biases (wandb.enabled: true; needs "
        'pip install -e ".[wandb]"); wandb.project, .entity, .name, .mode set the rest',
    )
    train.add_argument(
        "--resume",
        action="store_true",
        help="continue the run from ckpt/ckpt_latest.pth.tar (learner, buffer, counters, RNG) "
        "with the run's own config.yaml; --set may then change only the budget, stop value, "
        "eval and checkpoint cadence, device and worker settings. Without it, an exp_name that "
        "already holds a run is refused",
    )
    train.add_argument(
        "--init-from",
        type=Path,
        metavar="CKPT",
        help="start a new run from a checkpoint's network weights (ckpt_best.pth.tar, "
        "ckpt_latest.pth.tar or iteration_N.pth.tar of a run of the same architecture)",
    )
    train.add_argument(
        "--status",
        metavar="HOST:PORT",
        help="serve GET /metrics (Prometheus) and GET /status (JSON) there while the async "
        "pipeline runs, e.g. 127.0.0.1:9100 (port 0: a free port, printed); off by default",
    )
    add_seed_arguments(train)
    config = sub.add_parser("config", parents=[common], help="print the resolved config")
    config.add_argument(
        "--describe",
        action="store_true",
        help="add each field's description (and its default where the value differs)",
    )
    _add_eval_parser(sub)
    _add_plot_parser(sub)
    add_import_parser(sub)
    add_compare_parser(sub)
    return parser


def _add_eval_parser(sub: argparse._SubParsersAction) -> None:
    ev = sub.add_parser("eval", help="score a checkpoint with the run's evaluator")
    ev.add_argument(
        "checkpoint",
        type=Path,
        metavar="RUN_DIR|CHECKPOINT",
        help="a run directory (its ckpt/ckpt_best.pth.tar, else ckpt/ckpt_latest.pth.tar), or a "
        "checkpoint file, e.g. runs/cartpole_muzero/ckpt/iteration_100.pth.tar",
    )
    ev.add_argument(
        "--config",
        help="experiment YAML (default: <exp_name>/config.yaml next to <exp_name>/ckpt/)",
    )
    ev.add_argument("--episodes", type=int, help="episodes to play (default: n_evaluator_episode)")
    ev.add_argument(
        "--seed",
        type=int,
        help="the run seed whose evaluator seeds to use (seed + 100000; default: the config's)",
    )
    ev.add_argument("--video", type=Path, help="write env 0's first episode here (.mp4 or .gif)")
    ev.add_argument(
        "--register-envs",
        metavar="MODULE:FUNCTION",
        help="call this to register the env id first (the config's env.register_envs is never "
        "called by eval: a run directory is read as data)",
    )
    ev.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field (repeatable)",
    )


def _add_plot_parser(sub: argparse._SubParsersAction) -> None:
    plot = sub.add_parser("plot", help="draw eval return and throughput curves of runs")
    plot.add_argument(
        "run_dirs",
        nargs="*",
        type=Path,
        metavar="RUN_DIR",
        help="run directories; an experiment directory of train --seeds stands for its seed_S runs",
    )
    plot.add_argument(
        "-o",
        "--output",
        type=Path,
        help="PNG to write (default: curves.png next to the runs: inside RUN_DIR for one run, "
        "in the runs' common parent directory for several; the path is printed)",
    )
    plot.add_argument("--x", choices=["envstep", "time_s"], default="envstep", help="x axis")


def load_checked(
    path: str,
    overrides: Sequence[str],
    cfg: ExperimentConfig | None = None,
    run_env_hook: bool = True,
    prepare: Callable[[ExperimentConfig], None] | None = None,
    swap: EnvSwap | None = None,
) -> ExperimentConfig:
    """Load the config (unless `cfg` is given) and check everything that can be checked before a
    run starts; a config moved to another env by `--set env.env_id=...` is fitted to it
    (`cli/env_fit.py`: notes printed to stderr). With `cfg` given, `swap` is its env swap, if any
    (the Python API's overrides).

    Args:
        run_env_hook: call `env.register_envs` (only `train` does: it is code named by the
            config). Without it, an env id that only the hook registers is left unchecked,
            with a note.
        prepare: called on the loaded config before it is checked (`eval`: its env hook).

    Raises:
        ConfigError: bad file, key, value, env id or policy type, or a model kind written for
            the other observation kind than a swapped env's.
    """
    from zeropipe.algos.registry import algorithm, check_action_kind
    from zeropipe.outputs.scalar_sinks import check_sinks

    if cfg is None:
        cfg = load_config(path, overrides)
        swap = env_swap(read_yaml(path), cfg.env.env_id, overrides)
    if prepare is not None:
        prepare(cfg)
    algorithm(cfg.policy.type)
    _check_device(cfg)
    check_sinks(cfg)
    spec = _env_spec(cfg, run_env_hook)
    if spec is None:
        return cfg
    check_action_kind(cfg.policy, cfg.env.env_id, spec.continuous, spec.action_space_size)
    if swap is not None:  # last: its notes are printed only for a config that passes the rest
        from zeropipe.cli.env_fit import fit_to_env

        for note in fit_to_env(cfg, spec, swap):
            print(f"zeropipe: {note}", file=sys.stderr)
    return cfg


def _env_spec(cfg: ExperimentConfig, run_env_hook: bool) -> EnvSpec | None:
    """The env's spec (one env construction, as the id check it includes); None when the env id
    is only registered by `env.register_envs` and `run_env_hook` is off (a note says so).

    Raises:
        ConfigError: the env id is unknown or the env cannot be built.
    """
    from zeropipe.envs import EnvError, env_spec

    hook = cfg.env.register_envs
    try:
        return env_spec(
            cfg.env if run_env_hook else cfg.env.model_copy(update={"register_envs": None})
        )
    except EnvError as exc:
        if run_env_hook or hook is None:
            raise ConfigError(f"env.env_id: {exc}") from None
    print(
        f"zeropipe: env.env_id {cfg.env.env_id!r} is not checked: it needs env.register_envs "
        f"{hook!r}, code that only `zeropipe train` calls",
        file=sys.stderr,
    )
    return None


def _check_device(cfg: ExperimentConfig) -> None:
    """A CUDA learner device needs a CUDA build and a GPU (the workers' `*_num_gpus` shares are
    checked with the async pipeline's other options, `async_driver`).

    Raises:
        ConfigError: naming the key and what this machine has.
    """
    import torch

    if cfg.policy.device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(
            f"policy.device: {cfg.policy.device!r} needs a CUDA GPU, and this torch sees none; "
            "use cpu"
        )


def _train_config(args: argparse.Namespace) -> tuple[ExperimentConfig, dict[str, Any]]:
    """The run's config and how it starts (`train_sync` / `train_async` keyword arguments).

    Raises:
        ConfigError: a bad config, a resume that would change the run, or `--init-from` weights
            that cannot be read.
    """
    if args.resume and args.init_from is not None:
        raise ConfigError("--init-from starts a new run; --resume continues one: pass one of them")
    if not args.resume:
        if Path(args.config).is_dir():
            raise ConfigError(
                f"{args.config} is a directory (a run?): add --resume to continue it, or pass "
                "a YAML file to start a new run"
            )
        init = None
        if args.init_from is not None:
            from zeropipe.cli.evaluation import load_checkpoint_weights

            try:
                init = load_checkpoint_weights(args.init_from).state_dict
            except InputError as exc:
                raise ConfigError(f"--init-from: {exc}") from None
        cfg = load_checked(args.config, args.overrides)
        if init is not None:
            from zeropipe.cli.init_weights import check_init_weights

            check_init_weights(cfg, args.init_from, init)
        return cfg, {"init_weights": init}
    from zeropipe.config.resume import load_resume_config

    cfg, notes = load_resume_config(args.config, args.overrides)
    for note in notes:
        print(f"zeropipe: {note}", file=sys.stderr)
    return load_checked(args.config, (), cfg=cfg), {"resume": True}


def _train(args: argparse.Namespace) -> int:
    if args.wandb:
        args.overrides.append("wandb.enabled=true")
    if args.seeds is not None:
        from zeropipe.cli.seeds import train_seeds

        return train_seeds(args, load_checked)
    cfg, start = _train_config(args)
    sigterm_as_ctrl_c()
    if args.async_pipeline:
        cfg.policy.async_pipeline.enabled = True
    if not cfg.policy.async_pipeline.enabled:
        overrides = [parse_override(item) for item in args.overrides]
        raw = None if args.resume else read_yaml(args.config)  # a run's config.yaml is as it ran
        refuse_async_keys_in_sync_run(overrides, raw, cfg, args.config)
    if args.status is not None and not cfg.policy.async_pipeline.enabled:
        raise ConfigError(
            "--status: the status endpoint is served by the async pipeline; add "
            "--async-pipeline (the sync loop has no event loop to serve it from)"
        )
    if args.resume and (end := run_end(cfg)) is not None:
        print(f"zeropipe: {end.message(args.config)}", file=sys.stderr)
        return EXIT_OK
    summary = _run_pipeline(cfg, args, start)
    print(
        f"stopped: {summary.stop_reason} at env step {summary.envstep}, train_iter "
        f"{summary.train_iter}, best eval {_score(summary.best_reward)}, "
        f"{summary.wall_s:.0f}s; "
        f"outputs in {cfg.exp_name}/",
        file=sys.stderr,
    )
    return EXIT_OK


def _run_pipeline(
    cfg: ExperimentConfig, args: argparse.Namespace, start: dict[str, Any]
) -> RunSummary:
    """Train with the pipeline the config names; an interrupt carries a note of what the run
    left to resume from (main prints it)."""
    log_start = log_size(cfg)
    try:
        if cfg.policy.async_pipeline.enabled:
            return run_async(cfg, not args.quiet, start, args.status)
        from zeropipe.pipeline.sync import train_sync

        return train_sync(cfg, show_progress=not args.quiet, **start)
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM, after the final checkpoint
        exc.add_note(interrupted_note(cfg, log_start))
        raise


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _eval(args: argparse.Namespace) -> int:
    from zeropipe.cli.evaluation import checkpoint_of, run_config_path, score_checkpoint
    from zeropipe.config.resume import load_run_config

    checkpoint = checkpoint_of(args.checkpoint)  # a run directory: its best, else latest
    config = args.config or run_config_path(checkpoint)
    if not Path(config).is_file():
        raise InputError(f"no config at {config}: pass the run's config with --config")
    overrides = list(args.overrides)
    if args.episodes is not None:
        overrides.append(f"env.n_evaluator_episode={args.episodes}")
    if args.seed is not None:
        overrides.append(f"seed={args.seed}")
    cfg = None
    if args.config is None:  # the run's own config.yaml: as the run trained with it
        cfg, notes = load_run_config(Path(config), overrides)
        for note in notes:
            print(note, file=sys.stderr)
    hook = args.register_envs
    cfg = load_checked(str(config), overrides, cfg, prepare=lambda c: _no_config_code(c, hook))
    score = score_checkpoint(cfg, checkpoint, args.video)
    print(score.summary())
    if args.video is not None:
        print(f"video: {args.video} (return {score.video_return:g})")
    return EXIT_OK


def _no_config_code(cfg: ExperimentConfig, hook: str | None) -> None:
    """`eval` reads a run as data: the config's `env.register_envs` is replaced by the one given
    on the command line (`--register-envs`), or by none, with a note."""
    if cfg.env.register_envs is not None and cfg.env.register_envs != hook:
        print(
            f"zeropipe eval: env.register_envs {cfg.env.register_envs!r} is not called (eval "
            "runs no code named by a config); if the env needs it, pass --register-envs "
            "MODULE:FUNCTION",
            file=sys.stderr,
        )
    cfg.env.register_envs = hook


def _plot(args: argparse.Namespace) -> int:
    from zeropipe.cli.curves import default_output, plot_runs

    output = args.output or default_output(args.run_dirs)
    plot_runs(args.run_dirs, output, args.x)
    print(f"wrote {output}")
    return EXIT_OK


def _log_to_console(quiet: bool) -> None:
    """Log records on stderr: INFO and above; with `--quiet`, WARNING and above and the INFO
    records marked `SHOWN_QUIET` (the line saying what a resumed run continues from).

    `--quiet` filters the console handler, not the loggers, so the run's own text log
    (`log/train.log`, outputs/text_log.py) still gets the INFO records.
    """
    from zeropipe.outputs.text_log import FORMAT

    root = logging.getLogger()
    before = set(root.handlers)
    logging.basicConfig(level=logging.INFO, format=FORMAT)  # a no-op if root has handlers
    if quiet:
        for handler in set(root.handlers) - before:  # only the one basicConfig added
            handler.addFilter(_quiet_console)


def _quiet_console(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.WARNING or getattr(record, "shown_quiet", False)


def _describe(cfg: ExperimentConfig) -> str:
    """`config --describe`: the Atari fields only for an ALE env (or an id only the config's
    `env.register_envs` registers, which may be one)."""
    from zeropipe.envs import EnvError
    from zeropipe.envs.registry import is_atari

    try:
        atari = is_atari(cfg.env.env_id)
    except EnvError:
        atari = True
    return describe_config(cfg, atari)


def _ignore_late_interrupts() -> tuple[Any, Any]:
    """While the CLI reports a stopped run, another Ctrl-C or SIGTERM is ignored (a second
    KeyboardInterrupt there would print a traceback). Returns the handlers it replaced, which
    `main` puts back before it returns: a caller in the same process (a test, an application
    embedding the CLI) keeps its own. The console script ignores them again for the
    interpreter's teardown (cli/entry.py)."""
    import signal

    return (
        signal.signal(signal.SIGINT, signal.SIG_IGN),
        signal.signal(signal.SIGTERM, signal.SIG_IGN),
    )


def _restore_interrupts(previous: tuple[Any, Any]) -> None:
    import signal

    signal.signal(signal.SIGINT, previous[0])
    signal.signal(signal.SIGTERM, previous[1])


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `zeropipe` console script."""
    try:  # a Ctrl-C is an exit status, never a traceback (the import before: cli/entry.py)
        args = _parser().parse_args(argv)
        _log_to_console(quiet=getattr(args, "quiet", False))
        return _command(args)
    except KeyboardInterrupt as exc:
        previous = _ignore_late_interrupts()
        try:
            note = "".join(f"; {n}" for n in getattr(exc, "__notes__", ()))
            if Terminated.seen:
                print(f"\nzeropipe: terminated (SIGTERM){note}", file=sys.stderr)
                return EXIT_TERMINATED
            print(f"\nzeropipe: interrupted{note}", file=sys.stderr)
            return EXIT_INTERRUPTED
        finally:
            _restore_interrupts(previous)


def _command(args: argparse.Namespace) -> int:
    """Run the command; its errors as one line each and an exit status."""
    import_holding_ctrl_c("torch")  # every command's first import of it: see the function
    from zeropipe.backends.errors import WorkerFailed
    from zeropipe.envs.spec import NonFiniteEnvOutput
    from zeropipe.learner.learner import NonFiniteError
    from zeropipe.outputs.errors import CheckpointError, DiskFull

    try:
        if args.command == "config":  # the env id too, as `train` does, but calls no code
            cfg = load_checked(args.config, args.overrides, run_env_hook=False)
            sys.stdout.write(_describe(cfg) if args.describe else dump_config(cfg))
            return EXIT_OK
        commands = {"train": _train, "eval": _eval, "plot": _plot, "import": run_import}
        return {**commands, "compare": run_compare}[args.command](args)
    except ConfigError as exc:
        for line in exc.lines:  # one line per problem, all of them
            print(f"zeropipe: config error: {line}", file=sys.stderr)
        return EXIT_CONFIG
    except InputError as exc:
        print(f"zeropipe {args.command}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except WorkerFailed as exc:
        print(f"zeropipe: worker failure: {str(exc).rstrip()}", file=sys.stderr)
        return EXIT_ERROR
    except CheckpointError as exc:
        print(f"zeropipe: checkpoint error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except DiskFull as exc:
        print(f"zeropipe: disk full: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except (NonFiniteError, NonFiniteEnvOutput) as exc:
        print(f"zeropipe: stopped, not finite: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
