"""Entry points of the worker processes that transport tests spawn (importable by spawn).

Runs in: collector (test stand-in)
"""

from __future__ import annotations

import time
import traceback
from multiprocessing.connection import Connection
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event
from typing import Any

import numpy as np

from zeropipe.transport import (
    Bye,
    CollectRequest,
    CollectResult,
    Hello,
    ParamLayout,
    Shutdown,
    SnapshotError,
    SnapshotLayout,
    SnapshotReader,
    SnapshotRef,
    WorkerEndpoint,
    WorkerError,
)

BIG_REQUEST_ID = -1


def expected_value(version: int, dtype: str) -> float:
    """Value every element of a stress-test parameter holds in snapshot ``version``."""
    return version % 2048 if np.dtype(dtype) == np.float16 else version


def check_snapshot(arrays: dict[str, np.ndarray], version: int) -> str | None:
    """Returns why ``arrays`` is not a consistent snapshot ``version``, or None if it is."""
    for name, array in arrays.items():
        if not np.all(array == expected_value(version, array.dtype.str)):
            return f"{name} of version {version} holds {np.unique(array)[:5]}"
    return None


def echo_worker(conn: Connection, worker_id: int) -> None:
    """Says hello, echoes every message; a CollectRequest with request_id -1 asks for
    ``envstep`` bytes of frames back; Shutdown → Bye."""
    endpoint = WorkerEndpoint(conn)
    endpoint.send(Hello.for_this_process(worker_id, "collector"))
    while True:
        msg = endpoint.recv()
        if isinstance(msg, Shutdown):
            endpoint.send(Bye(worker_id))
            return
        if isinstance(msg, CollectRequest) and msg.request_id == BIG_REQUEST_ID:
            frames = np.full(msg.envstep, 7, dtype=np.uint8)
            endpoint.send(
                CollectResult(msg.request_id, worker_id, 0, [{"obs": frames}], 0, [], 0, 0)
            )
            continue
        endpoint.send(msg)


def silent_worker(conn: Connection) -> None:
    """Says hello, then waits forever (to be killed)."""
    WorkerEndpoint(conn).send(Hello.for_this_process(0, "collector"))
    time.sleep(600)


def snapshot_worker(conn: Connection) -> None:
    """Loads the snapshot each CollectRequest names and replies with its consistency verdict."""
    endpoint = WorkerEndpoint(conn)
    endpoint.send(Hello.for_this_process(0, "collector"))
    reader: SnapshotReader | None = None
    while True:
        msg = endpoint.recv()
        if isinstance(msg, SnapshotLayout):
            reader = SnapshotReader(msg.layout)
        elif isinstance(msg, Shutdown):
            endpoint.send(Bye(0))
            return
        elif isinstance(msg, CollectRequest) and reader is not None:
            try:
                arrays = reader.read(msg.snapshot)
                problem = check_snapshot(arrays, msg.snapshot.version)
            except SnapshotError:
                problem = traceback.format_exc()
            if problem:
                endpoint.send(WorkerError(0, "collector", problem, ""))
            else:
                reply = CollectResult(msg.request_id, 0, msg.snapshot.version, [], 0, [], 0, 0)
                endpoint.send(reply)


def racing_reader(
    conn: Connection, layout_wire: dict[str, Any], block: str, latest: Synchronized, stop: Event
) -> None:
    """Reads the latest version without a lease until ``stop``; sends (accepted, rejected, bad)."""
    reader = SnapshotReader(ParamLayout.from_wire(layout_wire), max_attempts=5, retry_sleep_s=0)
    accepted = rejected = 0
    problems: list[str] = []
    while not stop.is_set():
        version = latest.value
        try:
            arrays = reader.read(SnapshotRef(block, version))
        except SnapshotError:
            rejected += 1
            continue
        accepted += 1
        problem = check_snapshot(arrays, version)
        if problem:
            problems.append(problem)
    reader.close()
    conn.send((accepted, rejected, problems))


def crashing_reader(
    conn: Connection, layout_wire: dict[str, Any], ref_wire: dict[str, Any]
) -> None:
    """Reads one snapshot, reports, then keeps reading until killed."""
    reader = SnapshotReader(ParamLayout.from_wire(layout_wire))
    ref = SnapshotRef.from_wire(ref_wire)
    conn.send(check_snapshot(reader.read(ref), ref.version))
    while True:
        reader.read(ref)
