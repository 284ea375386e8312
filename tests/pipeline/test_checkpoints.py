"""Checkpoints in real runs of both pipelines: failed saves, exact best weights, exact resume."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.runlog import events
from tests.tiny import tiny_config
from zeropipe.learner.trainer import Trainer
from zeropipe.outputs import run_dir as run_dir_module
from zeropipe.outputs.checkpoint_format import read_checkpoint
from zeropipe.outputs.errors import CheckpointError
from zeropipe.outputs.run_dir import LATEST, RunDir, load_latest
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.build import build_driver
from zeropipe.pipeline.run_state import RunState
from zeropipe.pipeline.sync import train_sync
from zeropipe.pipeline.threads import ThreadChoice
from zeropipe.transport import snapshot as snapshot_module

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("no_leaks")]


def train(pipeline: str, cfg):
    if pipeline == "sync":
        return train_sync(cfg)
    return asyncio.run(train_async(cfg, show_progress=False))


class FailingSaves:
    """torch.save that fails the second and later ckpt_latest saves (after writing half a file)
    and the first ckpt_best save with `error` (an errno)."""

    def __init__(self, error: int = errno.EIO) -> None:
        self.real = torch.save
        self.error = error
        self.latest_ok = 0
        self.latest_failed = 0
        self.best_failed = 0

    def __call__(self, obj, f) -> None:
        name = Path(f.name).name
        if ".ckpt_latest.pth.tar" in name:
            if self.latest_ok >= 1:
                self.latest_failed += 1
                f.write(b"half a checkpoint")
                raise OSError(self.error, os.strerror(self.error))
            self.latest_ok += 1
        if ".ckpt_best.pth.tar" in name and self.best_failed == 0 and self.error == errno.EIO:
            self.best_failed += 1
            raise OSError(self.error, os.strerror(self.error))
        self.real(obj, f)


@pytest.mark.parametrize("pipeline", ["sync", "async"])
def test_failing_periodic_saves_are_retried_while_training_goes_on(
    tmp_path, monkeypatch, caplog, pipeline
):
    """An I/O error (not a full disk) fails a save: said once per streak, retried, the run goes
    on; the previous good file stays."""
    cfg = tiny_config(tmp_path / "run", eval_freq=8)
    cfg.max_env_step = 128
    cfg.checkpoint.latest_interval_train_iter = 4
    disk = FailingSaves()
    monkeypatch.setattr(run_dir_module.torch, "save", disk)
    caplog.set_level(logging.WARNING, logger="zeropipe.driver")
    with pytest.raises(CheckpointError, match=r"ckpt_latest\.pth\.tar.*[Ii]nput/output error"):
        train(pipeline, cfg)  # the final save fails too: an error exit, after the stop line
    log = events(tmp_path / "run")
    assert log[-1]["event"] == "stop" and log[-1]["reason"] == "max_env_step"
    assert disk.latest_failed >= 3  # periodic tries kept coming (and the final one)
    errors = [e for e in log if e["event"] == "checkpoint_error"]
    assert sorted(e["kind"] for e in errors) == ["best", "final", "latest"]  # once per streak
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert sorted(r.getMessage().split()[0] for r in warned) == ["best", "latest"]
    assert [r.levelno for r in caplog.records if "final" in r.getMessage()] == [logging.ERROR]
    (saved,) = [e for e in log if e["event"] == "checkpoint"]
    path, payload = load_latest(cfg.exp_name)  # the previous good one, intact
    assert path.name == LATEST and payload["learner"]["train_iter"] == saved["train_iter"]
    best = read_checkpoint(tmp_path / "run" / "ckpt" / "ckpt_best.pth.tar")
    assert best["reward_mean"] == max(e["reward_mean"] for e in log if e["event"] == "eval")
    ckpt_files = [p.name for p in (tmp_path / "run" / "ckpt").iterdir()]
    assert not [n for n in ckpt_files if ".tmp" in n], ckpt_files


@pytest.mark.parametrize("pipeline", ["sync", "async"])
def test_a_full_disk_under_a_checkpoint_stops_the_run(tmp_path, monkeypatch, pipeline):
    """Nothing more could be saved: the run stops at its next check as on a full disk under its
    logs (it used to train on, every step of it lost), the last good checkpoint intact."""
    cfg = tiny_config(tmp_path / "run", eval_freq=8)
    cfg.max_env_step = 400
    cfg.checkpoint.latest_interval_train_iter = 4
    disk = FailingSaves(errno.ENOSPC)
    monkeypatch.setattr(run_dir_module.torch, "save", disk)
    with pytest.raises(CheckpointError, match=r"disk full \(no space left on device\)"):
        train(pipeline, cfg)  # the final save finds the disk full too
    log = events(tmp_path / "run")
    assert log[-1]["event"] == "stop" and log[-1]["reason"] == "disk_full"
    assert log[-1]["envstep"] < cfg.max_env_step
    assert disk.latest_failed == 2  # the periodic one that found the disk full, and the final
    errors = [e["kind"] for e in log if e["event"] == "checkpoint_error"]
    assert errors == ["latest", "final"]
    (saved,) = [e for e in log if e["event"] == "checkpoint"]
    path, payload = load_latest(cfg.exp_name)
    assert path.name == LATEST and payload["learner"]["train_iter"] == saved["train_iter"]


def equal(a, b, where: str = "") -> None:
    """Bit-exact equality of nested checkpoint payloads."""
    assert type(a) is type(b), where
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and torch.equal(a, b), where
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b), where
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            equal(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            equal(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


@pytest.mark.parametrize("written_by", ["this-version", "an-earlier-version"])
def test_resume_restores_learner_buffer_and_rng_bit_exactly(tmp_path, written_by):
    """Also from a checkpoint written the way earlier versions did: the payload with its numpy
    arrays pickled as such (torch.save without encoding), which took weights_only=False."""
    cfg = tiny_config(tmp_path / "run", use_priority=True)
    cfg.max_env_step = 64
    train_sync(cfg)
    saved = read_checkpoint(tmp_path / "run" / "ckpt" / LATEST)
    if written_by == "an-earlier-version":
        torch.save(saved, tmp_path / "run" / "ckpt" / LATEST)
    assert saved["learner"]["train_iter"] > 0 and saved["learner"]["optimizer"]["state"]
    comps = build_driver(cfg)  # fresh, freshly seeded components
    run = RunDir(cfg, resume=True)
    trainer = Trainer(comps.learner, comps.buffer, cfg.policy)
    state = RunState(cfg, run, trainer, ThreadChoice(1, "test"))
    state.restore_latest(load_latest(cfg.exp_name))
    run.close()
    again = state.latest_payload()
    # time_s goes on from the saved one; the collector's state is handed to the sync driver
    assert again.pop("time_s") >= saved.pop("time_s", 0.0)
    equal(state.collectors.restored, saved.pop("collector"))
    again.pop("collector")
    equal(again, saved)  # weights, target, optimizer, buffer, counters, RNGs


def test_ckpt_best_holds_exactly_the_evaluated_weights(tmp_path, monkeypatch):
    published: dict[int, dict[str, torch.Tensor]] = {}
    real_publish = snapshot_module.SnapshotPublisher.publish

    def recording_publish(self, version, state_dict):
        published.setdefault(version, {k: v.detach().clone() for k, v in state_dict.items()})
        return real_publish(self, version, state_dict)

    monkeypatch.setattr(snapshot_module.SnapshotPublisher, "publish", recording_publish)
    cfg = tiny_config(tmp_path / "run", eval_freq=8)
    cfg.max_env_step = 128
    asyncio.run(train_async(cfg, show_progress=False))
    evals = [e for e in events(tmp_path / "run") if e["event"] == "eval"]
    best = read_checkpoint(tmp_path / "run" / "ckpt" / "ckpt_best.pth.tar")
    first_best = next(e for e in evals if e["reward_mean"] == best["reward_mean"])
    assert best["policy_version"] == first_best["policy_version"]
    equal(best["model"], published[best["policy_version"]])
