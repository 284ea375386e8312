"""The collector / evaluator worker process: handshake, requests, weight loading, exits."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing as mp
import os
import pickle
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from tests.tiny import tiny_config
from zeropipe.backends.process.worker import (
    WorkerSpec,
    applied_environment,
    needs_reload,
    serve,
    worker_environment,
    worker_main,
)
from zeropipe.config import ExperimentConfig
from zeropipe.envs import env_spec
from zeropipe.pipeline.build import build_network
from zeropipe.transport import (
    Bye,
    CollectRequest,
    CollectResult,
    DriverEndpoint,
    EvalRequest,
    EvalResult,
    Hello,
    ParamLayout,
    Shutdown,
    SnapshotLayout,
    SnapshotPublisher,
    SnapshotReader,
    SnapshotRef,
    WorkerEndpoint,
    WorkerError,
)
from zeropipe.workers import request_server
from zeropipe.workers.collector import Collector
from zeropipe.workers.request_server import RequestServer
from zeropipe.workers.wire import segments_from_wire

SPAWN = mp.get_context("spawn")
pytestmark = pytest.mark.usefixtures("no_leaks")


@pytest.fixture(scope="module")
def cfg() -> ExperimentConfig:
    return tiny_config(Path("unused"))


@pytest.fixture
def publisher(cfg: ExperimentConfig) -> Iterator[tuple[SnapshotPublisher, torch.nn.Module]]:
    """A publisher laid out for the tiny config's network, and a fresh network to publish."""
    torch.manual_seed(1)
    network = build_network(cfg, env_spec(cfg.env))
    with SnapshotPublisher(ParamLayout.from_state_dict(network.state_dict())) as pub:
        yield pub, network


@pytest.fixture
def start_worker() -> Iterator[Callable[..., Any]]:
    """Spawns ``worker_main`` the way the driver does; kills leftovers at teardown."""
    procs: list[mp.process.BaseProcess] = []

    async def start(spec: WorkerSpec) -> tuple[mp.process.BaseProcess, DriverEndpoint, Hello]:
        driver_conn, worker_conn = SPAWN.Pipe(duplex=True)
        proc = SPAWN.Process(target=worker_main, args=(worker_conn, spec), name=spec.name)
        with applied_environment(worker_environment(spec.num_threads)):
            proc.start()
        procs.append(proc)
        worker_conn.close()  # else the driver never sees EOF when the worker dies
        endpoint = DriverEndpoint(driver_conn, spec.name)
        hello = await endpoint.expect_hello(timeout=30)
        return proc, endpoint, hello

    yield start
    for proc in procs:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)


async def join(proc: mp.process.BaseProcess) -> int | None:
    await asyncio.to_thread(proc.join, 30)
    return proc.exitcode


@contextlib.asynccontextmanager
async def closing(endpoint: DriverEndpoint) -> AsyncIterator[DriverEndpoint]:
    try:
        yield endpoint
    finally:
        endpoint.close()


def collect_request(request_id: int, ref: SnapshotRef) -> CollectRequest:
    return CollectRequest(request_id, ref, ref.version, envstep=0, temperature=1.0, epsilon=0.0)


# --- pure pieces ------------------------------------------------------------------------------


def test_needs_reload_only_for_another_version() -> None:
    assert needs_reload(None, SnapshotRef("zeropipe_x_0", 0))
    assert needs_reload(3, SnapshotRef("zeropipe_x_0", 4))
    assert not needs_reload(4, SnapshotRef("zeropipe_x_1", 4))  # same version, another block


def test_worker_spec_is_plain_picklable_data(cfg: ExperimentConfig) -> None:
    spec = WorkerSpec.from_config(cfg, "evaluator", 2)
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert spec.name == "evaluator-2"
    assert spec.num_threads == cfg.policy.async_pipeline.evaluator_num_cpus
    assert ExperimentConfig.model_validate(spec.config) == cfg
    with pytest.raises(ValueError, match="role"):
        WorkerSpec("learner", 0, spec.config, 1)  # type: ignore[arg-type]


def test_worker_environment_is_applied_then_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    variables = worker_environment(3)
    assert variables["OMP_NUM_THREADS"] == variables["OPENBLAS_NUM_THREADS"] == "3"
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    with applied_environment(variables):
        assert os.environ["OMP_NUM_THREADS"] == os.environ["OPENBLAS_NUM_THREADS"] == "3"
    assert os.environ["OMP_NUM_THREADS"] == "8"
    assert "OPENBLAS_NUM_THREADS" not in os.environ


# --- the protocol, in-process (serve on a thread; cheap, and lets us count loads) --------------


@contextlib.contextmanager
def served(spec: WorkerSpec) -> Iterator[tuple[WorkerEndpoint, list[bool]]]:
    """Runs ``serve`` on a thread; yields the driver's (blocking) end and the outcome slot."""
    driver_conn, worker_conn = SPAWN.Pipe(duplex=True)
    outcome: list[bool] = []
    thread = threading.Thread(
        target=lambda: outcome.append(serve(WorkerEndpoint(worker_conn), spec)), daemon=True
    )
    thread.start()
    driver = WorkerEndpoint(driver_conn)  # symmetric blocking send/recv, used as the driver
    try:
        yield driver, outcome
    finally:
        driver.close()
        thread.join(30)
        assert not thread.is_alive()


@pytest.mark.timeout(60)
def test_an_evaluator_sets_numba_up_before_its_first_request_and_a_collector_does_not(
    cfg: ExperimentConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared: list[str] = []
    monkeypatch.setattr(
        request_server, "prepare_compiled_search", lambda: prepared.append("numba set up")
    )
    for role in ("collector", "evaluator"):
        server = RequestServer(WorkerSpec.from_config(cfg, role, 0), dict, logging.getLogger())
        server.close()
        assert prepared == ([] if role == "collector" else ["numba set up"])


@pytest.mark.timeout(60)
def test_weights_load_only_when_the_requested_version_changes(
    cfg: ExperimentConfig, publisher: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pub, network = publisher
    loads: list[tuple[int, dict[str, torch.Tensor]]] = []
    original = Collector.load_weights

    def recording_load(self: Collector, state_dict: dict[str, torch.Tensor], version: int) -> None:
        loads.append((version, {k: v.clone() for k, v in state_dict.items()}))
        original(self, state_dict, version)

    monkeypatch.setattr(Collector, "load_weights", recording_load)
    spec = WorkerSpec.from_config(cfg, "collector", 0)
    with served(spec) as (driver, outcome):
        assert isinstance(driver.recv(timeout=30), Hello)
        driver.send(SnapshotLayout(pub.layout))
        versions = []
        for request_id, version in enumerate([3, 3, 5]):
            ref = pub.publish(version, network.state_dict())
            driver.send(collect_request(request_id, ref))
            reply = driver.recv(timeout=30)
            assert isinstance(reply, CollectResult), reply
            versions.append(reply.policy_version)
            with torch.no_grad():  # the next version differs, so a missed reload would show
                next(network.parameters()).add_(1.0)
        driver.send(Shutdown())
        assert driver.recv(timeout=30) == Bye(0)
    assert outcome == [True]
    assert versions == [3, 3, 5]
    assert [version for version, _ in loads] == [3, 5]
    for (_, loaded), expected in zip(loads, [0.0, 2.0], strict=True):
        first = next(iter(loaded))
        torch.testing.assert_close(loaded[first], network.state_dict()[first] - 3.0 + expected)


@pytest.mark.timeout(60)
def test_first_message_other_than_layout_is_a_worker_error(
    cfg: ExperimentConfig, publisher: Any
) -> None:
    pub, network = publisher
    with served(WorkerSpec.from_config(cfg, "collector", 4)) as (driver, outcome):
        assert isinstance(driver.recv(timeout=30), Hello)
        driver.send(collect_request(0, pub.publish(1, network.state_dict())))
        error = driver.recv(timeout=30)
    assert outcome == [False]
    assert isinstance(error, WorkerError) and (error.worker_id, error.role) == (4, "collector")
    assert error.message.startswith("ProtocolError: collector-4: the driver's first message")
    assert "Traceback" in error.traceback


def test_reader_is_closed_when_serve_fails(
    cfg: ExperimentConfig, publisher: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[bool] = []
    monkeypatch.setattr(SnapshotReader, "close", lambda self: closed.append(True))
    pub, _ = publisher
    with served(WorkerSpec.from_config(cfg, "evaluator", 0)) as (driver, outcome):
        assert isinstance(driver.recv(timeout=30), Hello)
        driver.send(SnapshotLayout(pub.layout))
        driver.send(Hello.for_this_process(9, "collector"))
        error = driver.recv(timeout=30)
    assert isinstance(error, WorkerError) and "'hello'" in error.message
    assert outcome == [False] and closed == [True]


# --- real spawned worker processes -------------------------------------------------------------


@pytest.mark.timeout(60)
async def test_collector_process_collects_then_says_bye(
    cfg: ExperimentConfig, publisher: Any, start_worker: Callable[..., Any]
) -> None:
    pub, network = publisher
    proc, endpoint, hello = await start_worker(WorkerSpec.from_config(cfg, "collector", 1))
    async with closing(endpoint):
        assert (hello.worker_id, hello.role, hello.pid) == (1, "collector", proc.pid)
        await endpoint.send(SnapshotLayout(pub.layout))
        ref = pub.publish(7, network.state_dict())
        for request_id in (10, 11):  # the second reuses the loaded version
            pub.acquire(ref)
            await endpoint.send(collect_request(request_id, ref))
            result = await endpoint.recv(timeout=30)
            pub.release(ref)
            assert isinstance(result, CollectResult), result
            assert (result.request_id, result.worker_id, result.policy_version) == (
                request_id,
                1,
                7,
            )
            assert result.envstep_delta > 0
            assert result.busy_s >= result.duration_s > 0
            segments = segments_from_wire(result.segments, f"collect_result {request_id}")
            assert len(segments) >= cfg.num_segments
            assert all(s.obs.shape[1:] == (5,) and s.obs.dtype == np.float32 for s in segments)
        await endpoint.send(Shutdown())
        assert await endpoint.recv(timeout=30) == Bye(1)
    assert await join(proc) == 0


@pytest.mark.timeout(60)
async def test_evaluator_process_evaluates_and_rejects_a_collect_request(
    cfg: ExperimentConfig, publisher: Any, start_worker: Callable[..., Any]
) -> None:
    pub, network = publisher
    proc, endpoint, hello = await start_worker(WorkerSpec.from_config(cfg, "evaluator", 0))
    async with closing(endpoint):
        assert hello.role == "evaluator"
        await endpoint.send(SnapshotLayout(pub.layout))
        ref = pub.publish(2, network.state_dict())
        await endpoint.send(EvalRequest(0, ref, train_iter=2, envstep=100))
        result = await endpoint.recv(timeout=30)
        assert isinstance(result, EvalResult), result
        assert (result.request_id, result.policy_version) == (0, 2)
        assert len(result.episode_returns) == cfg.env.n_evaluator_episode
        assert result.reward_mean == pytest.approx(np.mean(result.episode_returns))
        await endpoint.send(collect_request(1, ref))
        error = await endpoint.recv(timeout=30)
    assert isinstance(error, WorkerError), error
    assert error.message.startswith("ProtocolError: evaluator-0 got a 'collect_request'")
    assert await join(proc) == 1


@pytest.mark.timeout(60)
async def test_stale_snapshot_ref_is_a_worker_error_and_exit_code_1(
    cfg: ExperimentConfig, publisher: Any, start_worker: Callable[..., Any]
) -> None:
    pub, network = publisher
    proc, endpoint, _ = await start_worker(WorkerSpec.from_config(cfg, "collector", 0))
    async with closing(endpoint):
        await endpoint.send(SnapshotLayout(pub.layout))
        ref = pub.publish(4, network.state_dict())
        await endpoint.send(collect_request(0, SnapshotRef(ref.block_name, 5)))
        error = await endpoint.recv(timeout=30)
    assert isinstance(error, WorkerError), error
    assert (error.worker_id, error.role) == (0, "collector")
    assert error.message.startswith("SnapshotError: block") and "not 5" in error.message
    assert "Traceback" in error.traceback and "SnapshotError" in error.traceback
    assert await join(proc) == 1


@pytest.mark.timeout(60)
async def test_worker_exits_quietly_when_the_driver_closes_the_pipe(
    cfg: ExperimentConfig, publisher: Any, start_worker: Callable[..., Any]
) -> None:
    pub, _ = publisher
    proc, endpoint, _ = await start_worker(WorkerSpec.from_config(cfg, "collector", 0))
    await endpoint.send(SnapshotLayout(pub.layout))
    endpoint.close()
    assert await join(proc) == 0
