"""Resuming a run whose config.yaml predates an option that changed what runs do: the run keeps
the behaviour it started with (config/versions.py: each section's OLDER_VALUES); a new run gets
the new default."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from zeropipe.config import dump_config, load_config
from zeropipe.config.resume import load_resume_config

FIXTURES = Path(__file__).parent / "fixtures"


def test_a_gumbel_run_written_before_the_root_options_resumes_with_the_old_choices(tmp_path):
    run = tmp_path / "old_gumbel"
    run.mkdir()
    shutil.copy(FIXTURES / "v0_1_gumbel_muzero_config.yaml", run / "config.yaml")
    cfg, notes = load_resume_config(run, [])
    gumbel = cfg.policy.gumbel
    assert (gumbel.prior_term, gumbel.collect_root_noise, gumbel.collect_action) == (
        "logit",
        False,
        "halving_winner",
    )
    assert (cfg.policy.loss_weighting, gumbel.policy_loss) == ("appendix_g", "cross_entropy")
    assert cfg.policy.actor_inference == "eager"  # 0.1.0 ran the search's step module by module
    # one weights version per collect: 0.1.0 had no other rule
    assert cfg.policy.async_pipeline.collect_freshness == "reference"
    assert cfg.policy.optimizer_groups == "one"  # AdamW's one parameter group
    assert cfg.policy.n_step_horizon == "per_step"  # the horizon per unroll step
    assert sum("written before the option existed" in n for n in notes) == 9


def test_a_stochastic_run_written_before_the_weighting_and_residual_options_keeps_them(tmp_path):
    """A run dir's config.yaml that lacks policy.loss_weighting and model.dynamics_residual (a
    run started before them) resumes with the unroll weighting and residual it trained with."""
    old = load_config(FIXTURES / "v0_1_gumbel_muzero_config.yaml").model_dump(mode="json")
    del old["config_version"]  # written before the files carried a version
    policy = old["policy"]
    for key in ("gumbel", "loss_weighting"):
        policy.pop(key)
    policy["model"].pop("dynamics_residual")
    policy.update(type="stochastic_muzero", policy_entropy_weight=0.0)
    run = tmp_path / "old_stochastic"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(old))
    cfg, notes = load_resume_config(run, [])
    assert cfg.policy.loss_weighting == "appendix_g" and cfg.policy.model.dynamics_residual
    assert sum("written before the option existed" in n for n in notes) == 2
    assert load_config(run / "config.yaml").policy.loss_weighting == "reference"  # a new run


def test_a_run_written_now_resumes_with_what_it_says(tmp_path):
    new = load_config(FIXTURES / "v0_1_gumbel_muzero_config.yaml")  # a new run: new defaults
    assert new.policy.gumbel.prior_term == "probability"
    run = tmp_path / "new_gumbel"
    run.mkdir()
    (run / "config.yaml").write_text(dump_config(new))
    cfg, notes = load_resume_config(run, [])
    assert cfg.policy.gumbel.prior_term == "probability" and cfg.policy.gumbel.collect_root_noise
    assert not any("written before" in n for n in notes)


CONFIGS = Path(__file__).parents[2] / "configs"


def _run_written_without(tmp_path, config: str, *keys: str) -> Path:
    """A run directory whose config.yaml is `config` resolved, less the `policy.sampled` keys
    named (as a run written before those options existed)."""
    raw = yaml.safe_load(dump_config(load_config(CONFIGS / config)))
    del raw["config_version"]  # written before the files carried a version
    for key in keys:
        del raw["policy"]["sampled"][key]
    run = tmp_path / "old_run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    return run


def test_a_sampled_run_written_before_the_entropy_option_keeps_the_sample_estimate(tmp_path):
    name = "cartpole_sampled_efficientzero.yaml"
    run = _run_written_without(tmp_path, name, "continuous_entropy")
    cfg, notes = load_resume_config(run, [])
    assert cfg.policy.sampled.continuous_entropy == "tanh_sample_estimate"
    assert any("continuous_entropy" in n and "written before" in n for n in notes)
    assert load_config(CONFIGS / name).policy.sampled.continuous_entropy == "gaussian"  # new run


def test_a_sampled_unizero_run_resumes_with_the_loss_weights_its_config_yaml_holds(tmp_path):
    # config.yaml spells out every field, so the run's discrete-era weights (10, 0.5, 1, 1) come
    # back as written, not as the new continuous defaults (10, 0.1, 0.1, 0.1)
    run = _run_written_without(tmp_path, "pendulum_sampled_unizero.yaml")
    raw = yaml.safe_load((run / "config.yaml").read_text())
    wm = raw["policy"]["model"]["world_model"]
    assert "value_loss_weight" in wm and raw["policy"]["target_update_type"] == "ema"
    wm.update(value_loss_weight=0.5, reward_loss_weight=1.0, policy_loss_weight=1.0)
    (run / "config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    cfg, _ = load_resume_config(run, [])
    world = cfg.policy.model.world_model
    assert (world.value_loss_weight, world.reward_loss_weight, world.policy_loss_weight) == (
        0.5,
        1.0,
        1.0,
    )
