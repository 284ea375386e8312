"""`--set` items of a benchmark that runs both pipelines: the async pipeline's keys go to its
runs only (a sync `train` refuses them on its command line: they would be silently unused).

Runs in: a benchmark's process.
"""

from __future__ import annotations

ASYNC_PREFIX = "policy.async_pipeline."


def for_pipeline(overrides: list[str], pipeline: str) -> list[str]:
    """The `KEY=VALUE` items that apply to a run of `pipeline` ("sync" or "async")."""
    if pipeline == "async":
        return list(overrides)
    return [item for item in overrides if not item.startswith(ASYNC_PREFIX)]
