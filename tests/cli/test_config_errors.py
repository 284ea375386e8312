"""Config errors through the real CLI: every problem at once, one line each, blamed on the file
or on the `--set` that wrote it; exit 2 and nothing written."""

from __future__ import annotations

import pytest

from tests.cli.test_cli import TINY, run_cli

# five bad keys, in three sections
FIVE_BAD = """
exp_name: {exp}
sed: 1
env: {{env_id: CartPole-v1, colector_env_num: 2, manager: {{}}}}
policy: {{batch_sise: 8, model_path: best.pth.tar}}
"""
PREFIX = "zeropipe: config error: "


@pytest.mark.timeout(150)
@pytest.mark.parametrize("command", ["train", "config"])
def test_five_bad_keys_give_five_lines(tmp_path, command):
    bad = tmp_path / "bad.yaml"
    bad.write_text(FIVE_BAD.format(exp="run"))
    proc = run_cli(command, str(bad), cwd=tmp_path)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 5 and all(line.startswith(PREFIX + str(bad)) for line in lines), lines
    for key in ("'sed'", "env.colector_env_num", "env.manager", "policy.batch_sise", "model_path"):
        assert sum(key in line for line in lines) == 1, (key, lines)
    assert not (tmp_path / "run").exists()


@pytest.mark.timeout(150)
def test_bad_set_items_are_blamed_on_the_set(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(TINY.format(exp="run"))
    sets = ["policy.batch_size=abc", "policy.gumbel.gumbel_scale=5", "policy.num_simulations=1.5"]
    proc = run_cli("config", str(good), *(a for s in sets for a in ("--set", s)), cwd=tmp_path)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 3, proc.stderr
    assert all(str(good) not in line for line in lines), lines
    by_item = {line.removeprefix(PREFIX).split(": ", 1)[0]: line for line in lines}
    assert sorted(by_item) == sorted(f"--set {s}" for s in sets), lines
    gumbel = by_item["--set policy.gumbel.gumbel_scale=5"]
    assert "policy.type gumbel_muzero" in gumbel and "not of 'muzero'" in gumbel
    assert "policy.batch_size" in by_item["--set policy.batch_size=abc"]
    assert "fractional part" in by_item["--set policy.num_simulations=1.5"]


def test_a_set_of_a_section_key_written_flat_names_its_section(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(TINY.format(exp="run"))
    proc = run_cli("config", str(good), "--set", "policy.gumbel_scale=5", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (
        f"{PREFIX}--set policy.gumbel_scale=5: unknown key 'gumbel_scale' in policy; an option "
        "of policy.type gumbel_muzero ('policy.gumbel.gumbel_scale' there)\n"
    )


@pytest.mark.timeout(150)
def test_integral_floats_fill_int_fields(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        TINY.format(exp="run").replace("replay_buffer_size: 1000", "replay_buffer_size: 1e6")
    )
    proc = run_cli("config", str(path), "--set", "policy.batch_size=1.6e1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "replay_buffer_size: 1000000\n" in proc.stdout and "batch_size: 16\n" in proc.stdout
    proc = run_cli("config", str(path), "--set", "policy.replay_buffer_size=1.5", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "policy.replay_buffer_size" in proc.stderr


@pytest.mark.timeout(150)
def test_async_set_in_a_sync_run_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(TINY.format(exp="run"))
    proc = run_cli(
        "train",
        str(path),
        "--quiet",
        "--set",
        "policy.async_pipeline.num_collector_actors=2",
        cwd=tmp_path,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "--set policy.async_pipeline.num_collector_actors=2" in proc.stderr
    assert "--async-pipeline" in proc.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.timeout(150)
def test_async_settings_in_the_yaml_of_a_sync_run_are_refused(tmp_path):
    path = tmp_path / "c.yaml"
    text = TINY.format(exp="run") + "  async_pipeline: {num_collector_actors: 2, backend: ray}\n"
    path.write_text(text)
    proc = run_cli("train", str(path), "--quiet", cwd=tmp_path)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 2, proc.stderr
    for key, line in zip(("num_collector_actors", "backend"), lines, strict=True):
        assert line.startswith(f"{PREFIX}{path}: policy.async_pipeline.{key}: "), line
        assert "this run is sync; add --async-pipeline" in line, line
    assert not (tmp_path / "run").exists()


@pytest.mark.timeout(300)
def test_async_keys_at_their_defaults_or_enabled_are_allowed_in_a_sync_run(tmp_path):
    """`zeropipe config` spells out every async field at its default: its output still trains."""
    path = tmp_path / "c.yaml"
    text = TINY.format(exp="run").replace("max_env_step: 240", "max_env_step: 40")
    path.write_text(text + "  async_pipeline: {enabled: false, num_collector_actors: 1}\n")
    proc = run_cli("train", str(path), "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "run" / "config.yaml").is_file()
