"""The eval grid (`policy.eval_grid`): which versions an eval scores, in both pipelines.

'budget_end' scores only versions at the end of a train budget (the sync pipeline's own: its
gate is checked between collects); async, an eval due while the evaluator is busy waits with
its snapshot held and is then sent with the version and counters of when it was due.
'learner_step' scores the versions at multiples of eval_freq (sync then evaluates inside a
budget; async's due evals wait the same way). Both pipelines use the same grid, 'learner_step'
unless the config says otherwise, so by default they score the same versions. The launcher runs
for real on a real run state (the fakes of launch_fakes.py); the expected versions are worked out
by hand from EVAL_FREQ and the budget ends each test sets.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.pipeline.launch_fakes import RecordingPool, VersionStore, fake_launcher
from tests.runlog import events
from tests.tiny import tiny_config
from zeropipe.backends.base import WorkerHandle
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.async_launch import Launcher
from zeropipe.pipeline.run_state import RunState
from zeropipe.pipeline.runner import open_run
from zeropipe.pipeline.sync import train_sync

EVAL_FREQ = 8
# (train_iter, a budget ended there): budgets of 5, 6, 3 and 6 steps, with learner steps between
STEPS = [(3, False), (5, True), (8, False), (9, False), (11, True), (12, False), (14, True)]
STEPS += [(19, False), (20, True)]


def _state(tmp_path, eval_grid="learner_step", **async_pipeline) -> RunState:
    cfg = tiny_config(
        tmp_path / "run",
        eval_freq=EVAL_FREQ,
        eval_grid=eval_grid,
        learner_num_threads=1,
        async_pipeline=async_pipeline,
    )
    return open_run(cfg, resume=False)[0]


@pytest.fixture
def state(tmp_path) -> Iterator[RunState]:
    run_state = _state(tmp_path, eval_grid="budget_end", max_queued_evals=2)
    yield run_state
    run_state.run.close()


async def _step_to(launcher: Launcher, train_iter: int, budget_end: bool) -> None:
    """The learner reached `train_iter` (10 env steps collected per learner step)."""
    state = launcher.state
    state.trainer.learner.train_iter = train_iter
    state.envstep = 10 * train_iter
    if budget_end:
        state.trainer.completed_budgets += 1
    await launcher.launch_eval()


def _assert_scheduled_every(run_dir, summary, step: int) -> None:
    """The run's evals were step, 2 step, 3 step, ... up to its stop, then at most the final
    eval of its last version (after a max_env_step stop the owed budgets are trained without
    evals, as in sync; the final eval is skipped if that version was scored already)."""
    versions = [e["policy_version"] for e in events(run_dir) if e["event"] == "eval"]
    scheduled = len(versions) - (versions[-1] == summary.train_iter)
    assert scheduled >= 3
    assert versions[:scheduled] == list(range(step, step * scheduled + 1, step))


def _reply(launcher: Launcher, pool: RecordingPool) -> None:
    """The evaluator answers the last request it was sent."""
    request = pool.sent[-1]
    launcher.finish(pool.workers[0], request.request_id)
    launcher.eval_done(request.request_id)


@pytest.mark.parametrize(
    ("grid", "expected_versions"),
    [
        ("budget_end", [11, 20]),  # 5 < 8; 11 - 0 >= 8; 14 - 11 < 8; 20 - 11 >= 8
        ("learner_step", [8, 19]),  # the first step at or past 8, then at or past 16
    ],
)
async def test_which_versions_each_grid_scores(tmp_path, grid, expected_versions):
    state = _state(tmp_path, eval_grid=grid)
    pool = RecordingPool()
    launcher = fake_launcher(state, pool)
    for train_iter, budget_end in STEPS:
        await _step_to(launcher, train_iter, budget_end)
        if pool.workers[0].request is not None:
            _reply(launcher, pool)  # the evaluator is quick: never busy at the next step
    assert [r.train_iter for r in pool.sent] == expected_versions
    state.run.close()


async def test_the_learner_step_grid_waits_for_the_evaluator(tmp_path):
    state = _state(tmp_path)
    pool = RecordingPool()
    launcher = fake_launcher(state, pool)
    for train_iter in (8, 16, 18):  # 8 is sent and not answered before 19
        await _step_to(launcher, train_iter, budget_end=False)
    _reply(launcher, pool)
    await _step_to(launcher, 19, budget_end=False)
    # 16 was due while the evaluator was busy: it is sent at its own counters, not 19's
    assert [(r.train_iter, r.envstep) for r in pool.sent] == [(8, 80), (16, 160)]
    state.run.close()


async def test_an_eval_due_while_the_evaluator_is_busy_waits_with_its_counters(state):
    pool, store = RecordingPool(), VersionStore()
    launcher = fake_launcher(state, pool, store)
    await _step_to(launcher, 11, budget_end=True)  # sent; no reply yet
    await _step_to(launcher, 20, budget_end=True)  # due, the evaluator busy: waits
    assert [r.train_iter for r in pool.sent] == [11]
    assert state.evals.last_eval_iter == 20  # the gate moved when it was due, as in sync
    assert store.leases[20] == 1  # the waiting snapshot is held
    await _step_to(launcher, 23, budget_end=False)
    assert len(pool.sent) == 1
    _reply(launcher, pool)
    await _step_to(launcher, 25, budget_end=False)
    assert [(r.train_iter, r.envstep) for r in pool.sent] == [(11, 110), (20, 200)]
    assert store.leases[20] == 1  # the request's lease only: the queue returned its own
    assert not launcher.queued_evals


async def test_a_full_queue_leaves_the_gate_open_for_the_next_budget_end(state):
    pool = RecordingPool()
    launcher = fake_launcher(state, pool)
    await _step_to(launcher, 11, budget_end=True)  # sent; the evaluator stays busy
    for train_iter in (20, 29, 38):  # each due; the queue holds 2
        await _step_to(launcher, train_iter, budget_end=True)
    assert [p.version for _, p in launcher.queued_evals] == [20, 29]
    assert state.evals.last_eval_iter == 29  # 38 did not move it
    _reply(launcher, pool)
    await _step_to(launcher, 40, budget_end=False)  # 20 is sent; not a budget end
    await _step_to(launcher, 41, budget_end=True)  # 41 - 29 >= 8: queued now
    assert [r.train_iter for r in pool.sent] == [11, 20]
    assert [p.version for _, p in launcher.queued_evals] == [29, 41]


async def test_waiting_evals_are_dropped_once_an_eval_passed(state):
    pool, store = RecordingPool(), VersionStore()
    launcher = fake_launcher(state, pool, store)
    await _step_to(launcher, 11, budget_end=True)
    await _step_to(launcher, 20, budget_end=True)
    state.stop_reason = "stop_value"  # the eval of 11 reached the stop value
    _reply(launcher, pool)
    await _step_to(launcher, 20, budget_end=False)
    assert [r.train_iter for r in pool.sent] == [11]
    assert not launcher.queued_evals
    assert store.leases[20] == 0


async def test_a_lost_eval_does_not_rewind_the_gate_past_a_later_eval(tmp_path):
    state = _state(tmp_path, num_evaluator_actors=2, max_eval_inflight=2)
    pool = RecordingPool(workers=[WorkerHandle("evaluator", 0), WorkerHandle("evaluator", 1)])
    launcher = fake_launcher(state, pool)
    await _step_to(launcher, 8, budget_end=False)  # on evaluator 0
    await _step_to(launcher, 16, budget_end=False)  # on evaluator 1
    launcher.forget(pool.workers[0])  # the eval of 8 is lost; 16 was launched since
    assert state.evals.last_eval_iter == 16
    await _step_to(launcher, 17, budget_end=False)
    assert [r.train_iter for r in pool.sent] == [8, 16]
    state.run.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("grid", "step"),
    [("budget_end", 10), ("learner_step", 8)],
)
def test_a_sync_run_scores_the_versions_of_its_grid(tmp_path, grid, step):
    """Budgets of 5 learner steps, eval_freq 8: between collects the versions due are 10, 20,
    ...; inside the budgets, 8, 16, 24, ... (every one until the stop, then the final eval)."""
    cfg = tiny_config(tmp_path / "run", eval_freq=EVAL_FREQ, eval_grid=grid, update_per_collect=5)
    summary = train_sync(cfg, show_progress=False)
    _assert_scheduled_every(tmp_path / "run", summary, step)


@pytest.mark.timeout(120)
def test_a_sync_learner_step_run_schedules_no_eval_once_the_env_steps_are_spent(tmp_path):
    """eval_freq 2 puts a due version in every budget of 5, the last one (trained after the
    collect that spent max_env_step) included: none of them is scheduled there, as on
    'budget_end' and async; the final eval scores the last version."""
    cfg = tiny_config(tmp_path / "run", eval_freq=2, eval_grid="learner_step", update_per_collect=5)
    summary = train_sync(cfg, show_progress=False)
    evals = [e for e in events(tmp_path / "run") if e["event"] == "eval"]
    assert [e["envstep"] >= cfg.max_env_step for e in evals].count(True) == 1
    assert evals[-1]["policy_version"] == summary.train_iter
    assert evals[-2]["policy_version"] <= summary.train_iter - 5  # before the last budget


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("no_leaks")
async def test_a_budget_end_run_scores_only_versions_at_budget_ends(tmp_path):
    """Every budget is 5 learner steps (update_per_collect), so with eval_freq 8 the versions
    due are 10, 20, 30, ... ; every one of them until the stop is scored, in order, and the
    final eval (if any) scores the last version, also a budget end. (The first eval waits for
    the evaluator to start while the tiny learner runs on: the queue is made long enough for
    every due eval.)"""
    cfg = tiny_config(
        tmp_path / "run",
        eval_freq=EVAL_FREQ,
        update_per_collect=5,
        eval_grid="budget_end",
        async_pipeline={"max_queued_evals": 64},
    )
    summary = await train_async(cfg, show_progress=False)
    _assert_scheduled_every(tmp_path / "run", summary, 10)
    assert summary.train_iter % 5 == 0


@pytest.mark.timeout(240)
@pytest.mark.usefixtures("no_leaks")
async def test_both_pipelines_score_the_same_versions_by_default(tmp_path):
    """No eval setting but eval_freq: a sync and an async run of the same config score the same
    weight versions (50, 100, 150, ...; the final eval of the last version aside), so their
    curves compare the same weights. With budget-end evals in sync the versions were the first
    budget ends past each multiple."""
    runs = {}
    for pipeline in ("sync", "async"):
        cfg = tiny_config(tmp_path / pipeline, eval_freq=50, update_per_collect=7)
        if pipeline == "sync":
            train_sync(cfg, show_progress=False)
        else:
            await train_async(cfg, show_progress=False)
        evals = [e for e in events(tmp_path / pipeline) if e["event"] == "eval"]
        runs[pipeline] = [e["policy_version"] for e in evals if not e.get("final")]
    # every collect earns 7 learner steps, so the ~37 collects to 400 env steps (8 or 10 each,
    # as the chain's episodes end) train about 260: the multiples of 50 from 50 on, in both
    n = min(len(runs["sync"]), len(runs["async"]))
    assert n >= 4 and runs["sync"][:n] == [50, 100, 150, 200, 250, 300, 350][:n]
    assert runs["async"][:n] == runs["sync"][:n]
