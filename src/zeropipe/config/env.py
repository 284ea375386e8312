"""Which environment to play and how to preprocess it (`env:`).

Runs in: any.
"""

from __future__ import annotations

from pydantic import Field

from zeropipe.config.section import ATARI_ONLY, MAY_CHANGE_ON_RESUME, Section


class EnvConfig(Section):
    """Which environment to play and how to preprocess it."""

    env_id: str = Field(
        description="gymnasium env id (Discrete actions, Box observations), e.g. CartPole-v1, "
        "ALE/Pong-v5, or zeropipe/Chain-v0 (the tiny deterministic test env); a third-party id as "
        "'module:EnvId' (e.g. minatar.gym:MinAtar/Breakout-v1) imports the module first."
    )
    register_envs: str | None = Field(
        None,
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
        description="'module:function' called once in every process before its envs are made, "
        "for packages that register their gymnasium ids only when asked (MinAtar 1.0.15: "
        "minatar.gym:register_envs, with env_id MinAtar/Breakout-v1).",
    )
    collector_env_num: int = Field(8, ge=1, description="Envs stepped together by one collector.")
    evaluator_env_num: int | None = Field(
        None,
        ge=1,
        description="The most envs one evaluation steps together (None: all of them). Each "
        "episode of an evaluation has its own env (episode k seeded from the evaluator's seed "
        "+ k) and they are searched as one batch; with a bound below n_evaluator_episode the "
        "episodes play in rounds of this many. LightZero's key is the size of its eval env "
        "manager, which plays n_evaluator_episode episodes in per-env quotas.",
        json_schema_extra=MAY_CHANGE_ON_RESUME,
    )
    n_evaluator_episode: int = Field(
        3,
        ge=1,
        description="Episodes per evaluation, played together (see evaluator_env_num).",
        json_schema_extra=MAY_CHANGE_ON_RESUME,
    )
    stop_value: float = Field(
        1e9,
        description="Stop the run once an eval reward_mean reaches this value.",
        json_schema_extra=MAY_CHANGE_ON_RESUME,
    )
    max_episode_steps: int | None = Field(
        None, ge=1, description="Time limit for training episodes (None: the env's own limit)."
    )
    eval_max_episode_steps: int | None = Field(
        None,
        ge=1,
        description="Time limit for eval episodes (None: the env's own limit).",
        json_schema_extra=MAY_CHANGE_ON_RESUME,
    )
    frame_stack: int = Field(
        1, ge=1, description="Observations stacked as the model input (Atari: 4 gray frames)."
    )
    # Atari preprocessing. ALE v5 ids are created with frameskip=1 and no sticky actions, and the
    # skip/stickiness below is applied once, by our wrappers (LightZero PR #494: double skipping).
    frame_skip: int = Field(
        4,
        ge=1,
        description="Atari: repeat each action this many frames.",
        json_schema_extra=ATARI_ONLY,
    )
    sticky_action_prob: float = Field(
        0.0,
        ge=0.0,
        le=1.0,
        description="Atari: probability of repeating the previous action.",
        json_schema_extra=ATARI_ONLY,
    )
    noop_max: int = Field(
        30,
        ge=0,
        description="Atari: up to this many no-ops after a reset.",
        json_schema_extra=ATARI_ONLY,
    )
    gray_scale: bool = Field(
        True,
        description="Atari: grayscale (1 channel) instead of RGB (3).",
        json_schema_extra=ATARI_ONLY,
    )
    obs_size: int = Field(
        64,
        ge=16,
        description="Atari: frames resized to obs_size×obs_size.",
        json_schema_extra=ATARI_ONLY,
    )
    clip_rewards: bool = Field(
        True, description="Atari: clip training rewards to {-1,0,1}.", json_schema_extra=ATARI_ONLY
    )
    episode_life: bool = Field(
        True,
        description="Atari: a lost life ends a training episode (eval plays full games).",
        json_schema_extra=ATARI_ONLY,
    )
