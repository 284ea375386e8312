"""Which worker backend a run uses: its settings checked, and the backend opened.

Runs in: driver. The one place that names the implementations behind the seam (`backend.py`):
`process` (`supervisor.WorkerPool` over shared-memory snapshots) and `ray`
(`ray_backend.RayBackend` over Ray's object store, imported only when asked for).
"""

from __future__ import annotations

import asyncio
import importlib.util

from zeropipe.config import ConfigError, ExperimentConfig
from zeropipe.pipeline.backend import RAY_INSTALL_HINT, WeightStore, WorkerBackend
from zeropipe.transport import ParamLayout


def check_backend(cfg: ExperimentConfig) -> None:
    """Reject backend settings that cannot be honoured, naming the field and the fix.

    Raises:
        ConfigError: Ray asked for without Ray installed; Ray options on the process backend;
            `ray_local_mode` together with `ray_address`.
    """
    ap = cfg.policy.async_pipeline
    if ap.backend == "process":
        for name in ("ray_local_mode", "ray_address", "collector_resources", "evaluator_resources"):
            if getattr(ap, name):
                raise ConfigError(
                    f"policy.async_pipeline.{name}: a Ray option, but the backend is 'process'; "
                    "set policy.async_pipeline.backend: ray to run the workers as Ray actors"
                )
        return
    if importlib.util.find_spec("ray") is None:
        raise ConfigError(
            "policy.async_pipeline.backend: 'ray' needs Ray, which is not installed: install "
            f"zeropipe's ray extra ({RAY_INSTALL_HINT}), or use backend: process"
        )
    if ap.ray_local_mode and ap.ray_address:
        raise ConfigError(
            "policy.async_pipeline.ray_local_mode: local mode runs on this machine only; it "
            "cannot join the cluster at policy.async_pipeline.ray_address (unset one of them)"
        )


def open_backend(
    cfg: ExperimentConfig, layout: ParamLayout, inbox: asyncio.Queue
) -> tuple[WorkerBackend, WeightStore]:
    """The configured backend (not started yet) and its weight store.

    Every backend is opened the same way: `Backend(cfg, store, inbox)` over its own store.

    Args:
        cfg: the experiment config (`policy.async_pipeline.backend` picks the backend).
        layout: the parameter layout of every published version.
        inbox: the driver's queue of `(handle, generation, message | exception)`.
    """
    if cfg.policy.async_pipeline.backend == "ray":
        from zeropipe.pipeline.ray_backend import RayBackend as Backend
        from zeropipe.pipeline.ray_backend import RayWeightStore as Store
    else:
        from zeropipe.pipeline.supervisor import WorkerPool as Backend
        from zeropipe.transport import SnapshotPublisher as Store
    store = Store(layout)
    return Backend(cfg, store, inbox), store
