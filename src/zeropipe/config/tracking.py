"""Mirroring a run's scalars to Weights & Biases (`wandb:`), off by default.

Runs in: driver (the run directory's scalar sinks read it). LightZero's `use_wandb` and CleanRL's
`--track` do the same; here it is an extra (`pip install -e ".[wandb]"`), because most runs need
only the run directory's own metrics.jsonl and TensorBoard files.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from zeropipe.config.section import Section


class WandbConfig(Section):
    """Weights & Biases: the same scalars as TensorBoard, the resolved config as the run's."""

    resume_may_change = True  # where the scalars are mirrored, not what the run does

    enabled: bool = Field(
        False,
        description="Mirror every TensorBoard scalar (and the config) to wandb; needs the wandb "
        'extra (pip install -e ".[wandb]"). `train --wandb` sets it.',
    )
    project: str = Field("zeropipe", min_length=1, description="wandb project.")
    entity: str | None = Field(None, description="wandb entity (team or user); None: yours.")
    name: str | None = Field(
        None, description="wandb run name; None: the run directory's name (exp_name's last part)."
    )
    mode: Literal["online", "offline"] = Field(
        "online", description="offline: write under log/wandb to `wandb sync` later."
    )
