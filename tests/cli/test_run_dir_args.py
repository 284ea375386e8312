"""A run directory where a file was expected: `eval RUN_DIR` scores its checkpoint, `train RUN_DIR`
without --resume says to add it, `plot` without -o writes next to the runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_cli import TINY, run_cli

SHORT = TINY.replace("max_env_step: 240", "max_env_step: 40")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`runs/a` and `runs/b`: two finished tiny runs (seeds 0 and 1)."""
    root = tmp_path_factory.mktemp("runs")
    for name, seed in (("a", 0), ("b", 1)):
        config = root / f"{name}.yaml"
        config.write_text(SHORT.format(exp=f"runs/{name}").replace("seed: 0", f"seed: {seed}"))
        proc = run_cli("train", str(config), "--quiet", cwd=root)
        assert proc.returncode == 0, proc.stderr
    return root / "runs"


@pytest.mark.timeout(300)
def test_eval_a_run_directory_scores_its_best_checkpoint(runs: Path):
    proc = run_cli("eval", "a", "--episodes", "1", cwd=runs)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("episodes 1 ")


@pytest.mark.timeout(300)
def test_eval_falls_back_to_the_latest_checkpoint(runs: Path, tmp_path: Path):
    run = tmp_path / "run"
    (run / "ckpt").mkdir(parents=True)
    (run / "config.yaml").write_bytes((runs / "a" / "config.yaml").read_bytes())
    latest = (runs / "a" / "ckpt" / "ckpt_latest.pth.tar").read_bytes()
    (run / "ckpt" / "ckpt_latest.pth.tar").write_bytes(latest)
    proc = run_cli("eval", str(run), "--episodes", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("episodes 1 ")


def test_eval_a_directory_without_checkpoints_is_one_line(tmp_path: Path):
    proc = run_cli("eval", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "without ckpt/ckpt_best.pth.tar or ckpt/ckpt_latest.pth.tar" in proc.stderr


def test_train_a_run_directory_without_resume_says_to_add_it(tmp_path: Path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(SHORT.format(exp="run"))
    proc = run_cli("train", "run", "--quiet", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "add --resume" in proc.stderr and "Is a directory" not in proc.stderr


@pytest.mark.timeout(300)
def test_plot_without_output_writes_next_to_the_runs(runs: Path, tmp_path: Path):
    proc = run_cli("plot", str(runs / "a"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"wrote {runs / 'a' / 'curves.png'}\n"
    assert (runs / "a" / "curves.png").is_file() and not (tmp_path / "curves.png").exists()
    proc = run_cli("plot", str(runs / "a"), str(runs / "b"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"wrote {runs.resolve() / 'curves.png'}\n"
    assert not (tmp_path / "curves.png").exists()


def test_config_of_a_run_directory_names_its_config_yaml(tmp_path: Path):
    (tmp_path / "run").mkdir()
    proc = run_cli("config", "run", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert (
        "run is a directory, not a YAML file (a run? its config is run/config.yaml" in proc.stderr
    )
