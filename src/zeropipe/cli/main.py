"""Command line: `zeropipe train | config | eval`.

Runs in: driver. A thin layer: it parses arguments, loads and checks the config (before anything is
written to the run directory), and calls the pipeline. Exit status: 0 when a run ended by its own
stop rule, 2 for a bad configuration (including an exp_name that already holds a run, without
--resume), 130 after Ctrl-C, 1 for any other error (a worker failure, an unreadable checkpoint on
--resume, a final checkpoint that could not be written).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from zeropipe.config import ConfigError, ExperimentConfig, dump_config, load_config

log = logging.getLogger("zeropipe.cli")

EXIT_OK, EXIT_ERROR, EXIT_CONFIG, EXIT_INTERRUPTED = 0, 1, 2, 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="zeropipe", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("config", help="experiment YAML file, e.g. configs/cartpole_muzero.yaml")
    common.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field, e.g. --set policy.batch_size=64 (repeatable)",
    )
    train = sub.add_parser("train", parents=[common], help="train an agent")
    train.add_argument(
        "--async-pipeline",
        action="store_true",
        help="use the async segment pipeline (same as policy.async_pipeline.enabled: true)",
    )
    train.add_argument("--quiet", action="store_true", help="no progress line or info logs")
    train.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in exp_name from ckpt/ckpt_latest.pth.tar (learner, buffer, "
        "counters, RNG); without it, an exp_name that already holds a run is refused",
    )
    sub.add_parser("config", parents=[common], help="print the resolved config")
    return parser


def load_checked(path: str, overrides: Sequence[str]) -> ExperimentConfig:
    """Load the config and check everything that can be checked before a run starts.

    Raises:
        ConfigError: bad file, key, value, env id or policy type.
    """
    from zeropipe.algos.registry import UnsupportedPolicyError, algo_spec
    from zeropipe.envs import EnvError, check_env_id

    cfg = load_config(path, overrides)
    try:
        check_env_id(cfg.env.env_id)
    except EnvError as exc:
        raise ConfigError(f"env.env_id: {exc}") from None
    try:
        algo_spec(cfg.policy.type)
    except UnsupportedPolicyError as exc:
        raise ConfigError(str(exc)) from None
    return cfg


def _train(args: argparse.Namespace) -> int:
    cfg = load_checked(args.config, args.overrides)
    if args.async_pipeline:
        cfg.policy.async_pipeline.enabled = True
    if cfg.policy.async_pipeline.enabled:
        from zeropipe.pipeline.async_driver import check_async_options

        check_async_options(cfg)  # before anything is written
        summary = _run_async(cfg, show_progress=not args.quiet, resume=args.resume)
    else:
        from zeropipe.pipeline.sync import train_sync

        summary = train_sync(cfg, resume=args.resume)
    print(
        f"stopped: {summary.stop_reason} at env step {summary.envstep}, train_iter "
        f"{summary.train_iter}, best eval {summary.best_reward}, {summary.wall_s:.0f}s; "
        f"outputs in {cfg.exp_name}/",
        file=sys.stderr,
    )
    return EXIT_OK


def _run_async(cfg: ExperimentConfig, show_progress: bool, resume: bool):
    """Run the driver coroutine on a fresh loop: uvloop when installed, asyncio otherwise.

    asyncio.Runner turns Ctrl-C into a cancellation of the driver task (which stops the workers and
    writes the final checkpoint) and then raises KeyboardInterrupt.
    """
    import asyncio

    from zeropipe.pipeline.async_driver import train_async

    try:
        import uvloop

        factory = uvloop.new_event_loop
    except ImportError:  # pragma: no cover - uvloop is a dependency on POSIX
        factory = None
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            return runner.run(train_async(cfg, show_progress=show_progress, resume=resume))
    finally:
        _stop_resource_tracker()


def _stop_resource_tracker() -> None:
    """Reap multiprocessing's resource-tracker process before the CLI exits.

    The driver's shared-memory blocks are all unlinked by now; without this the tracker outlives
    the driver for a moment and, under an init that does not reap orphans (containers), stays as
    a zombie. Only the CLI does this: an embedding application may still need its tracker.
    """
    from multiprocessing import resource_tracker

    stop = getattr(resource_tracker._resource_tracker, "_stop", None)
    if stop is not None:
        stop()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `zeropipe` console script."""
    args = _parser().parse_args(argv)
    quiet = getattr(args, "quiet", False)
    logging.basicConfig(
        level=logging.WARNING if quiet else logging.INFO,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
    )
    from zeropipe.pipeline.errors import CheckpointError, WorkerFailed

    try:
        if args.command == "config":
            sys.stdout.write(dump_config(load_config(args.config, args.overrides)))
            return EXIT_OK
        return _train(args)
    except ConfigError as exc:
        print(f"zeropipe: config error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        print("\nzeropipe: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except WorkerFailed as exc:
        print(f"zeropipe: worker failure: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except CheckpointError as exc:
        print(f"zeropipe: checkpoint error: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
