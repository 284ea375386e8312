"""One experiment (the top level of a config file): where it writes, when it stops, what it plays
and how it learns.

Runs in: any.
"""

from __future__ import annotations

from pydantic import Field, SerializeAsAny

from zeropipe.config.env import EnvConfig
from zeropipe.config.policy import PolicyConfig, default_policy_type, policy_config_class
from zeropipe.config.section import MAY_CHANGE_ON_RESUME, Section
from zeropipe.config.tracking import WandbConfig
from zeropipe.config.versions import CONFIG_VERSION


class CheckpointConfig(Section):
    """When the resumable `ckpt/ckpt_latest.pth.tar` is written (besides every stop)."""

    resume_may_change = True

    latest_interval_s: float = Field(
        300.0,
        ge=0.0,
        description="Write ckpt_latest at least every this many seconds of wall time, so a "
        "killed run loses at most this much; 0 disables the time rule.",
    )
    latest_interval_train_iter: int = Field(
        0,
        ge=0,
        description="Also write ckpt_latest every this many train iterations; 0 disables.",
    )


class ExperimentConfig(Section):
    """One experiment: where it writes, when it stops, what it plays and how it learns."""

    config_version: int = Field(
        CONFIG_VERSION,
        ge=1,
        le=CONFIG_VERSION,
        description="The config format's version. A run's config.yaml records it; resuming or "
        "scoring an older run migrates its config to this one first (docs: the config contract).",
    )
    exp_name: str = Field(
        "runs/experiment", description="Output directory, relative to the working directory."
    )
    seed: int = Field(
        0,
        ge=0,
        lt=2**32,
        description="Seed of every RNG in the run (below 2^32, numpy's and the envs' range).",
    )
    max_env_step: int = Field(
        10_000_000,
        ge=1,
        description="Stop after this many collected env steps.",
        json_schema_extra=MAY_CHANGE_ON_RESUME,
    )
    max_train_iter: int = Field(
        10_000_000,
        ge=1,
        description="Stop after this many learner steps.",
        json_schema_extra=MAY_CHANGE_ON_RESUME,
    )
    train_log_interval: int = Field(
        10,
        ge=1,
        description="Write a `train` line (the losses averaged over the steps since the last "
        "one) every this many learner steps, at train_iter multiples of it (so a resumed run "
        "logs the lines of the run never stopped).",
        json_schema_extra=MAY_CHANGE_ON_RESUME,
    )
    env: EnvConfig = Field(description="Environment settings.")
    # SerializeAsAny: dump the type's own section (its fields), not only the base class's.
    policy: SerializeAsAny[PolicyConfig] = Field(
        default_factory=lambda: policy_config_class(default_policy_type())(),
        description="Policy settings; `policy.type` picks the section (each type's own options).",
    )
    checkpoint: CheckpointConfig = Field(
        default_factory=CheckpointConfig, description="Resumable checkpoint schedule."
    )
    wandb: WandbConfig = Field(
        default_factory=WandbConfig,
        description="Weights & Biases mirror of the TensorBoard scalars (off by default).",
    )

    @property
    def num_segments(self) -> int:
        """Segments per collect call."""
        return self.policy.num_segments or self.env.collector_env_num
