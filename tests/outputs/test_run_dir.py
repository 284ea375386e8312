"""The run directory: the refusal policy, durable atomic checkpoint writes, resume fallback."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.crafted import write_crafted_checkpoint
from tests.tiny import tiny_config
from zeropipe.config import ConfigError
from zeropipe.outputs import run_dir as run_dir_module
from zeropipe.outputs.errors import CheckpointError, CheckpointRefused, RunDirExists, RunDirLocked
from zeropipe.outputs.events import CollectEvent, ResumeEvent
from zeropipe.outputs.run_dir import LATEST, LATEST_PREV, RunDir, load_latest


def files_of(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def latest_payload(train_iter: int) -> dict:
    return {
        "learner": {"train_iter": train_iter, "w": torch.arange(4.0) * train_iter},
        "buffer": {},
        "envstep": 10 * train_iter,
        "last_eval_iter": 0,
        "best_reward": None,
    }


def test_a_new_run_refuses_an_existing_run_and_changes_nothing(tmp_path):
    cfg = tiny_config(tmp_path / "run")
    first = RunDir(cfg)
    first.metrics.emit(CollectEvent(envstep=38, train_iter=0))
    first.save(LATEST, latest_payload(5))
    first.close()
    before = files_of(tmp_path / "run")
    with pytest.raises(RunDirExists, match="--resume"):
        RunDir(cfg)
    assert files_of(tmp_path / "run") == before
    resumed = RunDir(cfg, resume=True)  # --resume reopens it and appends
    resumed.metrics.emit(ResumeEvent(envstep=38, train_iter=5))
    resumed.close()
    lines = (tmp_path / "run" / "log" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 2


def test_resume_drops_a_half_written_last_line_instead_of_gluing_onto_it(tmp_path, caplog):
    cfg = tiny_config(tmp_path / "run")
    first = RunDir(cfg)
    first.metrics.emit(CollectEvent(envstep=38, train_iter=0))
    first.close()
    metrics = tmp_path / "run" / "log" / "metrics.jsonl"
    whole = metrics.read_bytes()
    with metrics.open("ab") as f:  # a run killed mid-write (or a full disk) left this behind
        f.write(b'{"event": "train", "time_s": 1.2, "envst')
    resumed = RunDir(cfg, resume=True)
    assert metrics.read_bytes() == whole
    assert "dropped a half-written last line (40 bytes)" in caplog.text
    resumed.metrics.emit(ResumeEvent(envstep=38, train_iter=5))
    resumed.close()
    lines = metrics.read_text().splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["collect", "resume"]


def test_an_empty_existing_directory_is_accepted(tmp_path):
    (tmp_path / "run").mkdir()
    RunDir(tiny_config(tmp_path / "run")).close()


def _assert_first_save_intact(run: RunDir, root: Path) -> None:
    """After a failed second save: no temp file left, and the latest is still the first save."""
    run.close()
    assert not [p.name for p in (root / "ckpt").iterdir() if ".tmp" in p.name]
    path, payload = load_latest(str(root))
    assert path.name == LATEST and payload["learner"]["train_iter"] == 1


def test_a_failed_save_leaves_no_debris_and_the_previous_file(tmp_path, monkeypatch):
    run = RunDir(tiny_config(tmp_path / "run"))
    run.save(LATEST, latest_payload(1))

    def disk_full(obj, f):
        f.write(b"partial bytes")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(run_dir_module.torch, "save", disk_full)
    with pytest.raises(
        CheckpointError, match=r"ckpt_latest\.pth\.tar: disk full \(no space left on device\)"
    ):
        run.save(LATEST, latest_payload(2))
    monkeypatch.undo()
    _assert_first_save_intact(run, tmp_path / "run")


@pytest.mark.parametrize(
    ("free", "said"),
    [(100, "disk full (no space left on device): 100 bytes free"), (10**9, "unexpected pos")],
)
def test_a_full_disk_is_named_whatever_the_writer_says(tmp_path, monkeypatch, free, said):
    """torch.save reports a short write on a full disk as "unexpected pos N vs M"."""
    run = RunDir(tiny_config(tmp_path / "run"))
    run.save(LATEST, latest_payload(1))

    def short_write(obj, f):
        raise RuntimeError("[enforce fail at inline_container.cc:626] . unexpected pos 64 vs 0")

    monkeypatch.setattr(run_dir_module.torch, "save", short_write)
    usage = run_dir_module.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(run_dir_module.shutil, "disk_usage", lambda p: usage._replace(free=free))
    with pytest.raises(CheckpointError) as info:
        run.save(LATEST, latest_payload(2))
    assert said in str(info.value) and "\n" not in str(info.value)
    monkeypatch.undo()
    _assert_first_save_intact(run, tmp_path / "run")


def test_a_full_disk_is_named_by_the_space_its_temp_file_filled(tmp_path, monkeypatch):
    """On a real full disk the failed write's temp file holds the last free bytes; once it is
    removed the disk has room again, so free space must be read before it is removed."""
    run = RunDir(tiny_config(tmp_path / "run"))
    ckpt = tmp_path / "run" / "ckpt"

    def short_write(obj, f):
        f.write(b"x" * 4096)
        raise RuntimeError("[enforce fail at inline_container.cc:626] . unexpected pos 64 vs 0")

    usage = run_dir_module.shutil.disk_usage(tmp_path)

    def free_while_the_temp_file_exists(directory):
        filled = any(".tmp" in p.name for p in ckpt.iterdir())
        return usage._replace(free=0 if filled else 10**9)

    monkeypatch.setattr(run_dir_module.torch, "save", short_write)
    monkeypatch.setattr(run_dir_module.shutil, "disk_usage", free_while_the_temp_file_exists)
    with pytest.raises(CheckpointError) as info:
        run.save(LATEST, latest_payload(1))
    message = str(info.value)
    assert message.startswith(f"could not write {ckpt / LATEST}: disk full (no space left on")
    assert "enforce fail" not in message and "inline_container" not in message
    assert not [p.name for p in ckpt.iterdir() if ".tmp" in p.name]
    run.close()


def test_an_enospc_behind_the_writers_error_is_a_full_disk(tmp_path, monkeypatch):
    """A quota or a small filesystem: ENOSPC with free space left, wrapped by the writer."""
    run = RunDir(tiny_config(tmp_path / "run"))

    def wrapped(obj, f):
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as exc:
            raise RuntimeError("[enforce fail at inline_container.cc:626] . write failed") from exc

    monkeypatch.setattr(run_dir_module.torch, "save", wrapped)
    with pytest.raises(CheckpointError, match="disk full") as info:
        run.save(LATEST, latest_payload(1))
    assert "enforce fail" not in str(info.value) and str(tmp_path / "run" / "ckpt") in str(
        info.value
    )
    run.close()


def test_a_ctrl_c_during_a_save_stays_a_ctrl_c(tmp_path, monkeypatch):
    """torch.save turns a KeyboardInterrupt raised in the file's write into a RuntimeError; read
    as a failed periodic checkpoint, the Ctrl-C was swallowed and the run trained on (seen once
    in CI: test_ctrl_c_shuts_down_cleanly[sync] timed out after a "periodic checkpoint failed")."""
    run = RunDir(tiny_config(tmp_path / "run"))
    run.save(LATEST, latest_payload(1))
    real_save = torch.save

    class CtrlCOnThirdWrite:
        def __init__(self, f):
            self.f, self.writes = f, 0

        def write(self, data):
            self.writes += 1
            if self.writes == 3:
                raise KeyboardInterrupt
            return self.f.write(data)

        def flush(self):
            self.f.flush()

    monkeypatch.setattr(
        run_dir_module.torch, "save", lambda obj, f: real_save(obj, CtrlCOnThirdWrite(f))
    )
    with pytest.raises(KeyboardInterrupt):
        run.save(LATEST, latest_payload(2))
    monkeypatch.undo()
    _assert_first_save_intact(run, tmp_path / "run")


def test_a_save_fsyncs_the_file_and_its_directory(tmp_path, monkeypatch):
    run = RunDir(tiny_config(tmp_path / "run"))
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(run_dir_module.os, "fsync", recording_fsync)
    run.save("ckpt_best.pth.tar", {"model": {}})
    run.close()
    ckpt = str(tmp_path / "run" / "ckpt")
    assert any(".ckpt_best.pth.tar.tmp" in p for p in synced)  # the data, before the rename
    assert ckpt in synced  # the rename itself


def test_resume_reads_the_previous_checkpoint_when_the_latest_is_corrupt(tmp_path):
    run = RunDir(tiny_config(tmp_path / "run"))
    run.save(LATEST, latest_payload(1))
    run.save(LATEST, latest_payload(2))
    run.close()
    ckpt = tmp_path / "run" / "ckpt"
    assert torch.load(ckpt / LATEST_PREV)["learner"]["train_iter"] == 1
    data = (ckpt / LATEST).read_bytes()
    (ckpt / LATEST).write_bytes(data[: len(data) // 2])  # truncated
    path, payload = load_latest(str(tmp_path / "run"))
    assert path.name == LATEST_PREV and payload["learner"]["train_iter"] == 1
    (ckpt / LATEST_PREV).write_bytes(b"garbage")
    with pytest.raises(CheckpointError) as err:
        load_latest(str(tmp_path / "run"))
    assert str(ckpt / LATEST) in str(err.value) and str(ckpt / LATEST_PREV) in str(err.value)


def test_resume_refuses_a_crafted_latest_instead_of_falling_back(tmp_path, caplog):
    run = RunDir(tiny_config(tmp_path / "run"))
    run.save(LATEST, latest_payload(1))
    run.save(LATEST, latest_payload(2))  # a good ckpt_latest.prev
    run.close()
    marker = tmp_path / "marker"
    write_crafted_checkpoint(tmp_path / "run" / "ckpt" / LATEST, marker)
    with pytest.raises(CheckpointRefused, match=r"^--resume: .*ckpt_latest\.pth\.tar was refused"):
        load_latest(str(tmp_path / "run"))
    assert not marker.exists() and not caplog.records


def test_resume_without_any_checkpoint_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="no checkpoint"):
        load_latest(str(tmp_path / "run"))


def test_resume_before_the_first_resumable_checkpoint_points_at_the_newest_weights(tmp_path):
    ckpt = tmp_path / "run" / "ckpt"
    ckpt.mkdir(parents=True)
    for name in ("iteration_900.pth.tar", "iteration_1000.pth.tar", "ckpt_best.pth.tar"):
        (ckpt / name).write_bytes(b"weights")
    with pytest.raises(ConfigError) as refused:
        load_latest(str(tmp_path / "run"))
    said = str(refused.value)
    assert "no checkpoint at" in said  # 1000 is the newest, though 900 sorts after it as text
    assert f"--init-from {ckpt / 'iteration_1000.pth.tar'}" in said


# A live run's RunDir in another process, held until its stdin closes or it is killed.
RUN_DIR_HOLDER = """
import sys
from pathlib import Path
from tests.tiny import tiny_config
from zeropipe.outputs.run_dir import RunDir
run = RunDir(tiny_config(Path(sys.argv[1])), resume=True)
print("held", flush=True)
sys.stdin.read()
run.close()
"""


@pytest.mark.timeout(120)
def test_a_run_dir_has_one_owner_and_a_sigkilled_owner_is_taken_over(tmp_path, no_leaks):
    cfg = tiny_config(tmp_path / "run")
    RunDir(cfg).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", RUN_DIR_HOLDER, str(tmp_path / "run")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        for resume in (True, False):
            with pytest.raises(RunDirLocked, match=f"pid {holder.pid}\\)"):
                RunDir(cfg, resume=resume)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.communicate(timeout=30)
    again = RunDir(cfg, resume=True)  # the kernel dropped the dead owner's lock
    with pytest.raises(RunDirLocked, match=f"pid {os.getpid()}\\)"):
        RunDir(cfg, resume=True)
    again.close()
    RunDir(cfg, resume=True).close()  # close() let it go
