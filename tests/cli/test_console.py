"""What the console shows: `--version`, and `--quiet` silencing the progress line in both
pipelines (only the one `stopped:` line is left), with the best eval rounded."""

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
