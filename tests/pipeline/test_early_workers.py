"""Workers started before the driver (the CLI's early start) are the run's workers: the process
backend adopts them instead of spawning its own; those it cannot use are killed, none left."""

from __future__ import annotations

import pytest

from tests.tiny import tiny_config
from zeropipe.backends.process import driver as supervisor
from zeropipe.backends.process.early import EarlyWorkers, early_workers
from zeropipe.pipeline.async_driver import train_async

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("no_leaks")]


def _config(run, **changes):
    cfg = tiny_config(run, learner_num_threads=1)
    cfg.policy.async_pipeline.enabled = True
    for key, value in changes.items():
        setattr(cfg, key, value)
    return cfg


def _spawns(monkeypatch) -> list[str]:
    """The names of the workers the process backend spawns itself (a spy on its spawn)."""
    names: list[str] = []
    real = supervisor.spawn_worker

    def spawn(spec, name):
        names.append(name)
        return real(spec, name)

    monkeypatch.setattr(supervisor, "spawn_worker", spawn)
    return names


async def test_the_backend_adopts_the_workers_started_early(tmp_path, monkeypatch):
    cfg = _config(tmp_path / "run")
    early = early_workers(cfg)
    assert early is not None
    pids = {process.pid for _spec, process, _conn in early.started}
    assert len(pids) == 1  # tiny_config: one collector (evaluators start with the backend)
    spawned = _spawns(monkeypatch)
    try:
        summary = await train_async(cfg, show_progress=False, early_workers=early)
    finally:
        early.close()
    assert summary.stop_reason == "max_env_step"
    assert spawned == ["zeropipe-evaluator-0"]  # the collector was the early one
    assert early.started == []


async def test_workers_started_for_another_config_are_not_used_and_are_killed(
    tmp_path, monkeypatch
):
    early = EarlyWorkers(_config(tmp_path / "other", seed=123))  # another seed: other specs
    processes = [process for _spec, process, _conn in early.started]
    spawned = _spawns(monkeypatch)
    try:
        summary = await train_async(
            _config(tmp_path / "run"), show_progress=False, early_workers=early
        )
        assert all(p.is_alive() for p in processes)  # left alone, for close() to kill
    finally:
        early.close()
    assert summary.stop_reason == "max_env_step"
    assert sorted(spawned) == ["zeropipe-collector-0", "zeropipe-evaluator-0"]
    assert early.started == []
    early.close()  # idempotent


def test_no_early_workers_for_a_sync_run_or_ray(tmp_path):
    cfg = tiny_config(tmp_path / "run")
    assert early_workers(cfg) is None  # sync
    cfg.policy.async_pipeline.enabled = True
    cfg.policy.async_pipeline.backend = "ray"
    assert early_workers(cfg) is None
