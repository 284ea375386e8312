"""The base of every config section: unknown keys are errors, assignments are validated.

Runs in: any.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A strict config section: a typo is an error that names its YAML path, never ignored, and
    no float field takes NaN or infinity (a run with `stop_value: .inf` or an infinite learning
    rate would only fail, or never stop, far from the cause)."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, frozen=False, allow_inf_nan=False
    )
    # True: every field of the section may change on --resume (where the run's workers run,
    # when it saves, where its scalars go), but those marked COLLECT_RULE
    resume_may_change: ClassVar[bool] = False


# `json_schema_extra` of a field read only under one condition: `config --describe` shows it only
# where its condition holds (config/describe.py names each condition)
ATARI_ONLY = {"applies_to": "atari"}  # an ALE env
MLP_ONLY = {"applies_to": "mlp"}  # policy.model.kind mlp (or auto)
CONV_ONLY = {"applies_to": "conv"}  # policy.model.kind conv (or auto)
RAY_ONLY = {"applies_to": "ray"}  # policy.async_pipeline.backend ray
PROCESS_ONLY = {"applies_to": "process"}  # policy.async_pipeline.backend process

# `json_schema_extra` of a field's rule on --resume (config/resume.py reads them). A resumed run
# continues with the settings it started with; these may change:
MAY_CHANGE_ON_RESUME = {"on_resume": "may_change"}  # how long it runs, when it stops, evals, saves
# an async setting that decides which data is collected when: refused on resume when it changes
# the resolved rule (it may follow a changed `num_collector_actors` while left unset)
COLLECT_RULE = {"on_resume": "collect_rule"}


def with_rule(applies: dict[str, Any], rule: dict[str, Any]) -> dict[str, Any]:
    """Both `json_schema_extra` marks of a field (where it applies, its rule on resume)."""
    return {**applies, **rule}
