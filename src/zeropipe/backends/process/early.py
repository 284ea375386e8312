"""Worker processes started before the driver exists, so their start-up overlaps the driver's own.

Runs in: the CLI process, before it imports the driver. A spawned worker needs about a second
before it can collect (a fresh interpreter imports torch, then builds its network and envs); the
`train` command itself spends about as long importing the driver (torch, tensorboardX, the
optimiser's torch._dynamo) and building the learner. Started one after the other, a run's first
collect waited for both; started here, as soon as the config is checked, the collectors get
ready while the driver imports, and the process backend (supervisor.WorkerPool) adopts each one
whose start it would have made itself: same role, id and spec (the config, the generation-0 seed,
the threads). Evaluators are not started here: nothing needs them before the first eval, and on a
2-core machine a third interpreter importing torch slowed the two the run waits for (the driver
and the collector); the backend starts them without waiting for their handshake. A worker it
does not adopt (the config changed on the way, or the run never started) is killed by `close()`,
which every exit path of the CLI calls.

Only the CLI does this: an application that embeds the driver has imported it long before.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
from multiprocessing.connection import Connection
from typing import Any

from zeropipe.backends.base import ReplacingWorkers, WorkerHandle
from zeropipe.backends.process.worker import (
    applied_environment,
    sigint_blocked,
    worker_environment,
    worker_main,
)
from zeropipe.config import ExperimentConfig
from zeropipe.workers.request_server import WorkerSpec

SPAWN = mp.get_context("spawn")


def spawn_worker(spec: WorkerSpec, name: str) -> tuple[Any, Connection]:
    """Start one worker process; returns it and the driver's end of its pipe."""
    parent, child = SPAWN.Pipe(duplex=True)
    process = SPAWN.Process(target=worker_main, args=(child, spec), name=name, daemon=True)
    # spawn children read these before importing numpy/torch, and ignore Ctrl-C from the start
    with applied_environment(worker_environment(spec.num_threads)), sigint_blocked():
        process.start()
    child.close()  # else the kernel never reports EOF when the worker dies
    return process, parent


class EarlyWorkers:
    """The generation-0 collectors of `cfg`'s process backend, started now.

    Args:
        cfg: the run's config, async pipeline on, backend `process`.
    """

    def __init__(self, cfg: ExperimentConfig) -> None:
        plan = ReplacingWorkers(cfg, asyncio.Queue(), WorkerHandle)
        self.started: list[tuple[WorkerSpec, Any, Connection]] = []
        try:
            # a Ctrl-C meanwhile is raised once every started worker is listed here, to be killed
            with sigint_blocked():
                for handle in plan.of_role("collector"):
                    spec = plan.next_spec(handle)
                    self.started.append((spec, *spawn_worker(spec, f"zeropipe-{handle.name}")))
        except BaseException:
            self.close()
            raise

    def take(self, spec: WorkerSpec) -> tuple[Any, Connection] | None:
        """The started worker for `spec` (it is the caller's from now on), if there is one."""
        for i, (started_spec, process, conn) in enumerate(self.started):
            if started_spec == spec:
                del self.started[i]
                return process, conn
        return None

    def close(self) -> None:
        """Kill and reap every worker nobody took (idempotent)."""
        started, self.started = self.started, []
        for _spec, process, conn in started:
            conn.close()
            process.kill()
            process.join()
            process.close()


def early_workers(cfg: ExperimentConfig) -> EarlyWorkers | None:
    """Start `cfg`'s collectors now when its run is async on the process backend; else None."""
    ap = cfg.policy.async_pipeline
    if not ap.enabled or ap.backend != "process":
        return None
    return EarlyWorkers(cfg)
