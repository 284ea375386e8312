"""The async pipeline on the `ray` backend: a short run, one put per version, a killed actor,
config errors, and (slow) collectors placed on a second node of a two-node cluster."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import signal
from collections.abc import AsyncIterator

import pytest

from tests.runlog import events, wait_for_event
from tests.tiny import tiny_config
from zeropipe.backends.base import spawn_seed
from zeropipe.backends.ray.driver import RayBackend, RayWeightStore, actor_name
from zeropipe.config import ConfigError
from zeropipe.pipeline.async_driver import check_async_options, train_async
from zeropipe.transport import CollectRequest

ray = pytest.importorskip("ray", reason="the ray extra is not installed")
pytestmark = [pytest.mark.usefixtures("no_leaks", "no_ray_leaks")]


def ray_config(run, **async_pipeline):
    return tiny_config(run, async_pipeline={"backend": "ray", "enabled": True, **async_pipeline})


@contextlib.asynccontextmanager
async def driving(cfg) -> AsyncIterator[asyncio.Task]:
    """`cfg`'s run as a task; cancelled (and awaited) if the block leaves it running."""
    driver = asyncio.create_task(train_async(cfg, show_progress=False), name="driver")
    try:
        yield driver
    finally:
        if not driver.done():
            driver.cancel()
            with pytest.raises(asyncio.CancelledError):
                await driver


@pytest.mark.timeout(240)
async def test_a_short_ray_run_learns_on_actors_with_one_put_per_version(tmp_path, monkeypatch):
    resident: list[int] = []  # versions the store still references, after each publish
    real_publish = RayWeightStore.publish

    def recording_publish(self, version, state_dict):
        ref = real_publish(self, version, state_dict)
        resident.append(len(self.resident_versions))
        recording_publish.store = self
        return ref

    monkeypatch.setattr(RayWeightStore, "publish", recording_publish)
    run = tmp_path / "run"
    cfg = ray_config(run)
    cfg.max_env_step = 200
    async with asyncio.timeout(200):
        summary = await train_async(cfg, show_progress=False)
    assert summary.stop_reason == "max_env_step" and summary.train_iter > 0
    log = events(run)
    collects = [e for e in log if e["event"] == "collect"]
    assert collects and {e["worker"] for e in collects} == {"collector-0"}
    assert max(e["policy_version"] for e in collects) > 0  # collectors loaded learned weights
    evals = [e for e in log if e["event"] == "eval"]
    assert evals[-1]["policy_version"] == summary.train_iter  # the final eval, as with processes
    publishes = [e for e in log if e["event"] == "publish"]
    store = recording_publish.store
    assert store.puts == len(publishes) == len({e["policy_version"] for e in publishes})
    # One collector and one evaluator hold at most one version each, plus the latest, plus the
    # due evals waiting for the evaluator with their snapshots (the eval grid's queue).
    assert max(resident) <= 3 + cfg.policy.async_pipeline.max_queued_evals
    assert store.resident_versions == []  # closed: every object reference dropped
    assert not [e for e in log if e["event"] == "restart"]


@pytest.mark.slow  # the fast path kills process workers (test_worker_faults, test_replacement_seed)
@pytest.mark.timeout(300)
async def test_a_killed_collector_actor_is_restarted_and_the_run_stops_by_its_rule(
    tmp_path, caplog
):
    run = tmp_path / "run"
    cfg = ray_config(run, ray_local_mode=True)  # Ray 2.60 has none: a private Ray, said so
    cfg.max_env_step = 600
    async with driving(cfg) as driver:
        await wait_for_event(run, lambda e: e["event"] == "train" and e["train_iter"] >= 4)
        actor = ray.get_actor(actor_name(os.getpid(), "collector-0", 0))
        hello, _node = await actor.hello.remote()
        os.kill(hello.pid, signal.SIGKILL)  # the actor's process, mid-run
        async with asyncio.timeout(240):
            summary = await driver
    assert summary.stop_reason == "max_env_step"
    assert "has no local mode" in caplog.text
    log = events(run)
    (restart,) = [e for e in log if e["event"] == "restart"]
    assert restart["worker"] == "collector-0" and restart["generation"] == 1
    assert restart["seed"] == spawn_seed(cfg.seed, "collector", 0, 1)
    assert "actor died" in restart["error"]
    after = [e for e in log if e["event"] == "collect" and e["time_s"] > restart["time_s"]]
    assert after, "the replacement actor never collected"


def process_state(pid: int) -> str | None:
    """The state letter of `pid` in /proc (T: stopped, Z: exited), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


@pytest.mark.slow  # the fast path has the hung rule on process workers (test_worker_faults)
@pytest.mark.timeout(300)
async def test_a_stopped_collector_actor_is_killed_as_hung_and_replaced(tmp_path, monkeypatch):
    stopped: list[int] = []
    collects = 0
    real_submit = RayBackend.submit

    async def submit(self, handle, request):
        nonlocal collects
        await real_submit(self, handle, request)
        collects += isinstance(request, CollectRequest)
        if collects == 2 and not stopped:  # one collect measured: SIGSTOP the actor's process
            stopped.append(handle.pid)
            os.kill(handle.pid, signal.SIGSTOP)

    monkeypatch.setattr(RayBackend, "submit", submit)
    run = tmp_path / "run"
    cfg = ray_config(run, min_request_deadline_s=5.0, request_deadline_factor=3.0)
    cfg.max_env_step = 96
    try:
        async with driving(cfg) as driver:
            restart = await wait_for_event(run, lambda e: e["event"] == "restart", timeout_s=120)
            assert restart["worker"] == "collector-0" and restart["cause"] == "hung"
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while process_state(stopped[0]) not in (None, "Z") and loop.time() < deadline:
                await asyncio.sleep(0.1)  # polling for the killed process to exit, bounded
            assert process_state(stopped[0]) in (None, "Z"), "ray.kill left the stopped actor"
            async with asyncio.timeout(180):
                summary = await driver
    finally:
        for pid in stopped:
            if process_state(pid) == "T":
                os.kill(pid, signal.SIGKILL)
    assert summary.stop_reason == "max_env_step"
    assert [e["worker"] for e in events(run) if e["event"] == "restart"] == ["collector-0"]


def test_ray_without_ray_installed_is_a_config_error_naming_the_extra(tmp_path, monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "ray" else real_find_spec(name, *a),
    )
    with pytest.raises(ConfigError, match=r'pip install -e "\.\[ray\]"'):
        check_async_options(ray_config(tmp_path / "run"))


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"ray_address": "auto"}, "ray_address"),
        ({"collector_resources": {"node2": 1}}, "collector_resources"),
        ({"ray_local_mode": True}, "ray_local_mode"),
    ],
)
def test_ray_options_on_the_process_backend_are_config_errors(tmp_path, options, needle):
    cfg = tiny_config(tmp_path / "run", async_pipeline={"enabled": True, **options})
    with pytest.raises(ConfigError, match=needle):
        check_async_options(cfg)


def test_local_mode_cannot_join_a_cluster(tmp_path):
    cfg = ray_config(tmp_path / "run", ray_local_mode=True, ray_address="auto")
    with pytest.raises(ConfigError, match="ray_local_mode"):
        check_async_options(cfg)


@pytest.mark.slow
@pytest.mark.timeout(420)
async def test_collectors_run_on_the_node_that_offers_their_resource(tmp_path):
    """A two-node cluster on this machine: the head, and a node offering `collector_node`."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False},
    )
    try:
        node2 = cluster.add_node(num_cpus=2, resources={"collector_node": 2})
        cluster.wait_for_nodes()
        run = tmp_path / "run"
        cfg = ray_config(
            run,
            num_collector_actors=2,
            collector_resources={"collector_node": 1},
            ray_address=cluster.address,
        )
        cfg.max_env_step = 300
        driver = asyncio.create_task(train_async(cfg, show_progress=False), name="driver")
        await wait_for_event(run, lambda e: e["event"] == "collect", timeout_s=180)
        nodes = {}
        for name in ("collector-0", "collector-1", "evaluator-0"):
            _hello, nodes[name] = await ray.get_actor(
                actor_name(os.getpid(), name, 0)
            ).hello.remote()
        async with asyncio.timeout(300):
            summary = await driver
        assert nodes["collector-0"] == nodes["collector-1"] == node2.node_id
        assert nodes["evaluator-0"] == cluster.head_node.node_id
        assert summary.stop_reason == "max_env_step" and summary.best_reward == 1.0
        assert not ray.is_initialized()  # the run disconnected at its end...
        assert cluster.head_node.remaining_processes_alive()  # ...and left the cluster running
    finally:
        ray.shutdown()
        cluster.shutdown()


class _FakeObjectRef:
    """Stands in for ray.put's ObjectRef in the store's lease rules (no Ray started)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def hex(self) -> str:
        return f"{self.n:040x}"


def test_the_weight_store_keeps_a_version_while_leased_and_only_then(monkeypatch):
    import numpy as np

    from zeropipe.transport import ParamLayout, SnapshotError

    puts = []
    monkeypatch.setattr(ray, "put", lambda obj: puts.append(obj) or _FakeObjectRef(len(puts)))
    weights = {"w": np.zeros(3, np.float32)}
    store = RayWeightStore(ParamLayout.from_state_dict(weights))
    v1 = store.publish(1, weights)
    assert store.publish(1, weights) == v1 and len(puts) == 1  # one put per version
    store.acquire(v1)
    v2 = store.publish(2, weights)
    assert store.resident_versions == [1, 2]  # v1 is leased: kept
    store.release(v1)
    assert store.resident_versions == [2]  # unleased and not the latest: dropped
    with pytest.raises(SnapshotError, match="no longer in the store"):
        store.acquire(v1)
    with pytest.raises(SnapshotError, match="without a matching acquire"):
        store.release(v2)
    with pytest.raises(SnapshotError, match="versions only increase"):
        store.publish(1, weights)
    store.close()
    assert store.resident_versions == []
    store.release(v2)  # after close: a no-op, as for the shared-memory publisher


@pytest.mark.slow  # the fast path has it on process workers (test_resume_collector_states)
@pytest.mark.timeout(300)
async def test_a_resumed_ray_run_goes_on_with_its_collectors_states(tmp_path):
    from tests.cli.test_resume_collector_states import _held, _stored
    from zeropipe.outputs.checkpoint_format import read_checkpoint

    run = tmp_path / "run"
    cfg = ray_config(run)
    cfg.max_env_step = 120
    async with asyncio.timeout(120):
        await train_async(cfg, show_progress=False)
    latest = run / "ckpt" / "ckpt_latest.pth.tar"
    stopped = read_checkpoint(latest)
    assert list(stopped["collector_workers"]) == ["collector-0"]
    assert _stored(stopped) + _held(stopped) == stopped["envstep"]
    cfg.max_env_step = 240
    async with asyncio.timeout(120):
        await train_async(cfg, show_progress=False, resume=True)
    resumed = read_checkpoint(latest)
    assert resumed["envstep"] > stopped["envstep"]
    assert _stored(resumed) + _held(resumed) == resumed["envstep"]  # none lost at the resume
