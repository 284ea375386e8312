"""`base:` through the real CLI: a composed config prints and trains flat; a missing base or a
cycle is one line, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.cli.test_cli import TINY, run_cli

PREFIX = "zeropipe: config error: "


def _composed(tmp_path: Path) -> Path:
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "tiny.yaml").write_text(TINY.format(exp="base_run"))
    top = tmp_path / "top.yaml"
    top.write_text(
        "base: base/tiny.yaml\nexp_name: run\nmax_env_step: 60\npolicy: {batch_size: 4}\n"
    )
    return top


@pytest.mark.timeout(200)
def test_a_composed_config_trains_and_stores_its_resolved_config_flat(tmp_path: Path):
    top = _composed(tmp_path)
    proc = run_cli("train", str(top), "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    saved = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert "base" not in saved
    assert saved["exp_name"] == "run" and saved["max_env_step"] == 60
    assert saved["policy"]["batch_size"] == 4 and saved["policy"]["num_simulations"] == 4
    assert saved["env"]["env_id"] == "zeropipe/Chain-v0"
    assert not (tmp_path / "base_run").exists()


@pytest.mark.timeout(150)
def test_zeropipe_config_prints_the_resolved_config(tmp_path: Path):
    proc = run_cli("config", str(_composed(tmp_path)), "--set", "seed=3", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    printed = yaml.safe_load(proc.stdout)
    assert "base" not in printed and printed["seed"] == 3
    assert printed["policy"]["batch_size"] == 4 and printed["policy"]["td_steps"] == 3


@pytest.mark.timeout(150)
@pytest.mark.parametrize(
    ("files", "words"),
    [
        ({"top.yaml": "base: gone.yaml\nexp_name: run\n"}, "'gone.yaml' does not exist"),
        (
            {"top.yaml": "base: b.yaml\nexp_name: run\n", "b.yaml": "base: top.yaml\n"},
            "makes a cycle",
        ),
    ],
    ids=["missing", "cycle"],
)
@pytest.mark.parametrize("command", ["train", "config"])
def test_a_missing_base_or_a_cycle_is_one_line_and_writes_nothing(
    tmp_path: Path, files, words, command
):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    proc = run_cli(command, str(tmp_path / "top.yaml"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(PREFIX), proc.stderr
    assert words in proc.stderr
    assert not (tmp_path / "run").exists()
