"""Every `zeropipe ...` command line of README.md and docs/ runs as written and exits 0, so the
pages cannot show a command that no longer works (tests/test_docs.py only parses them).

Each distinct command runs once, through the CLI's entry point (`zeropipe.cli.main.main`, what
the console script calls), in a fresh working directory that holds what the command names:
- `configs/NAME.yaml`: a copy of the repository's file on the small budget of the Python-block
  test (tests/test_readme.py), so a training command runs end to end in seconds;
- a run directory (`RUN_DIR`, `runs/...`): a copy of one run stopped by SIGTERM after its first
  eval, as a user's stopped run is (so `--resume` has something to do, `eval` a best checkpoint);
  `EXP` is a directory of two such runs as `seed_0`, `seed_1`, what `--seeds` makes;
- a LightZero file that `zeropipe import` reads: the import tests' file of that name;
- a YAML file another documented command writes (`zeropipe import ... -o FILE`): that command
  run first, its output then put on the small budget.

The pages' placeholders stand for those paths (`PLACEHOLDERS`). Two words change: the status
endpoint's example port becomes port 0 (a free one), since a fixed port may be taken on a test
machine; and the one command that joins a Ray cluster started beforehand with `ray start`
(`ray_address=auto`, docs/guide/cluster.md) is skipped: the Ray backend's own CLI test runs a
run on a private Ray instead. After each command no child process and no shared-memory block is
left.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.cli.test_cli import cli_env
from tests.leaks import shm_blocks
from tests.runlog import wait_for_event
from tests.test_docs import ZEROPIPE_COMMANDS
from tests.test_readme import CONFIG_PATH, tiny_copy, tiny_file
from zeropipe.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
LIGHTZERO_FILES = ROOT / "tests" / "config" / "fixtures" / "lightzero"
EARLIER_CONFIG = "configs/cartpole_muzero.yaml"
PLACEHOLDERS = {
    "CONFIG": EARLIER_CONFIG,
    "RUN_DIR": "runs/earlier",
    "RUN_DIR...": "runs/earlier",
    "RUN": "runs/earlier",
    "RUN_A": "runs/earlier",  # `compare`: a run against itself is the same run
    "RUN_B": "runs/earlier",
    "EXP": "runs/seeds",
}
SEEDS_DIR = "runs/seeds"
WORDS = {"127.0.0.1:9100": "127.0.0.1:0"}
NEEDS_A_RAY_CLUSTER = "policy.async_pipeline.ray_address=auto"


def _as_run(argv: list[str]) -> tuple[str, ...]:
    """A documented argv with its placeholders (whole path parts) and words replaced."""
    run = []
    for word in argv:
        word = "/".join(PLACEHOLDERS.get(part, part) for part in word.split("/"))
        run.append(WORDS.get(word, word))
    return tuple(run)


def _distinct_commands() -> dict[tuple[str, ...], list[str]]:
    """Each distinct command as run -> the pages that show it."""
    commands: dict[tuple[str, ...], list[str]] = {}
    for where, argv in ZEROPIPE_COMMANDS:
        commands.setdefault(_as_run(argv), []).append(where.split(":", 1)[0])
    return commands


COMMANDS = _distinct_commands()
# file -> the documented import command that writes it (`zeropipe import X -o FILE`)
WRITTEN_BY = {
    argv[argv.index("-o") + 1]: argv
    for argv in COMMANDS
    if argv[0] == "import" and "-o" in argv[:-1]
}


@pytest.fixture(scope="module")
def earlier_run(tmp_path_factory) -> Path:
    """A run of the small-budget CartPole config stopped by SIGTERM after its first eval: its
    directory, with ckpt_latest and ckpt_best and budget left to resume."""
    cwd = tmp_path_factory.mktemp("earlier")
    tiny_copy(EARLIER_CONFIG, cwd)
    run = cwd / "runs" / "earlier"
    train = ["train", EARLIER_CONFIG, "--quiet", "--set", f"exp_name={run}"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "zeropipe", *train, "--set", "max_env_step=600"],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    try:
        asyncio.run(wait_for_event(run, lambda e: e["event"] == "eval", timeout_s=150))
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0, f"the run ended before the SIGTERM; give it more budget:\n{err}"
    assert (run / "ckpt" / "ckpt_best.pth.tar").is_file(), err
    return run


def _prepare(argv: tuple[str, ...], cwd: Path, earlier: Path) -> None:
    """Put in `cwd` what `argv` names (see the module docstring)."""
    for word in argv:
        if CONFIG_PATH.fullmatch(word):
            tiny_copy(word, cwd)
        elif argv[0] == "import" and word.endswith(".py"):
            shutil.copy(LIGHTZERO_FILES / word, cwd / word)
        elif word.startswith("runs/"):
            root = "/".join(word.split("/")[:2])
            seeds = ["seed_0", "seed_1"] if root == SEEDS_DIR else [""]
            for seed in seeds:
                if not (cwd / root / seed).exists():
                    shutil.copytree(earlier, cwd / root / seed)
        elif argv[0] == "train" and word in WRITTEN_BY:
            _prepare(WRITTEN_BY[word], cwd, earlier)
            assert _run(WRITTEN_BY[word])[0] == 0
            tiny_file(cwd / word)


def _run(argv: tuple[str, ...]) -> tuple[int, str]:
    """`zeropipe ARGV` in the current directory: its exit status and what it wrote."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(argv))
    return code, out.getvalue()


def _children() -> list[str]:
    """This process's live child processes (multiprocessing's resource tracker aside)."""
    path = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    left = []
    for pid in path.read_text().split():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if cmdline and b"multiprocessing.resource_tracker" not in cmdline:
            left.append(f"{pid}: {cmdline!r}")
    return left


def test_the_pages_commands_stand_for_runnable_ones():
    assert len(COMMANDS) >= 15
    placeholders_left = [a for a in COMMANDS if any(w.isupper() and "_" in w for w in a)]
    assert placeholders_left == []
    assert WRITTEN_BY  # the LightZero page imports a file, then trains it


@pytest.mark.timeout(300)
@pytest.mark.parametrize("argv", list(COMMANDS), ids=[" ".join(a) for a in COMMANDS])
def test_a_documented_command_runs(argv, earlier_run, tmp_path, monkeypatch):
    if NEEDS_A_RAY_CLUSTER in argv:
        pytest.skip("joins a Ray cluster started beforehand (the Ray CLI test runs its own)")
    monkeypatch.chdir(tmp_path)
    _prepare(argv, tmp_path, earlier_run)
    before = shm_blocks()
    code, said = _run(argv)
    where = ", ".join(COMMANDS[argv])
    assert code == 0, f"zeropipe {' '.join(argv)} ({where}) exited {code}:\n{said[-3000:]}"
    assert _children() == []
    assert shm_blocks() - before == set()


def test_a_yaml_on_the_small_budget_keeps_its_other_fields(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"seed": 3, "max_env_step": 10**6, "policy": {"type": "x"}}))
    tiny_file(config)
    raw = yaml.safe_load(config.read_text())
    assert raw["seed"] == 3 and raw["policy"]["type"] == "x"
    assert raw["max_env_step"] < 10**6 and raw["policy"]["num_simulations"] < 25
