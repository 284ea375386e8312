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


def recorded_command(name: str, argv: list[str]) -> str:
    """`python -m benchmarks NAME ARGS` as a results file records it: the options that only say
    where outputs go (`--out`, `--json`) are left out, so the command reads the same anywhere."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--out", "--json"):
            skip = True
        elif not arg.startswith(("--out=", "--json=")):
            kept.append(arg)
    return " ".join(["python -m benchmarks", name, *kept])
