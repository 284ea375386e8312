"""A config that trains in seconds (chain env, tiny MLP, few simulations), shared by tests."""

from __future__ import annotations

from pathlib import Path

from zeropipe.config import ExperimentConfig, config_from_dict

# A tiny model with a continuous (tanh-Gaussian) head: the sampled types' unit tests.
TINY_CONTINUOUS_MODEL = {
    "continuous_action_space": True,
    "latent_dim": 8,
    "hidden_dim": 8,
    "head_hidden_dim": 8,
    "norm_type": "LN",
    "value_support_range": [-3, 4, 1],
    "reward_support_range": [-3, 4, 1],
}


def tiny_config(exp_name: Path, **policy) -> ExperimentConfig:
    """A config that trains in seconds: chain env, tiny MLP, few simulations."""
    raw = {
        "exp_name": str(exp_name),
        "seed": 0,
        "max_env_step": 400,
        "env": {
            "env_id": "zeropipe/Chain-v0",
            "collector_env_num": 2,
            "evaluator_env_num": 2,
            "n_evaluator_episode": 2,
            "stop_value": 1000,
        },
        "policy": {
            "model": {
                "kind": "mlp",
                "latent_dim": 16,
                "hidden_dim": 16,
                "num_layers": 1,
                "head_hidden_dim": 16,
                "value_support_range": [-5, 6, 1],
                "reward_support_range": [-5, 6, 1],
            },
            "num_simulations": 4,
            "game_segment_length": 8,
            "num_unroll_steps": 3,
            "td_steps": 3,
            "batch_size": 8,
            "replay_ratio": 0.5,
            "eval_freq": 20,
            "save_ckpt_freq": 1000,
            "replay_buffer_size": 1000,
            **policy,
        },
    }
    return config_from_dict(raw)


def tiny_2048_config(exp_name: Path, **policy) -> ExperimentConfig:
    """`tiny_config` on 2048 (`zeropipe/2048-v0`, 16 exponent planes of 4x4) with a tiny conv net
    kept at 4x4."""
    raw = tiny_config(exp_name, **policy).model_dump(mode="json")
    raw["env"]["env_id"] = "zeropipe/2048-v0"
    raw["policy"]["model"] = {
        "kind": "conv",
        "downsample": False,
        "num_channels": 8,
        "num_res_blocks": 1,
        "head_channels": 4,
        "head_hidden_dim": 16,
        "value_support_range": [-20, 21, 1],
        "reward_support_range": [-20, 21, 1],
    }
    return config_from_dict(raw)
