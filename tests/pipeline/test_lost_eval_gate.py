"""The async eval gate after a lost eval: the evaluator died with the eval in flight, so the
gate goes back to where it was before that launch and the eval is launched again as soon as it
is due (not one `eval_freq` later, as if the lost eval had been scored).

The launcher (pipeline/async_launch.py) runs for real on a real run state, with the fakes of
launch_fakes.py, so each launch is decided by the gate alone, at train_iters the test sets.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pipeline.launch_fakes import RecordingPool, fake_launcher
from tests.tiny import tiny_config
from zeropipe.pipeline.async_launch import Launcher
from zeropipe.pipeline.run_state import RunState
from zeropipe.pipeline.runner import open_run

EVAL_FREQ = 8


@pytest.fixture
def state(tmp_path) -> Iterator[RunState]:
    cfg = tiny_config(tmp_path / "run", eval_freq=EVAL_FREQ, learner_num_threads=1)
    run_state, _ = open_run(cfg, resume=False)
    yield run_state
    run_state.run.close()


async def _launch_at(launcher: Launcher, state: RunState, train_iter: int) -> None:
    state.trainer.learner.train_iter = train_iter
    await launcher.launch_eval()


@pytest.mark.parametrize(
    ("relaunch_iter", "expected_eval_iters"),
    [
        (8, [8, 8]),  # replaced before any learner step: the same weights are due again
        (9, [8, 9]),  # the gate counts from 0 again: 9 - 0 >= 8 is due
        (15, [8, 15]),
    ],
)
async def test_an_eval_lost_with_its_worker_is_launched_again_when_due(
    state, relaunch_iter, expected_eval_iters
):
    pool = RecordingPool()
    launcher = fake_launcher(state, pool)
    evaluator = pool.workers[0]
    await _launch_at(launcher, state, 8)  # due: 8 - 0 >= EVAL_FREQ
    assert [r.train_iter for r in pool.sent] == [8]
    assert state.evals.last_eval_iter == 8
    launcher.forget(evaluator)  # the evaluator died with the eval in flight
    await _launch_at(launcher, state, relaunch_iter)  # its replacement is idle
    assert [r.train_iter for r in pool.sent] == expected_eval_iters
    assert state.evals.last_eval_iter == relaunch_iter


@pytest.mark.parametrize(
    ("next_iters", "expected_eval_iters"),
    [
        ([9, 15], [8]),  # an eval that was scored closes the gate for EVAL_FREQ iterations
        ([9, 15, 16], [8, 16]),
    ],
)
async def test_an_eval_that_was_scored_closes_the_gate_for_eval_freq_iterations(
    state, next_iters, expected_eval_iters
):
    pool = RecordingPool()
    launcher = fake_launcher(state, pool)
    evaluator = pool.workers[0]
    await _launch_at(launcher, state, 8)
    launcher.finish(evaluator, pool.sent[-1].request_id)  # its reply came
    launcher.eval_done(pool.sent[-1].request_id)
    for train_iter in next_iters:
        await _launch_at(launcher, state, train_iter)
    assert [r.train_iter for r in pool.sent] == expected_eval_iters
