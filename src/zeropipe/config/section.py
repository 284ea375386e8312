"""The base of every config section: unknown keys are errors, assignments are validated.

Runs in: any.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A strict config section: a typo is an error that names its YAML path, never ignored, and
    no float field takes NaN or infinity (a run with `stop_value: .inf` or an infinite learning
    rate would only fail, or never stop, far from the cause)."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, frozen=False, allow_inf_nan=False
    )


# `json_schema_extra` of a field read only under one condition: `config --describe` shows it only
# where its condition holds (config/describe.py names each condition)
ATARI_ONLY = {"applies_to": "atari"}  # an ALE env
MLP_ONLY = {"applies_to": "mlp"}  # policy.model.kind mlp (or auto)
CONV_ONLY = {"applies_to": "conv"}  # policy.model.kind conv (or auto)
RAY_ONLY = {"applies_to": "ray"}  # policy.async_pipeline.backend ray
PROCESS_ONLY = {"applies_to": "process"}  # policy.async_pipeline.backend process
