"""`zeropipe train CONFIG --seeds 0 1 2 [--jobs N]`: one run per seed, named `EXP/seed_S`.

Runs in: driver (the CLI process), which checks the config once, then starts each seed's run as
its own `zeropipe train` process (at most `--jobs` at a time) and waits for them. The runs are
ordinary runs: each one is resumed, evaluated and plotted on its own (`zeropipe plot EXP` draws
them as one band). The children run in their own sessions, so a Ctrl-C on the terminal reaches
this process only; it passes one SIGINT (SIGTERM after a SIGTERM) to each running child, which
writes its final checkpoint as a lone run would, and starts no further seed.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from zeropipe.cli.async_run import Terminated, sigterm_as_ctrl_c
from zeropipe.config import ConfigError, ExperimentConfig

SEED_DIR = "seed_{seed}"


def add_seed_arguments(train: argparse.ArgumentParser) -> None:
    """`--seeds` and `--jobs` of `zeropipe train`."""
    train.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        metavar="S",
        help="train one run per seed, named EXP/seed_S (EXP: the config's exp_name), each its "
        "own process; `zeropipe plot EXP` draws them as one band",
    )
    train.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="with --seeds: runs at a time (default 1; above 1 the runs are --quiet and each "
        "one's last lines are printed when it ends)",
    )


def train_seeds(
    args: argparse.Namespace, check: Callable[[str, Sequence[str]], ExperimentConfig]
) -> int:
    """`train --seeds`: the config checked once (`check`: the CLI's `load_checked`), then one
    child run per seed.

    Returns:
        0 when every seed's run exited 0, else the first other exit status in seed order.

    Raises:
        ConfigError: a bad config, option or seed list, or a seed whose run directory exists.
        KeyboardInterrupt: after a Ctrl-C or SIGTERM, once every started run has stopped.
    """
    if args.resume or args.status is not None or args.jobs < 1:
        raise ConfigError(
            "--seeds starts new runs, --jobs 1 or more, without --resume (continue each run: "
            "train EXP/seed_S --resume) or --status"
        )
    cfg = check(args.config, args.overrides)
    dirs = seed_run_dirs(cfg.exp_name, args.seeds)
    quiet = args.quiet or args.jobs > 1
    commands = {s: child_command(args, s, d, quiet) for s, d in zip(args.seeds, dirs, strict=True)}
    sigterm_as_ctrl_c()
    codes = SeedRuns(commands, min(args.jobs, len(commands))).run()
    print(summary_line(cfg.exp_name, codes), file=sys.stderr)
    return next((code for code in codes.values() if code), 0)


def seed_run_dirs(exp_name: str, seeds: list[int]) -> list[Path]:
    """The run directory of each seed, `exp_name/seed_S`.

    Raises:
        ConfigError: a seed given twice, or run directories that already exist (each named,
            one line each).
    """
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        raise ConfigError(f"--seeds: {' '.join(map(str, repeated))} given more than once")
    dirs = [Path(exp_name) / SEED_DIR.format(seed=s) for s in seeds]
    taken = [
        f"--seeds: {d} already holds a run; continue it with `zeropipe train {d} --resume`, or "
        "pick another exp_name"
        for d in dirs
        if d.exists()
    ]
    if taken:
        raise ConfigError("\n".join(taken))
    return dirs


def child_command(args: argparse.Namespace, seed: int, run_dir: Path, quiet: bool) -> list[str]:
    """The `zeropipe train` command line of one seed's run."""
    command = [sys.executable, "-m", "zeropipe", "train", args.config]
    for item in args.overrides:
        command += ["--set", item]
    command += ["--set", f"seed={seed}", "--set", f"exp_name={json.dumps(str(run_dir))}"]
    if args.async_pipeline:
        command.append("--async-pipeline")
    if quiet:
        command.append("--quiet")
    if args.init_from is not None:
        command += ["--init-from", str(args.init_from)]
    return command


@dataclass
class SeedRuns:
    """The seeds' child processes: started at most `jobs` at a time, stopped together."""

    commands: dict[int, list[str]]  # seed -> its command line
    jobs: int
    stopping: bool = False
    running: dict[int, subprocess.Popen] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self) -> dict[int, int | None]:
        """Every seed's exit status (None: not started, after a stop)."""
        with ThreadPoolExecutor(self.jobs, thread_name_prefix="seed") as pool:
            futures = {seed: pool.submit(self._one, seed) for seed in self.commands}
            try:
                return {seed: future.result() for seed, future in futures.items()}
            except KeyboardInterrupt as exc:
                self.stop()
                for future in futures.values():
                    future.result()
                exc.add_note("each started seed's run wrote its final checkpoint")
                raise

    def stop(self) -> None:
        """Start no further seed, and pass the interrupt to each running one."""
        sig = signal.SIGTERM if Terminated.seen else signal.SIGINT
        with self.lock:
            self.stopping = True
            for proc in self.running.values():
                proc.send_signal(sig)

    def _one(self, seed: int) -> int | None:
        quiet = self.jobs > 1
        with tempfile.TemporaryFile("w+") if quiet else _NoFile() as err:
            with self.lock:
                if self.stopping:
                    return None
                print(f"zeropipe: seed {seed}: starting", file=sys.stderr, flush=True)
                self.running[seed] = proc = subprocess.Popen(
                    self.commands[seed], stderr=err, start_new_session=True
                )
            code = proc.wait()
            with self.lock:
                del self.running[seed]
            if quiet:
                err.seek(0)
                for line in filter(None, err.read().splitlines()):
                    print(f"zeropipe: seed {seed}: {line}", file=sys.stderr, flush=True)
        return code


class _NoFile:
    """The child's stderr is ours (`stderr=None`): its progress line shows live."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def summary_line(exp_name: str, codes: dict[int, int | None]) -> str:
    """What each seed's run ended with, and how to draw them."""
    ends = ", ".join(
        f"{seed}: {'not started' if code is None else f'exit {code}'}"
        for seed, code in codes.items()
    )
    return f"zeropipe: seeds of {exp_name}/ ({ends}); draw them: zeropipe plot {exp_name}"
