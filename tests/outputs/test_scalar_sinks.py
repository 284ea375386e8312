"""The scalar sinks of a run directory: which fields draw curves, the wandb mirror (with a fake
`wandb` module: no account, no network), and the text log attached for the run's lifetime."""

from __future__ import annotations

import logging
import sys
import types
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.tiny import tiny_config
from zeropipe.config import ConfigError
from zeropipe.outputs.events import CheckpointEvent, EvalEvent, TrainEvent
from zeropipe.outputs.run_dir import RunDir
from zeropipe.outputs.scalar_sinks import curve_scalars, flat_config


@pytest.mark.parametrize(
    ("record", "want"),
    [
        (
            {"event": "train", "time_s": 3.5, "envstep": 80, "train_iter": 7, "total_loss": 1.5,
             "learner_threads": 1, "lr": 0.003},
            {"train/total_loss": 1.5, "train/lr": 0.003},
        ),
        (
            {"event": "eval", "time_s": 1.0, "envstep": 80, "train_iter": 7, "reward_mean": 9,
             "episode_returns": [9, 9], "policy_version": 7, "final": True},
            {"eval/reward_mean": 9.0},
        ),
        (  # a NaN was written to the JSON line as None; neither draws a point
            {"event": "collect", "time_s": 1.0, "envstep": 8, "train_iter": 0,
             "episode_return_mean": None, "policy_lag": 0, "segments": 2},
            {"collect/policy_lag": 0.0},
        ),
        ({"event": "checkpoint", "time_s": 9.0, "envstep": 8, "train_iter": 0,
          "name": "ckpt_latest.pth.tar", "reason": "periodic"}, {}),
        ({"event": "stop", "time_s": 9.0, "envstep": 8, "train_iter": 0, "reason": "x"}, {}),
        ({"event": "restart", "time_s": 2.0, "envstep": 8, "train_iter": 0, "worker":
          "collector-0", "generation": 1, "seed": 1001, "cause": "died"}, {}),
    ],
)  # fmt: skip
def test_only_fields_that_draw_a_curve_are_scalars(record, want):
    assert curve_scalars(record) == want


def test_the_flat_config_names_each_leaf_by_its_path(tmp_path):
    flat = flat_config(tiny_config(tmp_path / "run"))
    assert flat["env.env_id"] == "zeropipe/Chain-v0"
    assert flat["policy.model.latent_dim"] == 16
    assert flat["policy.model.value_support_range"] == "[-5, 6, 1]"
    assert flat["wandb.enabled"] is False
    assert "env.max_episode_steps" not in flat  # None


class FakeWandb(types.ModuleType):
    """What WandbSink calls of wandb, recorded."""

    def __init__(self) -> None:
        super().__init__("wandb")
        self.inits: list[dict] = []
        self.logged: list[tuple[dict, int]] = []
        self.finished = 0

    def init(self, **kwargs):
        self.inits.append(kwargs)
        fake = self

        class Run:
            def log(self, data, step):
                fake.logged.append((dict(data), step))

            def finish(self):
                fake.finished += 1

        return Run()


def test_wandb_mirrors_the_tensorboard_scalars(tmp_path, monkeypatch):
    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    cfg = tiny_config(tmp_path / "run")
    cfg.wandb.enabled = True
    cfg.wandb.project = "p"
    run = RunDir(cfg)
    run.metrics.emit(TrainEvent(envstep=40, train_iter=3, learner={"total_loss": 2.5}))
    run.metrics.emit(CheckpointEvent(envstep=40, train_iter=3, name="ckpt_latest.pth.tar"))
    run.metrics.emit(EvalEvent(envstep=80, train_iter=6, reward_mean=4.0, policy_version=6))
    run.close()
    (init,) = fake.inits
    assert init["project"] == "p" and init["name"] == "run" and init["mode"] == "online"
    assert init["config"]["policy.batch_size"] == 8 and init["dir"] == str(run.log_dir)
    (train, at_train), (evaluation, at_eval) = fake.logged
    assert (at_train, train["train/total_loss"], at_eval, evaluation["eval/reward_mean"]) == (
        40,
        2.5,
        80,
        4.0,
    )
    assert not any(tag.startswith("checkpoint/") for tag in {**train, **evaluation})
    assert "train/learner_threads" not in train and "eval/policy_version" not in evaluation
    assert fake.finished == 1
    (path,) = run.log_dir.glob("events.out.tfevents.*")
    acc = EventAccumulator(str(path))
    acc.Reload()
    tensorboard = sorted((t, p.step, p.value) for t in acc.Tags()["scalars"] for p in
                         acc.Scalars(t))  # fmt: skip
    mirrored = [(tag, at, value) for line, at in fake.logged for tag, value in line.items()]
    assert tensorboard == sorted(mirrored)


def test_wandb_without_the_package_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb raises ImportError
    cfg = tiny_config(tmp_path / "run")
    cfg.wandb.enabled = True
    with pytest.raises(ConfigError, match=r'pip install -e "\.\[wandb\]"'):
        RunDir(cfg)
    assert not (tmp_path / "run").exists()


def test_the_text_log_holds_the_runs_records_only(tmp_path: Path):
    logger = logging.getLogger("zeropipe.test")
    handlers = list(logging.getLogger("zeropipe").handlers)
    logger.info("before the run")
    run = RunDir(tiny_config(tmp_path / "run"))
    level = logging.getLogger("zeropipe").level
    logging.getLogger("zeropipe").setLevel(logging.DEBUG)  # let every record reach the handler
    try:
        logger.debug("a debug record")
        logger.info("an info record")
        logger.warning("a warning")
        run.close()
        logger.warning("after the run")
    finally:
        logging.getLogger("zeropipe").setLevel(level)
    text = (tmp_path / "run" / "log" / "train.log").read_text()
    lines = [line.split(" ", 2)[2] for line in text.splitlines()]  # without the date and time
    assert lines == ["zeropipe.test INFO: an info record", "zeropipe.test WARNING: a warning"]
    assert logging.getLogger("zeropipe").handlers == handlers


@pytest.mark.timeout(60)  # before the fix the 11th event blocked forever
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_tensorboard_writer_that_fails_stops_the_sink_not_the_run(tmp_path: Path, caplog):
    """A full disk kills tensorboardX's writer thread at its next write; its queue then fills and
    a put would block the run for ever (seen: a SIGTERM on a full disk hung at the final train
    line). The sink says so once and sends nothing more; closing it returns. Neither the dying
    thread nor tensorboardX's own close at exit prints a traceback (the warning filter turns an
    unhandled thread exception into a failure)."""
    import errno

    from zeropipe.outputs.scalar_sinks import TensorBoardSink

    sink = TensorBoardSink(tmp_path, None)
    event_writer = sink._writer.file_writer.event_writer

    def full_disk(_event):
        raise OSError(errno.ENOSPC, "No space left on device")

    event_writer._ev_writer.write_event = full_disk
    sink.add_scalars({"train/total_loss": 1.0}, 1)  # the write that kills the thread
    event_writer._worker.join(30)
    assert not event_writer._worker.is_alive()
    with caplog.at_level(logging.WARNING, logger="zeropipe.run"):
        for step in range(2, 100):  # far more events than tensorboardX's default queue holds
            sink.add_scalars({f"train/value_{i}": float(i) for i in range(25)}, step)
        sink.close()
    warnings = [r for r in caplog.records if "TensorBoard event file" in r.getMessage()]
    assert len(warnings) == 1 and "full disk" in warnings[0].getMessage()
    event_writer.close()  # what tensorboardX's exit hook calls: nothing to flush, no error
