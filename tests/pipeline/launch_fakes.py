"""Small fakes around a real `Launcher` (pipeline/async_launch.py): a worker backend and a weight
store that record what was sent and leased, and the heavy thread run inline, so each launch is
decided by the launcher's rules alone, at train_iters a test sets."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from zeropipe.backends.base import WorkerHandle
from zeropipe.pipeline.async_launch import Launcher
from zeropipe.pipeline.run_state import RunState
from zeropipe.transport import EvalRequest, SnapshotRef


@dataclass
class RecordingPool:
    """One evaluator; `submit` records the request (the reply never comes: the test decides)."""

    workers: list[WorkerHandle] = field(default_factory=lambda: [WorkerHandle("evaluator", 0)])
    sent: list[EvalRequest] = field(default_factory=list)

    def of_role(self, role: str) -> list[WorkerHandle]:
        return [w for w in self.workers if w.role == role]

    async def submit(self, handle: WorkerHandle, request: EvalRequest) -> None:
        self.sent.append(request)


class VersionStore:
    """Publishes a version by name only and counts the leases on each (the launcher's
    bookkeeping is what is tested)."""

    def __init__(self) -> None:
        self.latest: SnapshotRef | None = None
        self.leases: Counter[int] = Counter()

    def publish(self, version: int, state_dict) -> SnapshotRef:
        self.latest = SnapshotRef(f"fake-{version}", version)
        return self.latest

    def acquire(self, ref: SnapshotRef) -> None:
        self.leases[ref.version] += 1

    def release(self, ref: SnapshotRef) -> None:
        assert self.leases[ref.version] > 0, f"release of {ref} without a lease"
        self.leases[ref.version] -= 1


class InlineHeavy:
    """The heavy thread, run inline (the launcher awaits it; nothing else runs meanwhile)."""

    async def run(self, fn, *args):
        return fn(*args)


def fake_launcher(state: RunState, pool: RecordingPool, store: VersionStore | None = None):
    """A launcher on `state` whose workers are `pool`'s (all started) and snapshots `store`'s."""

    def gone(handle, exc):
        raise AssertionError(f"no send fails in this test: {exc}")

    for worker in pool.workers:
        worker.ready = True
    return Launcher(state.cfg, state, pool, store or VersionStore(), InlineHeavy(), gone)
