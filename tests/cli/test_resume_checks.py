"""Resume's checks, through the real CLI: a checkpoint that is not the run's network, a newest
checkpoint that is unreadable, a run directory that lost its config.yaml."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.test_cli import TINY, run_cli
from tests.cli.test_run_recovery import files_of, metrics
from zeropipe.outputs.checkpoint_format import read_checkpoint

pytestmark = [pytest.mark.usefixtures("no_leaks"), pytest.mark.timeout(300)]


def _train(tmp: Path, name: str, *sets: str) -> Path:
    done = run_cli(
        "train", "tiny.yaml", "--quiet", "--set", f"exp_name={name}", "--set", "max_env_step=48",
        *sets, cwd=tmp,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return tmp / name


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run"))
    return tmp_path


def test_a_checkpoint_of_another_network_is_one_line_and_writes_nothing(tiny: Path):
    run = _train(tiny, "run")
    other = _train(tiny, "other", "--set", "policy.model.latent_dim=8")
    shutil.copy(other / "ckpt" / "ckpt_latest.pth.tar", run / "ckpt" / "ckpt_latest.pth.tar")
    before = files_of(run)
    proc = run_cli("train", "run", "--resume", "--quiet", "--set", "max_env_step=96", cwd=tiny)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    notes, line = proc.stderr.strip().splitlines()  # the --set note, then the error
    assert notes == "zeropipe: --resume: max_env_step 48 -> 96"
    assert line.startswith("zeropipe: checkpoint error: --resume: run/ckpt/ckpt_latest.pth.tar")
    assert "holds another network" in line and "(8, " in line
    assert files_of(run) == before  # no tfevents file, no config.yaml rewritten, no log line


def test_after_falling_back_to_the_previous_checkpoint_it_is_kept(tiny: Path):
    """The newest checkpoint is unreadable, the run resumes from the previous one; its next
    save must keep that good one as the previous, not the unreadable one."""
    run = _train(tiny, "run")
    _train_more = run_cli(
        "train", "run", "--resume", "--quiet", "--set", "max_env_step=96", cwd=tiny
    )
    assert _train_more.returncode == 0, _train_more.stderr
    ckpt = run / "ckpt"
    good = read_checkpoint(ckpt / "ckpt_latest.prev.pth.tar")
    (ckpt / "ckpt_latest.pth.tar").write_bytes(b"PK\x03\x04 truncated")  # a disk's bad block
    again = run_cli(
        "train", "run", "--resume", "--quiet", "--set", "max_env_step=120",
        "--set", "checkpoint.latest_interval_train_iter=100000", cwd=tiny,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    resume = [e for e in metrics(run) if e["event"] == "resume"][-1]
    assert resume["checkpoint"].endswith("ckpt_latest.prev.pth.tar")
    kept = read_checkpoint(ckpt / "ckpt_latest.prev.pth.tar")  # not the truncated file
    assert kept["learner"]["train_iter"] == good["learner"]["train_iter"] == resume["train_iter"]
    assert (
        read_checkpoint(ckpt / "ckpt_latest.pth.tar")["learner"]["train_iter"]
        > kept["learner"]["train_iter"]
    )


def test_a_run_without_its_config_yaml_says_what_to_do(tiny: Path):
    run = _train(tiny, "run")
    (run / "config.yaml").unlink()
    proc = run_cli("train", "run", "--resume", "--quiet", "--set", "max_env_step=96", cwd=tiny)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("zeropipe: config error: --resume: run has a checkpoint")
    assert "has a checkpoint but no config.yaml" in line
    assert "zeropipe train CONFIG --resume --set exp_name=run" in line
    advised = run_cli(  # the advice works
        "train", "tiny.yaml", "--resume", "--quiet", "--set", "exp_name=run",
        "--set", "max_env_step=96", cwd=tiny,
    )  # fmt: skip
    assert advised.returncode == 0, advised.stderr
