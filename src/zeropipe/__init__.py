"""zeropipe: MuZero-family training with a sync and an async segment pipeline.

From a script or notebook (api.py)::

    import zeropipe

    cfg = zeropipe.load_config("configs/cartpole_muzero.yaml", {"exp_name": "runs/cp", "seed": 1})
    summary = zeropipe.train(cfg, pipeline="async")  # or "sync"; resume=True continues a run
    score = zeropipe.evaluate("runs/cp", episodes=10)  # the run's best checkpoint
    print(summary.best_reward, score.episode_returns)

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

# not typing.TYPE_CHECKING: importing typing takes ~40 ms of the CLI's start-up, where a Ctrl-C
# would still be a traceback (cli/entry.py); type checkers read the name as true all the same
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"
__all__ = ["evaluate", "load_config", "start", "train", "train_async", "train_sync"]


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
    if name in ("load_config", "train", "evaluate"):  # api.py: the script and notebook API
        from zeropipe import api

        return getattr(api, name)
    raise AttributeError(f"module 'zeropipe' has no attribute {name!r}")
