"""zeropipe: MuZero-family training with a sync and an async segment pipeline.

Embedding the async pipeline in an asyncio application::

    from zeropipe import load_config, train_async

    summary = await train_async(load_config("configs/cartpole_muzero.yaml"))

or, to follow it as it runs (docs/guide/embedding.md)::

    run = start(load_config("configs/cartpole_muzero.yaml"))
    async for event in run.events():  # CollectEvent, TrainEvent, EvalEvent, ..., StopEvent
        print(event.event, event.envstep, run.status()["best_eval"])
    await run.stop()
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["load_config", "start", "train_async", "train_sync"]


def __getattr__(name: str) -> Any:
    # Lazy: `import zeropipe` stays cheap (workers and the CLI import only what they use).
    if name == "train_async":
        from zeropipe.pipeline.async_driver import train_async

        return train_async
    if name == "start":
        from zeropipe.pipeline.embed import start

        return start
    if name == "train_sync":
        from zeropipe.pipeline.sync import train_sync

        return train_sync
    if name == "load_config":
        from zeropipe.config import load_config

        return load_config
    raise AttributeError(f"module 'zeropipe' has no attribute {name!r}")
