"""`zeropipe import` through the real CLI: each reference config (fixtures in its format) imports,
and the written YAML trains 500 env steps. The Atari ones are slow (ALE frames, conv nets) and
run with small search, batch and segment sizes: what is checked is that the imported file trains,
not how well."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.cli.test_cli import run_cli

FIXTURES = Path(__file__).resolve().parents[1] / "config" / "fixtures" / "lightzero"
BUDGET = ["--set", "max_env_step=500", "--set", "exp_name=run"]
SMALL = [
    "--set", "policy.num_simulations=4",
    "--set", "policy.batch_size=8",
    "--set", "env.eval_max_episode_steps=50",
]  # fmt: skip
SMALL_ATARI = [*SMALL, "--set", "policy.game_segment_length=20", "--set", "env.collector_env_num=2"]


def _import(tmp_path: Path, name: str) -> Path:
    out = tmp_path / "imported.yaml"
    proc = run_cli("import", str(FIXTURES / name), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(f"imported {name}: ")
    assert yaml.safe_load(out.read_text())["policy"]["type"]
    return out


def _train(tmp_path: Path, config: Path, extra: list[str]) -> None:
    proc = run_cli("train", str(config), "--quiet", *BUDGET, *extra, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = [
        json.loads(line)
        for line in (tmp_path / "run" / "log" / "metrics.jsonl").read_text().splitlines()
    ]
    assert events[-1]["event"] == "stop" and events[-1]["envstep"] >= 500
    assert events[-1]["train_iter"] > 0  # it learned, not only collected


@pytest.mark.timeout(400)
def test_cartpole_muzero_imports_and_trains_500_env_steps(tmp_path: Path):
    config = _import(tmp_path, "cartpole_muzero_config.py")
    _train(tmp_path, config, [])
    saved = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert saved["policy"]["num_simulations"] == 25 and saved["policy"]["batch_size"] == 256


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "name",
    [
        "cartpole_efficientzero_config.py",
        "cartpole_unizero_config.py",
        "pendulum_sampled_efficientzero_config.py",
    ],
)
def test_a_classic_control_config_imports_and_trains_500_env_steps(tmp_path: Path, name: str):
    _train(tmp_path, _import(tmp_path, name), SMALL)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("atari_muzero_config.py", []),
        ("atari_unizero_config.py", ["--set", "policy.train_start_after_envsteps=0"]),
    ],
)
def test_an_atari_config_imports_and_trains_500_env_steps(tmp_path: Path, name: str, extra):
    _train(tmp_path, _import(tmp_path, name), [*SMALL_ATARI, *extra])


def test_the_report_names_every_kind_and_the_yaml_goes_to_stdout(tmp_path: Path):
    proc = run_cli("import", str(FIXTURES / "atari_muzero_config.py"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = proc.stderr.splitlines()
    assert any(line.startswith("mapped        policy.model.model_type -> ") for line in report)
    assert any(line.startswith("dropped       env.manager: ") for line in report)
    assert any(line.startswith("not supported policy.use_augmentation: ") for line in report)
    assert report[-1].endswith("2 not supported; wrote stdout")
    assert yaml.safe_load(proc.stdout)["env"]["env_id"] == "PongNoFrameskip-v4"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("main_config = dict(policy=dict(num_simulations=load()))\n", "line 2: policy.num"),
        ("import os\n", "no main_config"),
    ],
)
def test_a_file_that_cannot_be_imported_is_one_line_and_writes_nothing(
    tmp_path: Path, text: str, words: str
):
    source = tmp_path / "lz_config.py"
    source.write_text("create_config = dict(policy=dict(type='muzero'))\n" + text)
    proc = run_cli("import", str(source), "-o", str(tmp_path / "out.yaml"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr
    assert not (tmp_path / "out.yaml").exists()


def test_an_existing_output_is_not_overwritten(tmp_path: Path):
    out = tmp_path / "out.yaml"
    out.write_text("mine\n")
    proc = run_cli(
        "import", str(FIXTURES / "cartpole_muzero_config.py"), "-o", str(out), cwd=tmp_path
    )
    assert proc.returncode == 2 and "exists" in proc.stderr
    assert out.read_text() == "mine\n"
