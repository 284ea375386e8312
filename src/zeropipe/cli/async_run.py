"""How the CLI runs the async driver: on a fresh (uv)loop, beside the status endpoint when asked,
with SIGTERM taking the Ctrl-C path, and multiprocessing's resource tracker reaped at the end.

Runs in: driver (the CLI process).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zeropipe.config import ExperimentConfig
    from zeropipe.pipeline.run_state import RunSummary


class Terminated:
    """Whether a SIGTERM arrived (it is turned into the Ctrl-C path, see `sigterm_as_ctrl_c`),
    and, while the async driver runs in a process that ignores SIGINT, how SIGTERM cancels it."""

    seen = False
    cancel_driver: Callable[[], None] | None = None


def sigterm_as_ctrl_c() -> None:
    """SIGTERM (`kill`, a scheduler's stop, a container's shutdown) takes the Ctrl-C path.

    The handler re-raises it as SIGINT in this process, so whichever SIGINT handler is in force
    (asyncio.Runner's: cancel the driver; Python's default: KeyboardInterrupt in the sync loop)
    writes the final checkpoint and shuts down cleanly; the exit status is then 143. A process
    that started with SIGINT ignored (a shell script's `zeropipe train ... &`) would drop that
    SIGINT: there the first SIGTERM cancels the async driver's task itself, as the Runner's
    handler would (`_cancel_on_sigterm`; a KeyboardInterrupt stopping the event loop would
    cancel the pipe readers too, and no collector's state could arrive), and otherwise SIGINT
    gets Python's default handler first: the KeyboardInterrupt ends the sync loop, or stops the
    event loop, whose Runner then cancels the driver on its way out.
    """

    def handler(_signum: int, _frame: object) -> None:
        Terminated.seen = True
        cancel, Terminated.cancel_driver = Terminated.cancel_driver, None
        if cancel is not None:
            cancel()
            return
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.raise_signal(signal.SIGINT)

    signal.signal(signal.SIGTERM, handler)


def run_async(
    cfg: ExperimentConfig, show_progress: bool, start: dict[str, Any], status: str | None
):
    """Run the driver coroutine on a fresh loop: uvloop when installed, asyncio otherwise.

    The options are checked first; then the process backend's workers start
    (backends/process/early.py), so they get ready while the driver is imported and built.
    asyncio.Runner turns Ctrl-C into a cancellation of the driver task (which stops the workers and
    writes the final checkpoint) and then raises KeyboardInterrupt. With `status`, the endpoint is
    served on the same loop for as long as the run lasts.

    Raises:
        ConfigError: async options this machine cannot honour, or a bad `status` address.
    """
    from zeropipe.backends.factory import check_async_options
    from zeropipe.backends.process.early import early_workers
    from zeropipe.outputs.status_server import parse_address

    check_async_options(cfg)  # before anything is started or written
    if status is not None:
        parse_address(status)
    early = None
    try:
        early = early_workers(cfg)
        return _run_driver(cfg, show_progress, {**start, "early_workers": early}, status)
    finally:
        if early is not None:
            early.close()
        _stop_resource_tracker()


def _run_driver(
    cfg: ExperimentConfig, show_progress: bool, start: dict[str, Any], status: str | None
) -> RunSummary:
    import asyncio

    try:
        import uvloop

        factory = uvloop.new_event_loop
    except ImportError:  # pragma: no cover - uvloop is a dependency on POSIX
        factory = None
    with asyncio.Runner(loop_factory=factory) as runner:
        try:
            return runner.run(_train_coroutine(cfg, show_progress, start, status))
        except asyncio.CancelledError:
            if Terminated.seen:  # cancelled by SIGTERM (`_cancel_on_sigterm`): the Ctrl-C exit
                raise KeyboardInterrupt from None
            raise
        finally:
            Terminated.cancel_driver = None


def _cancel_on_sigterm() -> None:
    """Where SIGINT is ignored (asyncio.Runner then installs no handler), SIGTERM cancels the
    running driver task and wakes its loop, as the Runner's SIGINT handler does."""
    import asyncio

    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        return
    task, loop = asyncio.current_task(), asyncio.get_running_loop()
    assert task is not None

    def cancel() -> None:
        task.cancel()
        loop.call_soon_threadsafe(lambda: None)  # the loop may be blocked in its selector

    Terminated.cancel_driver = cancel


async def _train_coroutine(
    cfg: ExperimentConfig, show_progress: bool, start: dict[str, Any], status: str | None
) -> RunSummary:
    """`train_async`, beside the status endpoint when one was asked for."""
    import asyncio

    from zeropipe.outputs.status import RunMonitor
    from zeropipe.outputs.status_server import StatusServer, bind, parse_address
    from zeropipe.pipeline.async_driver import train_async

    _cancel_on_sigterm()
    if status is None:
        return await train_async(cfg, show_progress=show_progress, **start)
    monitor = RunMonitor(asyncio.get_running_loop())
    server = StatusServer(bind(*parse_address(status)), monitor.status)
    await server.start()
    host, port = server.address
    print(f"status endpoint: http://{host}:{port}/metrics and /status", file=sys.stderr, flush=True)
    try:
        return await train_async(cfg, show_progress=show_progress, monitor=monitor, **start)
    finally:
        monitor.bus.close()
        await server.close()


def _stop_resource_tracker() -> None:
    """Reap multiprocessing's resource-tracker process before the CLI exits.

    The driver's shared-memory blocks are all unlinked by now; without this the tracker outlives
    the driver for a moment and, under an init that does not reap orphans (containers), stays as
    a zombie. Only the CLI does this: an embedding application may still need its tracker.
    """
    from multiprocessing import resource_tracker

    stop = getattr(resource_tracker._resource_tracker, "_stop", None)
    if stop is not None:
        stop()
