"""`zeropipe train CONFIG --seeds ...` and `zeropipe plot EXP`, through the real CLI."""

from __future__ import annotations

import os
from pathlib import Path

import imageio.v3 as iio
import pytest
import yaml

from tests.cli.test_cli import TINY, run_cli
from tests.leaks import shm_blocks


def descendants() -> set[int]:
    """Pids of live processes below this one (a seed's run left behind would be one)."""
    me, found = os.getpid(), set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        pid = int(entry)
        while pid > 1:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                break
            pid = int(stat.rsplit(")", 1)[1].split()[1])
            if pid == me:
                found.add(int(entry))
                break
    return found


@pytest.mark.timeout(600)
def test_three_seeds_make_three_runs_and_one_band(tmp_path: Path):
    shm_before, procs_before = shm_blocks(), descendants()
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY.format(exp="runs/exp").replace("eval_freq: 20", "eval_freq: 4"))
    proc = run_cli(
        "train", str(config), "--seeds", "0", "1", "2", "--jobs", "2",
        "--set", "max_env_step=48", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for seed in (0, 1, 2):
        run = tmp_path / "runs" / "exp" / f"seed_{seed}"
        cfg = yaml.safe_load((run / "config.yaml").read_text())
        exp = str(run.relative_to(tmp_path))
        assert (cfg["seed"], cfg["exp_name"], cfg["max_env_step"]) == (seed, exp, 48)
        assert (run / "ckpt" / "ckpt_latest.pth.tar").is_file()
        assert (
            sum(
                f"zeropipe: seed {seed}: stopped: max_env_step" in line
                for line in proc.stderr.splitlines()
            )
            == 1
        ), proc.stderr
    assert "zeropipe plot runs/exp" in proc.stderr.splitlines()[-1]
    proc = run_cli("plot", "runs/exp", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "wrote runs/exp/curves.png\n"
    assert iio.imread(tmp_path / "runs" / "exp" / "curves.png").ndim == 3
    assert descendants() == procs_before and shm_blocks() == shm_before


@pytest.mark.timeout(150)
def test_a_seed_whose_run_exists_refuses_them_all(tmp_path: Path):
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY.format(exp="exp"))
    for seed in (1, 2):
        (tmp_path / "exp" / f"seed_{seed}").mkdir(parents=True)
    proc = run_cli("train", str(config), "--seeds", "0", "1", "2", cwd=tmp_path)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 2, proc.stderr
    for seed, line in zip((1, 2), lines, strict=True):
        assert line.startswith(f"zeropipe: config error: --seeds: exp/seed_{seed} already holds")
        assert f"train exp/seed_{seed} --resume" in line
    assert not (tmp_path / "exp" / "seed_0").exists()


@pytest.mark.timeout(150)
def test_a_bad_config_is_reported_once_not_per_seed(tmp_path: Path):
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY.format(exp="exp").replace("batch_size", "batch_sise"))
    proc = run_cli("train", str(config), "--seeds", "0", "1", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "policy.batch_sise" in proc.stderr and not (tmp_path / "exp").exists()
