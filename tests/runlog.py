"""Reading a run's metrics.jsonl from tests: its events, and waiting for one with a hard timeout."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from zeropipe.cli.curves import complete_lines


def events(run: Path) -> list[dict]:
    """Every complete record of `run`'s log/metrics.jsonl so far ([] before the file exists).

    The run is live: a line being written is left out until its newline lands.
    """
    path = run / "log" / "metrics.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in complete_lines(path.read_text()) if line]


async def wait_for_event(run: Path, predicate, timeout_s: float = 120.0) -> dict:
    """Poll the metrics log until an event matches (a condition wait with a hard timeout)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        for event in events(run):
            if predicate(event):
                return event
        await asyncio.sleep(0.05)
    raise AssertionError("event never appeared")
