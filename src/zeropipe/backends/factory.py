"""Which worker backend a run uses: its settings checked, and the backend opened.

Runs in: driver. The one place that names the implementations behind the seam (`base.py`):
`process` (`supervisor.WorkerPool` over shared-memory snapshots) and `ray`
(`ray.driver.RayBackend` over Ray's object store, imported only when asked for).
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import TYPE_CHECKING

from zeropipe.backends.base import RAY_INSTALL_HINT, WeightStore, WorkerBackend
from zeropipe.config import ConfigError, ExperimentConfig
from zeropipe.transport import ParamLayout

if TYPE_CHECKING:
    from zeropipe.backends.process.early import EarlyWorkers


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


def check_async_options(cfg: ExperimentConfig) -> None:
    """Reject async settings this machine or build cannot honour, naming the field.

    Raises:
        ConfigError: backend settings that cannot be honoured (backends.check_backend), or a
            GPU share without a CUDA device.
    """
    check_backend(cfg)
    ap = cfg.policy.async_pipeline
    for name in ("collector_num_gpus", "evaluator_num_gpus"):
        if getattr(ap, name) > 0 and not _cuda_available():
            raise ConfigError(
                f"policy.async_pipeline.{name}: a GPU share was asked for but torch sees no CUDA "
                "device; set it to 0 or install a CUDA build of torch (the Makefile's TORCH_INDEX)"
            )


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def open_backend(
    cfg: ExperimentConfig,
    layout: ParamLayout,
    inbox: asyncio.Queue,
    early: EarlyWorkers | None = None,
) -> tuple[WorkerBackend, WeightStore]:
    """The configured backend (not started yet) and its weight store.

    Every backend is opened the same way: `Backend(cfg, store, inbox)` over its own store.

    Args:
        cfg: the experiment config (`policy.async_pipeline.backend` picks the backend).
        layout: the parameter layout of every published version.
        inbox: the driver's queue of `(handle, generation, message | exception)`.
        early: worker processes the CLI started before the driver (process/early.py); the
            process backend adopts them, the others leave them to the CLI, which kills them.
    """
    if cfg.policy.async_pipeline.backend == "ray":
        from zeropipe.backends.ray.driver import RayBackend, RayWeightStore

        ray_store = RayWeightStore(layout)
        return RayBackend(cfg, ray_store, inbox), ray_store
    from zeropipe.backends.process.driver import WorkerPool
    from zeropipe.transport import SnapshotPublisher

    store = SnapshotPublisher(layout)
    return WorkerPool(cfg, store, inbox, early), store
