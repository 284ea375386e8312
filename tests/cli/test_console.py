"""What the console shows: `--version`, and `--quiet` silencing the progress line in both
pipelines (only the one `stopped:` line is left), with the best eval rounded; a resumed `--quiet`
run still says what it continues from."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_cli import TINY, run_cli

pytestmark = [pytest.mark.usefixtures("no_leaks"), pytest.mark.timeout(240)]


def test_version(tmp_path: Path):
    done = run_cli("--version", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("zeropipe 0.")


@pytest.mark.parametrize(
    "pipeline",  # both go through _log_to_console and show_progress; async has more to silence
    [
        pytest.param([], id="sync", marks=pytest.mark.slow),
        pytest.param(["--async-pipeline"], id="async"),
    ],
)
def test_quiet_leaves_only_the_stopped_line(tmp_path: Path, pipeline: list[str]):
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run"))
    done = run_cli("train", "tiny.yaml", "--quiet", *pipeline, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("stopped: "), done.stderr
    best = lines[0].split("best eval ")[1].split(",")[0]
    assert best == "-" or len(best.split(".")[1]) == 2  # rounded: 26.33, not 26.333333333333332


def test_a_quiet_resume_says_what_it_resumed_from(tmp_path: Path):
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run").replace("240", "48"))
    first = run_cli("train", "tiny.yaml", "--quiet", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    at = first.stderr.split(" at ")[1].split(", best")[0]  # "env step N, train_iter M"
    done = run_cli("train", "run", "--resume", "--quiet", "--set", "max_env_step=96", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "resumed from" in line]
    assert len(said) == 1, done.stderr
    ckpt = str(Path("run") / "ckpt" / "ckpt_latest.pth.tar")
    assert said[0].endswith(f"resumed from {ckpt} at {at}"), said
