"""Request deadlines: the rule as a table, and the per-worker bookkeeping on a fake clock."""

from __future__ import annotations

import math

import pytest

from zeropipe.backends.base import WorkerHandle
from zeropipe.config import AsyncPipelineConfig
from zeropipe.pipeline.deadline import DEADLINE_HISTORY, RequestDeadlines, request_deadline_s

# recent_s, first_of_worker, factor, min_s, first_min_s -> deadline_s
RULE = [
    # No measurement yet: the first-request floor, whatever the worker.
    ((), True, 10.0, 300.0, 900.0, 900.0),
    ((), False, 10.0, 300.0, 900.0, 900.0),
    # A warm worker: factor × the longest recent request, at least the floor.
    ((2.0,), False, 10.0, 300.0, 900.0, 300.0),
    ((30.0,), False, 10.0, 300.0, 900.0, 300.0),  # boundary: 10 × 30 == floor
    ((31.0,), False, 10.0, 300.0, 900.0, 310.0),
    ((1.0, 40.0, 2.0), False, 10.0, 300.0, 900.0, 400.0),  # the longest, not the mean
    # A worker's first request (a new start): the first-request floor, unless measured is more.
    ((2.0,), True, 10.0, 300.0, 900.0, 900.0),
    ((90.0,), True, 10.0, 300.0, 900.0, 900.0),  # boundary: 10 × 90 == first floor
    ((100.0,), True, 10.0, 300.0, 900.0, 1000.0),
    # Test-sized settings.
    ((0.4, 0.5), False, 3.0, 5.0, 900.0, 5.0),
    ((4.0,), False, 3.0, 5.0, 900.0, 12.0),
    # Off.
    ((100.0,), False, None, 300.0, 900.0, math.inf),
    ((), True, None, 300.0, 900.0, math.inf),
]


@pytest.mark.parametrize(("recent", "first", "factor", "min_s", "first_min_s", "expected"), RULE)
def test_the_deadline_rule(recent, first, factor, min_s, first_min_s, expected):
    assert request_deadline_s(recent, first, factor, min_s, first_min_s) == expected


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def deadlines(**settings) -> tuple[RequestDeadlines, Clock]:
    clock = Clock()
    return RequestDeadlines(AsyncPipelineConfig(**settings), clock), clock


def test_a_request_past_its_deadline_names_its_worker_hung():
    book, clock = deadlines(request_deadline_factor=3.0, min_request_deadline_s=5.0)
    worker = WorkerHandle("collector", 0)
    book.start(worker, request_id=0)  # first request: the 900 s floor
    clock.now = 899.0
    assert book.overdue() == []
    clock.now = 900.0  # it took 900 s, just inside
    book.finish(worker)
    assert list(book.recent_s["collector"]) == [900.0]
    book.start(worker, request_id=1)  # warm now: 3 × 900 s
    clock.now = 900.0 + 2700.0
    assert book.overdue() == []
    clock.now += 0.5
    ((handle, exc),) = book.overdue()
    assert handle is worker
    assert str(exc).startswith("collector-0 hung: request 1 got no reply in 2700.5s")
    assert "past its 2700.0s deadline" in str(exc)
    book.drop(worker)  # lost with the worker: nothing measured, nothing overdue
    assert book.overdue() == [] and list(book.recent_s["collector"]) == [900.0]


def test_a_replacement_first_request_gets_the_first_floor_again():
    book, clock = deadlines(request_deadline_factor=3.0, min_request_deadline_s=5.0)
    worker = WorkerHandle("evaluator", 1)
    book.start(worker, request_id=0)
    clock.now = 1.0
    book.finish(worker)
    book.start(worker, request_id=1)  # warm: max(5, 3 × 1) == 5
    clock.now = 6.5
    assert [h.name for h, _exc in book.overdue()] == ["evaluator-1"]
    book.drop(worker)
    worker.generation += 1  # the replacement compiles again: 900 s
    book.start(worker, request_id=2)
    clock.now = 6.5 + 899.0
    assert book.overdue() == []


def test_the_reference_forgets_old_requests_and_roles_are_apart():
    book, clock = deadlines()
    collector, evaluator = WorkerHandle("collector", 0), WorkerHandle("evaluator", 0)
    for i in range(DEADLINE_HISTORY + 1):
        book.start(collector, request_id=i)
        clock.now += 100.0 if i == 0 else 1.0  # the first (compiling) one is slow
        book.finish(collector)
    assert list(book.recent_s["collector"]) == [1.0] * DEADLINE_HISTORY
    assert "evaluator" not in book.recent_s
    book.start(evaluator, request_id=99)  # no eval measured yet: the first floor
    clock.now += 899.0
    assert book.overdue() == []


def test_no_deadline_when_turned_off():
    book, clock = deadlines(request_deadline_factor=None)
    worker = WorkerHandle("collector", 0)
    book.start(worker, request_id=0)
    clock.now = 10.0**9
    assert book.overdue() == []
