"""A run's output directory: resolved config, metrics (JSONL + TensorBoard), text log, checkpoints.

Runs in: driver. Layout (docs/guide/training.md, 'Outputs of a run'): `<exp_name>/config.yaml`,
`log/metrics.jsonl` and TensorBoard event files in `log/` (metrics_log.py, scalar_sinks.py),
`log/train.log` (text_log.py), `ckpt/` with `ckpt_best.pth.tar`, periodic `iteration_<N>.pth.tar`
and the resumable `ckpt_latest.pth.tar` (plus `ckpt_latest.prev.pth.tar`, the one before it).

Run-directory policy: a new run **refuses** an `exp_name` that already holds files, with a
message naming `--resume` (continue that run) and `--set exp_name=...` (start another). It never
picks a suffixed name on its own: the directory a user asked for is the one that holds the run,
and running the same command twice never changes the first run's files. `--resume` reopens the
directory and appends to its metrics. A run directory has one owner: `RunDir` holds an OS lock on
`.zeropipe.lock` in it for the life of the run (run_lock.py), and a second writer (a new run into
it, or a second `--resume`) is refused with the holder's pid.

Every checkpoint write is atomic and durable: a temp file in the same directory, fsync, rename
over the target, fsync of the directory. A failed write removes its temp file and raises
`CheckpointError`; the previous file is untouched. Before `ckpt_latest` is replaced, the previous
one is hard-linked to `ckpt_latest.prev.pth.tar`, so a resume still has a good checkpoint if the
newest one turns out to be unreadable. A run resumed from that previous one (`resume_from`) does
not keep the unreadable newest as the previous at its first save: the good one stays.

What a checkpoint holds and how it is read without running code from it: checkpoint_format.py.
A file refused there (it would call more than tensors and plain data need) ends a resume at
once, with no fallback to the previous checkpoint: a replaced file is a reason to stop and look.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import torch

from zeropipe.config import ConfigError, ExperimentConfig, dump_config
from zeropipe.outputs.checkpoint_format import encode, read_checkpoint
from zeropipe.outputs.errors import (
    CheckpointDiskFull,
    CheckpointError,
    CheckpointRefused,
    RunDirExists,
)
from zeropipe.outputs.metrics_log import MetricsLog
from zeropipe.outputs.run_lock import LOCK_NAME, RunLock, check_unlocked
from zeropipe.outputs.scalar_sinks import check_sinks, open_sinks
from zeropipe.outputs.text_log import TextLog

log = logging.getLogger("zeropipe.run")


LATEST = "ckpt_latest.pth.tar"
LATEST_PREV = "ckpt_latest.prev.pth.tar"
LATEST_KEYS = ("learner", "buffer", "envstep", "last_eval_iter", "best_reward")


def check_run_dir(cfg: ExperimentConfig, resume: bool) -> None:
    """Apply the run-directory policy before anything is written.

    Raises:
        RunDirExists: a new run (not `resume`) was pointed at a non-empty directory.
        RunDirLocked: a live process holds the directory (run_lock.py), new run or resume.
    """
    root = Path(cfg.exp_name)
    check_unlocked(root)
    if not resume and not root.exists():
        _check_creatable(root)
    if resume or not root.exists():
        return
    if not root.is_dir():
        raise RunDirExists(f"exp_name {cfg.exp_name!r} is a file, not a run directory")
    entries = sorted(p.name for p in root.iterdir() if p.name != LOCK_NAME)
    if entries:
        shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
        raise RunDirExists(
            f"exp_name {cfg.exp_name!r} already holds a run ({shown}); a new run never "
            "overwrites one: pass --resume to continue it, or choose another directory with "
            "--set exp_name=DIR"
        )


def _check_creatable(root: Path) -> None:
    """The run directory can be made: a directory can be created (and is at once removed) in its
    nearest existing parent. A probe rather than permission bits: root passes every access
    check, yet cannot create anything under /proc or on a read-only mount.

    Raises:
        ConfigError: naming exp_name and why it cannot be created.
    """
    parent = root.absolute().parent
    while not parent.exists():
        parent = parent.parent
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".zeropipe-probe-", dir=parent))
    except OSError as exc:
        raise ConfigError(
            f"exp_name {str(root)!r} cannot be created in {parent}: {exc.strerror}; choose "
            "another directory with --set exp_name=DIR"
        ) from None


class RunDir:
    """Creates (or, resuming, reopens) the run directory and writes its files.

    Args:
        cfg: the resolved experiment config (written to config.yaml).
        resume: reopen an existing run instead of refusing it (see the module docstring).

    Raises:
        RunDirExists: a new run was pointed at a directory that already holds files.
        RunDirLocked: another live process holds the directory (run_lock.py).
    """

    def __init__(self, cfg: ExperimentConfig, resume: bool = False) -> None:
        check_run_dir(cfg, resume)
        check_sinks(cfg)
        self.root = Path(cfg.exp_name)
        self.log_dir = self.root / "log"
        self.ckpt_dir = self.root / "ckpt"
        self.root.mkdir(parents=True, exist_ok=True)
        self.lock = RunLock.acquire(self.root)  # held until close(): one owner per directory
        try:
            self._open(cfg, resume)
        except BaseException:
            self.lock.release()
            raise

    def resume_from(self, path: Path) -> None:
        """The checkpoint the run continues: when it is the previous one (the newest was
        unreadable), the next save replaces the newest without keeping it as the previous."""
        self._latest_unreadable = path.name == LATEST_PREV

    def _open(self, cfg: ExperimentConfig, resume: bool) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.ckpt_dir.mkdir(parents=True, exist_ok=True)
        self.text_log = TextLog(self.log_dir)
        self._latest_unreadable = False  # ckpt_latest is known corrupt (resume_from)
        # A resume rewrites config.yaml with its first checkpoint, not before: a start that
        # fails (a checkpoint that does not fit) leaves the run's config as it was, and the
        # file always describes the run its newest checkpoint continues.
        self._config_yaml: bytes | None = dump_config(cfg).encode()
        try:
            if not resume:
                self._write_config()
            self.metrics = MetricsLog(self.log_dir)  # its clock starts before the sinks open
            for sink in open_sinks(self.log_dir, cfg, resume):
                self.metrics.add_sink(sink)
        except BaseException:
            self.text_log.close()  # no handler outlives a run directory that did not open
            raise

    def save(self, name: str, payload: dict[str, Any]) -> Path:
        """Atomically and durably save `payload` as ckpt/<name> (numpy arrays encoded).

        Raises:
            CheckpointError: the write failed (disk full, I/O error); nothing was replaced.
            TypeError: the payload holds a numpy array of objects (a bug: checkpoints hold only
                tensors and plain data, see checkpoint_format.py).
        """
        path = self.ckpt_dir / name
        self._write_config()
        if name == LATEST and path.exists() and not self._latest_unreadable:
            _keep_previous(path, self.ckpt_dir / LATEST_PREV)
        plain = encode(payload)
        write_durably(path, lambda f: torch.save(plain, f))
        if name == LATEST:
            self._latest_unreadable = False
        return path

    def _write_config(self) -> None:
        """Write config.yaml once (see __init__ for when)."""
        if self._config_yaml is not None:
            text = self._config_yaml
            write_durably(self.root / "config.yaml", lambda f: f.write(text))
            self._config_yaml = None

    def check_writes(self) -> None:
        """Raise the full disk that stopped a log file's writes, if one did.

        Raises:
            DiskFull: `log/metrics.jsonl` or `log/train.log` found no space left.
        """
        error = self.metrics.write_error or self.text_log.write_error
        if error is not None:
            raise error

    def close(self) -> None:
        """Close the metrics sinks, detach the text log (its last records included), then let
        the directory's lock go."""
        try:
            self.metrics.close()
            self.text_log.close()
        finally:
            self.lock.release()


def write_durably(path: Path, write: Callable[[BinaryIO], Any]) -> None:
    """Write `path` via a temp file in its directory: fsync, rename, fsync the directory.

    Raises:
        CheckpointError: any failure; the temp file is removed and `path` is left as it was.
        KeyboardInterrupt: a Ctrl-C (or SIGTERM, which takes its path) arrived while writing,
            also when the writer turned it into another error: torch.save re-raises a
            KeyboardInterrupt from the file's write as a RuntimeError, which would otherwise
            read as a failed periodic checkpoint and the run would train on.
    """
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    # the Ctrl-C being handled when the write began (a final save): the context of any error
    # raised here, not an interrupt of this write
    handling = sys.exc_info()[1]
    try:
        with open(tmp, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException as exc:
        # the cause first: a full disk is only seen as one while the temp file still fills it
        cause = _cause(exc, path) if isinstance(exc, OSError | RuntimeError) else None
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        interrupt = _interrupt_behind(exc, handling)
        if interrupt is not None and interrupt is not exc:
            raise interrupt from None
        if cause is not None:
            error = CheckpointDiskFull if cause.startswith(DISK_FULL) else CheckpointError
            raise error(f"could not write {path}: {cause}") from exc
        raise


# Below this many free bytes a failed write is put down to a full disk: torch.save reports one
# as "unexpected pos N vs M" (its zip writer's view of a short write), which names no cause.
FULL_DISK_BYTES = 1 << 20
DISK_FULL = "disk full (no space left on device)"


def _cause(exc: BaseException, path: Path) -> str:
    """What went wrong, in words: a full disk is named as such (an ENOSPC anywhere in the error's
    chain, or almost no space left), never by the writer's words for it (torch.save's
    "[enforce fail at inline_container.cc...] unexpected pos N vs M")."""
    full = _errno_behind(exc) == errno.ENOSPC
    free = None
    with contextlib.suppress(OSError):
        free = shutil.disk_usage(path.parent).free
    if full or (free is not None and free < FULL_DISK_BYTES):
        left = "" if free is None else f"{free} bytes free in {path.parent}; "
        return f"{DISK_FULL}: {left}free space, then resume"
    return " ".join(str(exc).split())


def _errno_behind(exc: BaseException) -> int | None:
    """The errno of the first OSError in `exc`'s cause/context chain (itself included)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, OSError) and current.errno is not None:
            return current.errno
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _interrupt_behind(exc: BaseException, before: BaseException | None) -> BaseException | None:
    """The KeyboardInterrupt or SystemExit in `exc`'s cause/context chain (itself included),
    up to `before`: the exception already being handled when the write began."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and current is not before and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt | SystemExit):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _keep_previous(path: Path, prev: Path) -> None:
    """Hard-link `path` to `prev` (atomically replacing it), so both stay readable meanwhile."""
    if prev.exists() and os.path.samefile(path, prev):
        return  # already kept (a failed save left both names on one file; rename would no-op)
    tmp = prev.with_name(f".{prev.name}.tmp{os.getpid()}")
    try:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        os.link(path, tmp)
        os.replace(tmp, prev)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise CheckpointError(f"could not keep {path} as {prev}: {exc}") from exc


def _weights_only_hint(ckpt_dir: Path) -> str:
    """What is left where a run stopped before its first resumable checkpoint (the first comes
    `checkpoint.latest_interval_s` into a run): weights only, a new run's starting point."""
    numbered = [(_iteration_of(p), p) for p in ckpt_dir.glob("iteration_*.pth.tar")]
    saved = [p for n, p in sorted(numbered) if n >= 0]
    if not saved:
        return ""
    return (
        f"; {saved[-1]} holds the newest weights but not the replay buffer: start a new run "
        f"from them with --init-from {saved[-1]} (checkpoint.latest_interval_s sets how often a "
        "resumable checkpoint is written)"
    )


def _iteration_of(path: Path) -> int:
    """N of `iteration_N.pth.tar` (-1: not such a name)."""
    number = path.name.removeprefix("iteration_").removesuffix(".pth.tar")
    return int(number) if number.isdigit() else -1


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_latest(exp_name: str) -> tuple[Path, dict[str, Any]]:
    """Read the resumable checkpoint of `exp_name`, falling back to the previous one.

    Returns:
        The file that was read and its payload.

    Raises:
        ConfigError: there is no checkpoint at all (nothing to resume).
        CheckpointRefused: the newest checkpoint present would run code to load.
        CheckpointError: every checkpoint present is corrupt or truncated (each one named).
    """
    ckpt_dir = Path(exp_name) / "ckpt"
    candidates = [p for p in (ckpt_dir / LATEST, ckpt_dir / LATEST_PREV) if p.is_file()]
    if not candidates:
        raise ConfigError(
            f"--resume: no checkpoint at {ckpt_dir / LATEST} (exp_name {exp_name!r})"
            + _weights_only_hint(ckpt_dir)
        )
    problems = []
    for path in candidates:
        try:
            payload = read_checkpoint(path)
            missing = [k for k in LATEST_KEYS if k not in payload]
            if missing:
                raise ValueError(f"not a resumable checkpoint (missing {missing})")
        except CheckpointRefused as exc:
            raise CheckpointRefused(f"--resume: {exc}") from None
        except Exception as exc:
            problems.append(f"{path}: {type(exc).__name__}: {exc}")
            log.error("checkpoint %s is unreadable (%s: %s)", path, type(exc).__name__, exc)
            continue
        if problems:
            log.warning("resuming from the previous checkpoint %s instead", path)
        return path, payload
    raise CheckpointError(
        "--resume: no readable checkpoint (corrupt or truncated): " + "; ".join(problems)
    )
