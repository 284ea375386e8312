"""Fixtures for transport tests: import paths, loop flavours, worker spawning, leak checks."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import multiprocessing as mp
import sys
from collections.abc import Callable, Coroutine, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

_HERE = Path(__file__).resolve().parent
# Spawned workers import their entry points from transport_workers.py; spawn hands sys.path on.
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))
if importlib.util.find_spec("zeropipe") is None:  # not pip-installed: use the source tree
    sys.path.insert(0, str(_HERE.parents[1] / "src"))

SPAWN = mp.get_context("spawn")


@pytest.fixture(autouse=True)
def _leak_check(no_leaks: None) -> Iterator[None]:
    """Every transport test runs under the shared leak check (tests/conftest.py)."""
    yield


def _uvloop_factory() -> asyncio.AbstractEventLoop:
    uvloop = pytest.importorskip("uvloop")
    return uvloop.new_event_loop()


@pytest.fixture(params=["asyncio", "uvloop"])
def run_loop(request: pytest.FixtureRequest) -> Callable[[Coroutine[Any, Any, Any]], Any]:
    """Runs a coroutine to completion on a fresh default-asyncio or uvloop event loop."""
    factory = asyncio.new_event_loop if request.param == "asyncio" else _uvloop_factory

    def run(coro: Coroutine[Any, Any, Any]) -> Any:
        with asyncio.Runner(loop_factory=factory) as runner:
            return runner.run(coro)

    return run


@pytest.fixture
def spawn_worker() -> Iterator[Callable[..., tuple[mp.process.BaseProcess, Connection]]]:
    """Starts ``target(conn, *args)`` in a spawned process; returns (process, driver conn)."""
    procs: list[mp.process.BaseProcess] = []

    def spawn(target: Callable[..., None], *args: Any) -> tuple[mp.process.BaseProcess, Connection]:
        driver_conn, worker_conn = SPAWN.Pipe(duplex=True)
        proc = SPAWN.Process(target=target, args=(worker_conn, *args), daemon=True)
        proc.start()
        worker_conn.close()  # else the driver never sees EOF when the worker dies
        procs.append(proc)
        return proc, driver_conn

    yield spawn
    for proc in procs:
        proc.join(5)
        with contextlib.suppress(ValueError):
            if proc.is_alive():
                proc.kill()
                proc.join(5)
