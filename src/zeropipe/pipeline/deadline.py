"""Request deadlines: a worker whose request runs far longer than it should is hung.

Runs in: driver (event-loop thread). A stopped or deadlocked worker never replies and never dies,
so neither a reply nor a broken pipe would ever settle its request. The `Launcher` therefore
times every request it sends (`RequestDeadlines`): when one runs past its deadline, the driver
treats the worker as dead — `WorkerHung` goes down the same restart path as a death (restart
window, `restart` event, snapshot lease released, a lost eval re-opens the eval gate), and the
backend's restart kills the old worker (SIGKILL also ends a stopped process; Ray: `ray.kill`).

The rule (`request_deadline_s`), fixed when a request is sent, on the driver's clock from send
to reply:

- the **reference** is the longest of the role's last `DEADLINE_HISTORY` completed requests
  (every collector's collects, or every evaluator's evals); the longest, not the mean, so that
  one slow but healthy request never looks hung next to fast ones;
- a request gets `request_deadline_factor` × the reference, and at least `min_request_deadline_s`;
- the first request of each start of a worker (and any request before its role has a measured
  one) gets at least `first_request_deadline_s` instead: it also loads the model, builds and
  resets its envs and compiles the search (numba), which no measured request of a warm worker
  shows, so it is only bounded by a generous constant;
- `request_deadline_factor` None turns deadlines off (a hung worker is then never noticed).

The defaults (10×, 300 s, 900 s) are generous on purpose: a false alarm costs the request's
work and one of the worker's restarts, while a late alarm only costs idle minutes. An eval's
duration grows with its episodes' length, which a better policy can multiply; where that can
exceed the factor between two evals, raise `request_deadline_factor` or `min_request_deadline_s`.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zeropipe.backends.base import WorkerHandle
    from zeropipe.config import AsyncPipelineConfig

DEADLINE_HISTORY = 16  # completed requests per role the reference looks back on


class WorkerHung(Exception):
    """A worker's request ran past its deadline; the driver kills and replaces the worker."""


def request_deadline_s(
    recent_s: Sequence[float],
    first_of_worker: bool,
    factor: float | None,
    min_s: float,
    first_min_s: float,
) -> float:
    """Seconds a request may take before its worker counts as hung.

    Args:
        recent_s: durations of the role's recent completed requests (any of its workers).
        first_of_worker: this is the first request of the worker's current start.
        factor: multiple of the longest recent duration allowed; None: no deadline.
        min_s: the least a request of a warm worker is allowed.
        first_min_s: the least a worker's first request (or one with no measurement) is allowed.

    Returns:
        The deadline in seconds (`math.inf` when deadlines are off).
    """
    if factor is None:
        return math.inf
    floor = first_min_s if first_of_worker or not recent_s else min_s
    return max(floor, factor * max(recent_s, default=0.0))


@dataclass(frozen=True)
class _Timed:
    """A request in flight: which worker start has it, when it was sent, how long it may take."""

    handle: WorkerHandle
    request_id: int
    generation: int
    sent_s: float
    deadline_s: float


@dataclass
class RequestDeadlines:
    """The clock of every request in flight and the recent durations of each role.

    Args:
        ap: `policy.async_pipeline` (the deadline settings).
        clock: monotonic clock in seconds (tests pass their own).
    """

    ap: AsyncPipelineConfig
    clock: Callable[[], float] = time.monotonic
    recent_s: dict[str, deque[float]] = field(default_factory=dict)  # role -> durations
    _timed: dict[str, _Timed] = field(default_factory=dict)  # worker name -> its request
    _warm: set[tuple[str, int]] = field(default_factory=set)  # (worker, generation) that answered

    def start(self, handle: WorkerHandle, request_id: int) -> None:
        """`request_id` was sent to `handle`: fix its deadline now."""
        ap = self.ap
        first = (handle.name, handle.generation) not in self._warm
        deadline = request_deadline_s(
            self._recent(handle.role),
            first,
            ap.request_deadline_factor,
            ap.min_request_deadline_s,
            ap.first_request_deadline_s,
        )
        timed = _Timed(handle, request_id, handle.generation, self.clock(), deadline)
        self._timed[handle.name] = timed

    def finish(self, handle: WorkerHandle) -> None:
        """`handle` answered its request: record how long it took."""
        timed = self._timed.pop(handle.name, None)
        if timed is None:
            return
        self._recent(handle.role).append(self.clock() - timed.sent_s)
        self._warm.add((handle.name, timed.generation))

    def drop(self, handle: WorkerHandle) -> None:
        """`handle`'s request is lost with the worker: nothing to measure."""
        self._timed.pop(handle.name, None)

    def overdue(self) -> list[tuple[WorkerHandle, WorkerHung]]:
        """The workers whose request is past its deadline, each with the error that says so."""
        now = self.clock()
        late = [t for t in self._timed.values() if now - t.sent_s > t.deadline_s]
        return [(t.handle, _hung(t, now - t.sent_s)) for t in late]

    def _recent(self, role: str) -> deque[float]:
        return self.recent_s.setdefault(role, deque(maxlen=DEADLINE_HISTORY))


def _hung(timed: _Timed, elapsed_s: float) -> WorkerHung:
    return WorkerHung(
        f"{timed.handle.name} hung: request {timed.request_id} got no reply in {elapsed_s:.1f}s, "
        f"past its {timed.deadline_s:.1f}s deadline (policy.async_pipeline."
        "request_deadline_factor, min_request_deadline_s, first_request_deadline_s)"
    )
