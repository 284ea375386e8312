"""`zeropipe import`'s key map: the reference's shipped configs (fixtures in the reference's
format, with its keys and values) import with every key reported; rules checked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeropipe.config import ConfigError
from zeropipe.config.lightzero_import import import_lightzero
from zeropipe.config.lightzero_keys import PATH_RULES as RULES
from zeropipe.config.lightzero_keys import Context, Outcome

FIXTURES = Path(__file__).parent / "fixtures" / "lightzero"
SHIPPED = sorted(p.name for p in FIXTURES.glob("*_config.py"))


def test_the_six_reference_configs_have_fixtures():
    assert SHIPPED == [
        "atari_muzero_config.py",
        "atari_unizero_config.py",
        "cartpole_efficientzero_config.py",
        "cartpole_muzero_config.py",
        "cartpole_unizero_config.py",
        "pendulum_sampled_efficientzero_config.py",
    ]


def _leaf_keys(node: dict, prefix: str = "") -> set[str]:
    keys = set()
    for key, value in node.items():
        if isinstance(value, dict) and key != "manager":
            keys |= _leaf_keys(value, f"{prefix}{key}.")
        else:
            keys.add(prefix + key)
    return keys


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_config_imports_with_every_key_reported_once(name: str):
    from zeropipe.config.lightzero_source import read_lightzero

    imported = import_lightzero(FIXTURES / name)
    source = read_lightzero(FIXTURES / name)
    reported = [line.key for line in imported.report]
    assert len(reported) == len(set(reported))
    expected = _leaf_keys(source.main) | {f"create_config.{k}" for k in _leaf_keys(source.create)}
    entry = {k for k in reported if k.startswith("train_*(")}
    assert set(reported) - entry == expected
    assert len(entry) == 2  # seed and max_env_step, from the train_* call


def test_cartpole_muzero_maps_to_these_keys():
    imported = import_lightzero(FIXTURES / "cartpole_muzero_config.py")
    assert imported.raw == {
        "exp_name": "data_muzero/cartpole_muzero_ns25_upc100_rer0_seed0",
        "seed": 0,
        "max_env_step": 100000,
        "env": {
            "env_id": "CartPole-v0",
            "stop_value": 200,
            "collector_env_num": 8,
            "evaluator_env_num": 3,
            "n_evaluator_episode": 3,
        },
        "policy": {
            "type": "muzero",
            "model": {"kind": "mlp", "latent_dim": 128, "norm_type": "BN"},
            "game_segment_length": 50,
            "update_per_collect": 100,
            "batch_size": 256,
            "optim_type": "Adam",
            "learning_rate": 0.003,
            "ssl_loss_weight": 2,
            "num_simulations": 25,
            "reanalyze_ratio": 0,
            "eval_freq": 100,
            "replay_buffer_size": 1000000,
        },
        "wandb": {"enabled": False},
    }
    kinds = {line.key: line.outcome.kind for line in imported.report}
    assert kinds["policy.model.lstm_hidden_size"] == "dropped"  # muzero has no LSTM
    assert kinds["policy.cuda"] == "dropped" and kinds["env.manager"] == "dropped"
    assert "unsupported" not in kinds.values()


def test_the_atari_configs_report_what_zeropipe_lacks():
    muzero = {
        line.key: line for line in import_lightzero(FIXTURES / "atari_muzero_config.py").report
    }
    unsupported = sorted(k for k, line in muzero.items() if line.outcome.kind == "unsupported")
    assert unsupported == ["policy.model.use_sim_norm", "policy.use_augmentation"]
    assert muzero["policy.model.action_space_size"].outcome.kind == "dropped"  # an imported table
    unizero = import_lightzero(FIXTURES / "atari_unizero_config.py").raw
    assert unizero["policy"]["model"]["world_model"] == {
        "context_steps": 10,  # LightZero's 2 * 4 tokens, raised to the 10 unroll steps
        "num_layers": 2,
        "num_heads": 8,
        "embed_dim": 768,
        "rotary_emb": False,
    }
    assert unizero["env"]["obs_size"] == 64 and unizero["env"]["gray_scale"] is False


def test_cartpole_unizero_imports_its_rotary_embeddings():
    imported = import_lightzero(FIXTURES / "cartpole_unizero_config.py")
    assert imported.raw["policy"]["model"]["world_model"]["rotary_emb"] is True
    lines = {line.key: line.outcome.kind for line in imported.report}
    assert lines["policy.model.world_model_cfg.rotary_emb"] == "mapped"


def test_unizero_output_clips_import_into_a_valid_config(tmp_path: Path):
    path = tmp_path / "lz.py"
    path.write_text(
        "create_config = dict(policy=dict(type='unizero'))\n"
        "main_config = dict(env=dict(env_id='CartPole-v0'), policy=dict(\n"
        "    num_unroll_steps=4, use_encoder_clip_annealing=True,\n"
        "    latent_norm_clip_threshold=10.0,\n"
        "    use_head_clip=True, head_clip_config=dict(enabled=False, enabled_heads=['value'],\n"
        "        head_configs={'value': dict(clip_threshold=20.0, use_annealing=False)})))\n"
    )
    policy = import_lightzero(path).raw["policy"]
    assert policy["use_encoder_clip_annealing"] is True and policy["use_head_clip"] is True
    assert policy["head_clip"] == {
        "enabled_heads": ["value"],
        "value": {"clip_threshold": 20.0, "use_annealing": False},
    }


CTX_MZ = Context("muzero", {"env": {"collector_env_num": 8}, "policy": {"num_unroll_steps": 10}})
CTX_EZ = Context("efficientzero", {})


@pytest.mark.parametrize(
    ("key", "value", "ctx", "kind", "targets"),
    [
        ("policy.model.support_scale", 300, CTX_MZ, "mapped", {
            "policy.model.value_support_range": [-300, 301, 1],
            "policy.model.reward_support_range": [-300, 301, 1],
        }),
        ("policy.model.lstm_hidden_size", 64, CTX_EZ, "mapped", {
            "policy.value_prefix.lstm_hidden_size": 64,
        }),
        ("policy.model.lstm_hidden_size", 64, CTX_MZ, "dropped", {}),
        ("policy.model.model_type", "conv", CTX_MZ, "mapped", {"policy.model.kind": "conv"}),
        ("policy.model.model_type", "conv_context", CTX_MZ, "unsupported", {}),
        ("policy.piecewise_decay_lr_scheduler", True, CTX_MZ, "mapped", {
            "policy.lr_schedule": "piecewise",
        }),
        ("policy.piecewise_decay_lr_scheduler", False, CTX_MZ, "dropped", {}),
        ("policy.cos_lr_scheduler", True, CTX_MZ, "mapped", {"policy.lr_schedule": "cosine"}),
        ("policy.use_augmentation", False, CTX_MZ, "dropped", {}),
        ("policy.use_augmentation", True, CTX_MZ, "unsupported", {}),
        ("policy.n_episode", 8, CTX_MZ, "dropped", {}),
        ("policy.n_episode", 4, CTX_MZ, "unsupported", {}),
        ("policy.model_path", None, CTX_MZ, "dropped", {}),
        ("policy.model_path", "best.pth.tar", CTX_MZ, "unsupported", {}),
        ("policy.model.world_model_cfg.context_length", 8, CTX_MZ, "mapped", {
            "policy.model.world_model.context_steps": 10,
        }),
        ("policy.model.world_model_cfg.context_length", 24, CTX_MZ, "mapped", {
            "policy.model.world_model.context_steps": 12,
        }),
        ("env.observation_shape", (4, 96, 96), CTX_MZ, "mapped", {"env.obs_size": 96}),
        ("env.observation_shape", 4, CTX_MZ, "dropped", {}),
        ("policy.use_wandb", True, CTX_MZ, "mapped", {"wandb.enabled": True}),
        ("policy.policy_ls_eps_start", 0.05, CTX_MZ, "mapped", {
            "policy.policy_ls_eps_start": 0.05,
        }),
        ("policy.policy_ls_eps_decay_steps", 50000, CTX_MZ, "mapped", {
            "policy.policy_ls_eps_decay_steps": 50000,
        }),
        ("policy.model.world_model_cfg.rope_theta", 10000, CTX_MZ, "mapped", {
            "policy.model.world_model.rope_theta": 10000.0,
        }),
        ("policy.model.world_model_cfg.max_seq_len", 8192, CTX_MZ, "dropped", {}),
        ("policy.model.world_model_cfg.final_norm_option_in_encoder", "SimNorm", CTX_MZ,
         "mapped", {"policy.model.world_model.final_norm_option_in_encoder": "SimNorm"}),
        ("policy.model.world_model_cfg.group_size", 8, CTX_MZ, "mapped", {
            "policy.model.world_model.simnorm_group_size": 8,
        }),
        ("policy.use_encoder_clip_annealing", True, CTX_MZ, "mapped", {
            "policy.use_encoder_clip_annealing": True,
        }),
        ("policy.encoder_clip_anneal_steps", 100000, CTX_MZ, "mapped", {
            "policy.encoder_clip_anneal_steps": 100000,
        }),
        ("policy.latent_norm_clip_threshold", -1, CTX_MZ, "mapped", {
            "policy.latent_norm_clip_threshold": 0.0,
        }),
        ("policy.use_head_clip", True, CTX_MZ, "mapped", {"policy.use_head_clip": True}),
        ("policy.head_clip_config", {
            "enabled": False,
            "enabled_heads": ["policy", "rewards", "observations"],
            "head_configs": {"policy": {"use_annealing": False, "clip_threshold": 20.0},
                             "observations": {"clip_threshold": 5.0}},
            "monitor_freq": 2,
            "log_freq": 1000,
        }, CTX_MZ, "mapped", {
            "policy.head_clip.enabled_heads": ["policy", "reward"],
            "policy.head_clip.policy.use_annealing": False,
            "policy.head_clip.policy.clip_threshold": 20.0,
            "policy.head_clip.monitor_freq": 2,
        }),
    ],
)  # fmt: skip
def test_a_rule(key, value, ctx, kind, targets):
    outcome: Outcome = RULES[key](value, ctx)
    assert (outcome.kind, outcome.targets) == (kind, targets)
    assert outcome.kind == "mapped" or outcome.why


def _import_text(tmp_path: Path, text: str):
    path = tmp_path / "lz_config.py"
    path.write_text(
        "create_config = dict(policy=dict(type='muzero'))\n"
        "main_config = dict(env=dict(env_id='CartPole-v0', collector_env_num=8),\n"
        "    policy=dict(" + text + "))\n"
    )
    return import_lightzero(path)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("num_simulations=load()", "line 3: policy.num_simulations cannot be read"),
        ("collector_env_num=4", "both set env.collector_env_num"),
        ("num_simulations=-3", "policy.num_simulations"),
        ("model=dict(model_type='mlp', latent_state_dim=x)", "'x' is not bound"),
    ],
)
def test_an_import_that_cannot_be_written_is_one_line(tmp_path: Path, text, words):
    with pytest.raises(ConfigError) as info:
        _import_text(tmp_path, text)
    assert len(info.value.lines) == 1 and words in str(info.value), str(info.value)


def test_an_unknown_key_is_reported_not_supported_and_left_out(tmp_path: Path):
    imported = _import_text(tmp_path, "brand_new_option=3, td_steps=7")
    lines = {line.key: line.outcome for line in imported.report}
    assert lines["policy.brand_new_option"].kind == "unsupported"
    assert imported.raw["policy"] == {"type": "muzero", "td_steps": 7}
    assert imported.raw["exp_name"] == "runs/lz_config"  # the file had none


@pytest.mark.parametrize("policy_type", ["dqn", None])
def test_a_policy_type_zeropipe_lacks_is_one_line(tmp_path: Path, policy_type):
    path = tmp_path / "lz.py"
    create = (
        "" if policy_type is None else f"create_config = dict(policy=dict(type='{policy_type}'))\n"
    )
    path.write_text(create + "main_config = dict(env=dict(env_id='CartPole-v0'))\n")
    with pytest.raises(ConfigError, match="policy type" if policy_type else "no create_config"):
        import_lightzero(path)
