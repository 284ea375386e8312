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
