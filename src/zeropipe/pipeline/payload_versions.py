"""A `ckpt_latest` payload of an earlier version, brought to the current keys before a resume.

Runs in: driver. The payload carries the version of its config (`config_version`, 2 now; none
saved: version 1, 0.1.0 and every run written before the stamp). A version-1 payload may lack
keys that later versions always write; each gets the value that means what the older run did:
  - `budgets`: the train budgets still owed (none saved: those learner steps are not trained);
  - `time_s`: the run's clock at the save (none: the resumed run's clock starts from its log);
  - `numpy_rng`, `python_rng`: those generators' states (none: they stay as seeded);
  - `last_eval_version`: the weights version of the last eval (none: unknown);
  - `collector`, `collector_workers`: the collectors' unfinished episodes (none: new ones);
  - `learner_threads`: the learner's thread count (none: the resumed run chooses again).
A payload of a newer version than this code reads is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from zeropipe.config.versions import CONFIG_VERSION
from zeropipe.outputs.errors import CheckpointError

VERSION_1_DEFAULTS: dict[str, Any] = {
    "budgets": [],
    "time_s": 0.0,
    "numpy_rng": None,
    "python_rng": None,
    "last_eval_version": None,
    "collector": None,
    "collector_workers": {},
    "learner_threads": None,
}


def upgrade_payload(path: Path, payload: dict[str, Any]) -> dict[str, Any]:
    """`payload` (read from `path`) with every key the current version writes.

    Raises:
        CheckpointError: it was written by a newer version.
    """
    version = int(payload.get("config_version", 1))
    if version > CONFIG_VERSION:
        raise CheckpointError(
            f"{path}: written by a newer zeropipe (config_version {version}, this one reads up "
            f"to {CONFIG_VERSION}); upgrade zeropipe to resume it"
        )
    if version == 1:
        payload = {**VERSION_1_DEFAULTS, **payload, "config_version": CONFIG_VERSION}
    return payload
