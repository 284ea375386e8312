"""A run's output directory: resolved config, metrics (JSONL + TensorBoard), checkpoints.

Runs in: driver. Layout (DESIGN §7): `<exp_name>/config.yaml`, `log/metrics.jsonl`, TensorBoard
event files in `log/`, `ckpt/` with `ckpt_best.pth.tar`, periodic `iteration_<N>.pth.tar` and the
resumable `ckpt_latest.pth.tar`. Every checkpoint is written atomically (temp file + rename), so a
crash never leaves a truncated checkpoint behind.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

import torch

from zeropipe.config import ExperimentConfig, dump_config

log = logging.getLogger("zeropipe.run")


class MetricsLog:
    """Appends one JSON object per event to metrics.jsonl and mirrors scalars to TensorBoard.

    Args:
        log_dir: the run's `log/` directory.
        tensorboard: also write TensorBoard event files.
    """

    def __init__(self, log_dir: Path, tensorboard: bool = True) -> None:
        self.start = time.monotonic()
        self._file = open(log_dir / "metrics.jsonl", "a", buffering=1)  # noqa: SIM115
        self._writer = None
        if tensorboard:
            from tensorboardX import SummaryWriter

            self._writer = SummaryWriter(str(log_dir), flush_secs=10)

    def log(self, event: str, envstep: int, train_iter: int, **fields: Any) -> dict[str, Any]:
        """Write one event line; numeric fields also go to TensorBoard as `event/field`."""
        record = {
            "event": event,
            "time_s": round(time.monotonic() - self.start, 3),
            "envstep": int(envstep),
            "train_iter": int(train_iter),
            **{k: _plain(v) for k, v in fields.items()},
        }
        self._file.write(json.dumps(record) + "\n")
        if self._writer is not None:
            for key, value in record.items():
                if key in ("event", "envstep", "train_iter") or not _is_number(value):
                    continue
                self._writer.add_scalar(f"{event}/{key}", value, envstep)
        return record

    def close(self) -> None:
        """Flush and close both sinks."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if not self._file.closed:
            self._file.close()


class RunDir:
    """Creates the run directory and writes its files.

    Args:
        cfg: the resolved experiment config (written to config.yaml).
    """

    def __init__(self, cfg: ExperimentConfig) -> None:
        self.root = Path(cfg.exp_name)
        self.log_dir = self.root / "log"
        self.ckpt_dir = self.root / "ckpt"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        _atomic_write_text(self.root / "config.yaml", dump_config(cfg))
        self.metrics = MetricsLog(self.log_dir)

    def save(self, name: str, payload: dict[str, Any]) -> Path:
        """Atomically save `payload` as ckpt/<name>."""
        path = self.ckpt_dir / name
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        torch.save(payload, tmp)
        os.replace(tmp, path)
        return path

    def close(self) -> None:
        """Close the metrics sinks."""
        self.metrics.close()


def _atomic_write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _plain(value: Any) -> Any:
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
