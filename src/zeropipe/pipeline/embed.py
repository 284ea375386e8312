"""The embedder's handle on an async run: `zeropipe.start(cfg)` → events, status, stop.

Runs in: driver (inside the host application's running event loop). `start` creates the driver
task at once (so `run.events()` called right after sees every event) and, when asked, binds the
status endpoint before returning (so `run.status_address` is known). The endpoint keeps serving
after the run ends, until `await run.stop()` (which also stops a run still going).
"""

from __future__ import annotations

import asyncio
from typing import Any

from zeropipe.config import ExperimentConfig
from zeropipe.outputs.event_bus import Subscription
from zeropipe.outputs.status import RunMonitor
from zeropipe.outputs.status_server import StatusServer, bind, parse_address
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.run_state import RunSummary


class Run:
    """A running async training run (see `start`)."""

    def __init__(
        self, cfg: ExperimentConfig, resume: bool, show_progress: bool, status: str | None
    ) -> None:
        loop = asyncio.get_running_loop()
        self.monitor = RunMonitor(loop)
        self.server = None
        if status is not None:
            self.server = StatusServer(bind(*parse_address(status)), self.monitor.status)
        self._task = loop.create_task(
            self._main(cfg, resume, show_progress), name=f"zeropipe-run {cfg.exp_name}"
        )

    @property
    def status_address(self) -> tuple[str, int] | None:
        """(host, port) of the status endpoint, or None without one."""
        return self.server.address if self.server is not None else None

    def events(self, maxsize: int = 1000) -> Subscription:
        """The run's events from now on, for `async for`; the iteration ends with the run.

        Args:
            maxsize: events kept for this subscriber; when it falls further behind, its oldest
                waiting events are dropped (counted in `status()["events_dropped"]`).
        """
        return self.monitor.bus.subscribe(maxsize)

    def status(self) -> dict[str, Any]:
        """Counters, rates, last and best eval, policy lag, queue, workers, dropped events."""
        return self.monitor.status()

    def done(self) -> bool:
        """The run has ended (by a stop rule, an error or `stop()`)."""
        return self._task.done()

    async def wait(self) -> RunSummary:
        """Wait for the run to end by itself; its summary (or its error)."""
        return await asyncio.shield(self._task)

    async def stop(self) -> dict[str, Any]:
        """Stop the run (cancel it: final checkpoint, workers stopped) and the status endpoint.

        Returns:
            The final status. An error the run ended with is raised here.
        """
        self._task.cancel()
        await asyncio.wait({self._task})
        try:
            if not self._task.cancelled():
                self._task.result()  # raises the run's own error, if any
        finally:
            if self.server is not None:
                await self.server.close()
        return self.status()

    async def _main(self, cfg: ExperimentConfig, resume: bool, show_progress: bool) -> RunSummary:
        if self.server is not None:
            await self.server.start()
        try:
            return await train_async(
                cfg, show_progress=show_progress, resume=resume, monitor=self.monitor
            )
        finally:
            self.monitor.bus.close()


def start(
    cfg: ExperimentConfig,
    *,
    resume: bool = False,
    show_progress: bool = False,
    status: str | None = None,
) -> Run:
    """Start an async training run in the running event loop and return its handle.

    Args:
        cfg: the experiment config.
        resume: continue the run in `cfg.exp_name` from its `ckpt_latest`.
        show_progress: draw the progress line on stderr (off: the host owns the terminal).
        status: `HOST:PORT` to serve `GET /metrics` and `GET /status` there (port 0: any free
            port, see `Run.status_address`); None: no endpoint.

    Raises:
        ConfigError: a bad status address, or one that cannot be bound.
        RuntimeError: no running event loop.
    """
    return Run(cfg, resume, show_progress, status)
