"""`--resume` continues the run with its own config.yaml; `--init-from` starts a new run from
a checkpoint's weights. Through the real CLI."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from tests.cli.test_cli import TINY, run_cli
from tests.cli.test_run_recovery import files_of, metrics
from zeropipe.outputs.checkpoint_format import encode, read_checkpoint

pytestmark = [pytest.mark.usefixtures("no_leaks"), pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def _trained_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stopped")
    (root / "tiny.yaml").write_text(TINY.format(exp="run"))
    first = run_cli("train", "tiny.yaml", "--quiet", "--set", "policy.num_simulations=3", cwd=root)
    assert first.returncode == 0, first.stderr
    return root


@pytest.fixture
def stopped_run(_trained_once: Path, tmp_path: Path) -> Path:
    """A finished tiny run started with two settings that differ from its YAML file (trained
    once for the module; each test gets its own copy of the directory and the file)."""
    shutil.copytree(_trained_once, tmp_path, dirs_exist_ok=True)
    return tmp_path / "run"


def _config_yaml(run: Path) -> str:
    return (run / "config.yaml").read_text()


def test_resume_from_the_run_directory_keeps_the_runs_own_settings(stopped_run: Path):
    tmp = stopped_run.parent
    last_time_s = metrics(stopped_run)[-1]["time_s"]
    again = run_cli(
        "train", "run", "--resume", "--quiet", "--set", "max_env_step=400", cwd=tmp
    )  # no config file: the run directory
    assert again.returncode == 0, again.stderr
    assert "--resume: max_env_step 240 -> 400" in again.stderr
    assert "num_simulations: 3" in _config_yaml(stopped_run)  # not the file's 4
    resumed = [e for e in metrics(stopped_run) if e["event"] == "resume"]
    assert resumed and resumed[0]["time_s"] >= last_time_s  # time_s continues
    assert metrics(stopped_run)[-1]["envstep"] >= 400


def test_resume_with_the_yaml_file_says_what_it_ignores(stopped_run: Path):
    again = run_cli(
        "train", "tiny.yaml", "--resume", "--quiet", "--set", "max_env_step=300",
        cwd=stopped_run.parent,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "differs in policy.num_simulations (ignored)" in again.stderr
    assert "num_simulations: 3" in _config_yaml(stopped_run)


@pytest.mark.parametrize(
    "override",
    [
        "policy.model.latent_dim=32",
        "policy.num_simulations=50",
        "seed=3",
        "policy.async_pipeline.collect_freshness=reference",  # which weights play which steps
        "policy.async_pipeline.collect_freshness=just_in_time",  # when a collect is launched
    ],
)
def test_a_resume_that_would_change_the_run_is_refused_and_writes_nothing(
    stopped_run: Path, override: str
):
    before = files_of(stopped_run)
    again = run_cli("train", "run", "--resume", "--set", override, cwd=stopped_run.parent)
    assert again.returncode == 2
    key = override.split("=")[0]
    assert again.stderr.count("\n") == 1 and f"--set {key}: it would change the run" in again.stderr
    assert files_of(stopped_run) == before


def test_a_typo_on_resume_is_named_as_an_unknown_key(stopped_run: Path):
    before = files_of(stopped_run)
    again = run_cli("train", "run", "--resume", "--set", "nosuchkey=1", cwd=stopped_run.parent)
    assert again.returncode == 2 and again.stderr.count("\n") == 1, again.stderr
    assert "--set nosuchkey=1: unknown key 'nosuchkey' in the top level" in again.stderr
    assert files_of(stopped_run) == before


def test_a_resumed_runs_progress_line_counts_the_best_eval_of_the_whole_run(stopped_run: Path):
    first_best = max(e["reward_mean"] for e in metrics(stopped_run) if e["event"] == "eval")
    again = run_cli(
        "train", "run", "--resume", "--set", "max_env_step=320", cwd=stopped_run.parent
    )  # not --quiet: the progress line is drawn
    assert again.returncode == 0, again.stderr
    bests = [float(m) for m in re.findall(r"\(best (-?[\d.]+)\)", again.stderr)]
    assert bests and min(bests) >= round(first_best, 1)
    run_best = max(e["reward_mean"] for e in metrics(stopped_run) if e["event"] == "eval")
    assert bests[-1] == round(run_best, 1)


def test_a_run_without_its_latest_checkpoint_is_told_so_not_that_it_has_ended(
    stopped_run: Path,
):
    for latest in (stopped_run / "ckpt").glob("ckpt_latest*"):
        latest.unlink()  # a run SIGKILLed before its first one: its log has no say then
    again = run_cli("train", "run", "--resume", cwd=stopped_run.parent)
    assert again.returncode == 2 and again.stderr.count("\n") == 1, again.stderr
    assert "--resume: no checkpoint at run/ckpt/ckpt_latest.pth.tar" in again.stderr


def test_init_from_starts_a_new_run_from_the_weights(stopped_run: Path):
    tmp = stopped_run.parent
    ckpt = stopped_run / "ckpt" / "ckpt_latest.pth.tar"
    start = run_cli(
        "train", "tiny.yaml", "--quiet", "--init-from", str(ckpt),
        "--set", "exp_name=second", "--set", "max_env_step=16",
        "--set", "policy.train_start_after_envsteps=100000",  # no step: the weights stay
        cwd=tmp,
    )  # fmt: skip
    assert start.returncode == 0, start.stderr
    given = read_checkpoint(ckpt)["learner"]["model"]
    second = read_checkpoint(tmp / "second" / "ckpt" / "ckpt_latest.pth.tar")["learner"]
    assert second["train_iter"] == 0
    for name, tensor in given.items():
        assert torch.equal(second["model"][name], tensor), name
        assert torch.equal(second["target_model"][name], tensor), name


def test_init_from_weights_of_another_architecture_is_one_line(stopped_run: Path):
    tmp = stopped_run.parent
    ckpt = stopped_run / "ckpt" / "ckpt_latest.pth.tar"
    start = run_cli(
        "train", "tiny.yaml", "--init-from", str(ckpt), "--set", "exp_name=third",
        "--set", "policy.model.latent_dim=24", cwd=tmp,
    )  # fmt: skip
    assert start.returncode == 2
    (line,) = start.stderr.splitlines()
    assert line.startswith(f"zeropipe: config error: --init-from: the weights in {ckpt} do not fit")
    # the tensor, and the setting that differs named in full, as in the YAML file
    assert "(representation.out.weight is (16, 16) there, (24, 16) here)" in line
    assert ": policy.model.latent_dim 16 there, 24 here (its run's config, " in line
    assert line.endswith("; set them as there, or start without --init-from")
    assert not (tmp / "third").exists()
    assert json.loads((stopped_run / "log" / "metrics.jsonl").read_text().splitlines()[-1])


def test_resuming_a_copied_run_writes_to_the_copy_and_leaves_the_original(stopped_run: Path):
    tmp = stopped_run.parent
    subprocess.run(["cp", "-a", "run", "backup"], cwd=tmp, check=True, timeout=60)
    before = files_of(stopped_run)
    again = run_cli("train", "backup", "--resume", "--quiet", "--set", "max_env_step=300", cwd=tmp)
    assert again.returncode == 0, again.stderr
    assert "--resume: exp_name 'run' -> 'backup'" in again.stderr
    assert files_of(stopped_run) == before
    assert metrics(tmp / "backup")[-1]["envstep"] >= 300
    assert "exp_name: backup" in _config_yaml(tmp / "backup")


def test_resume_by_absolute_path_from_another_directory(stopped_run: Path):
    elsewhere = stopped_run.parent / "elsewhere"
    elsewhere.mkdir()
    again = run_cli(
        "train", str(stopped_run.absolute()), "--resume", "--quiet", "--set", "max_env_step=300",
        cwd=elsewhere,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert metrics(stopped_run)[-1]["envstep"] >= 300
    assert not list(elsewhere.iterdir())


def test_a_resume_that_fails_to_start_leaves_config_yaml_as_it_was(stopped_run: Path):
    latest = stopped_run / "ckpt" / "ckpt_latest.pth.tar"
    payload = read_checkpoint(latest)
    model = payload["learner"]["model"]
    model[next(iter(model))] = torch.zeros(1)  # weights that do not fit the run's network
    torch.save(encode(payload), latest)
    config_yaml = (stopped_run / "config.yaml").read_bytes()
    again = run_cli(
        "train", "run", "--resume", "--quiet", "--set", "max_env_step=400",
        cwd=stopped_run.parent,
    )  # fmt: skip
    assert again.returncode != 0
    assert (stopped_run / "config.yaml").read_bytes() == config_yaml


def test_a_bad_set_value_on_resume_is_blamed_on_the_set(stopped_run: Path):
    again = run_cli(
        "train", "run", "--resume", "--quiet", "--set", "max_env_step=abc", cwd=stopped_run.parent
    )
    assert again.returncode == 2 and again.stderr.count("\n") == 1, again.stderr
    assert again.stderr.startswith("zeropipe: config error: --set max_env_step=abc: max_env_step")


def test_resuming_a_run_at_its_max_env_step_trains_nothing_and_says_what_to_raise(
    stopped_run: Path,
):
    before = files_of(stopped_run)
    again = run_cli("train", "run", "--resume", "--quiet", cwd=stopped_run.parent)
    assert again.returncode == 0, again.stderr
    (line,) = again.stderr.splitlines()
    assert line.startswith("zeropipe: the run has met its stop rule already (env step ")
    assert ">= max_env_step 240;" in line and "nothing to train" in line
    assert line.endswith("zeropipe train run --resume --set max_env_step=...")
    assert files_of(stopped_run) == before


def test_resuming_a_run_that_met_its_stop_value_trains_nothing_until_it_is_raised(
    tmp_path: Path,
):
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run"))
    first = run_cli(  # the chain's return is 1: the first eval meets 0.5
        "train", "tiny.yaml", "--quiet", "--set", "env.stop_value=0.5", cwd=tmp_path
    )
    assert first.returncode == 0 and "stopped: stop_value" in first.stderr, first.stderr
    run = tmp_path / "run"
    before = files_of(run)
    again = run_cli("train", "run", "--resume", "--quiet", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    (line,) = again.stderr.splitlines()
    assert "(eval reward_mean 1 >= env.stop_value 0.5; its latest checkpoint is at" in line
    assert line.endswith("zeropipe train run --resume --set env.stop_value=...")
    assert files_of(run) == before
    envstep = metrics(run)[-1]["envstep"]
    raised = run_cli(
        "train", "run", "--resume", "--quiet", "--set", "env.stop_value=2",
        "--set", f"max_env_step={envstep + 8}", cwd=tmp_path,
    )  # fmt: skip
    assert raised.returncode == 0, raised.stderr
    assert metrics(run)[-1]["event"] == "stop" and metrics(run)[-1]["envstep"] >= envstep + 8
