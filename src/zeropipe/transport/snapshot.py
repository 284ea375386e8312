"""Shared-memory snapshots of model parameters: a seqlock-stamped block per published version.

Runs in: driver (``SnapshotPublisher``), collector | evaluator (``SnapshotReader``, ``load_into``)

A block is ``[64-byte header][data region laid out by a ParamLayout]``. The header holds three
int64 words: ``seq`` (odd while a write is in progress), ``version`` (the train_iter written) and
the layout fingerprint. The writer goes: seq odd → data → version, fingerprint → seq even. A
reader accepts a copy only if seq was even and unchanged across the copy and the version is the
one it was asked for, so it can never load a torn snapshot.

The seqlock is the *check*; **leases** are the *guarantee*. The driver calls ``acquire(ref)``
when it sends a request naming ``ref`` and ``release(ref)`` when the reply arrives (or when the
worker is known dead). A block with a lease is never chosen for a new version, so a worker that
was sent a ref always finds that version intact. A block without leases may be overwritten by
the next ``publish``; a stale ref then fails with ``SnapshotError`` instead of loading the wrong
weights.

Only the driver creates and unlinks blocks. ``SnapshotPublisher.close`` is idempotent, runs
automatically at interpreter exit (``weakref.finalize``) and does nothing but unlink/unmap, so it
may be called from a signal handler or an ``except``/``finally`` path. If the driver alone is
killed, the multiprocessing resource tracker (which ``SharedMemory(create=True)`` registered each
block with) unlinks the blocks when it notices the driver is gone.

A SIGKILL of the driver's whole process group (an out-of-memory kill, a scheduler's hard stop)
takes the resource tracker down too, and nothing could run at that moment. So stale blocks are
**reclaimed at the next start**: a block name encodes its creator's pid
(``zeropipe_<pid>_<token>_<i>``), and every new publisher unlinks the blocks whose creator no
longer exists (``reclaim_stale_blocks``). Unlinking as soon as every worker has mapped a block was
rejected: a restarted worker must still be able to map the live blocks. Limits: a block whose
pid was reused by an unrelated live process waits until that process is gone, and the check sees
only this pid namespace (a container usually has its own ``/dev/shm`` as well).
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import secrets
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.shared_memory import SharedMemory
from typing import TYPE_CHECKING, Any

import numpy as np

from zeropipe.transport.errors import SnapshotError
from zeropipe.transport.layout import ParamLayout
from zeropipe.transport.stale_blocks import posixshmem, reclaim_stale_blocks

if TYPE_CHECKING:
    import torch

logger = logging.getLogger("zeropipe.transport.snapshot")

HEADER_BYTES = 64
_SEQ, _VERSION, _FINGERPRINT = 0, 1, 2


@dataclass(frozen=True)
class SnapshotRef:
    """Names one published snapshot: the block that holds it and the version written there.

    Attributes:
        block_name: Shared-memory block name (starts with the publisher's prefix).
        version: The train_iter whose parameters the block holds.
    """

    block_name: str
    version: int

    def to_wire(self) -> dict[str, Any]:
        """Returns the ref as plain data."""
        return {"block_name": self.block_name, "version": self.version}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> SnapshotRef:
        """Rebuilds a ref from :meth:`to_wire` output.

        Raises:
            SnapshotError: If ``data`` is not a ref.
        """
        try:
            return cls(str(data["block_name"]), int(data["version"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise SnapshotError(f"malformed snapshot ref {data!r}") from exc


def _header(buf: Any) -> np.ndarray:
    # A transient view: aligned int64 loads/stores are single instructions. Never keep it, or
    # unmapping the block would fail with "exported pointers exist".
    return np.ndarray((3,), dtype=np.int64, buffer=buf)


@dataclass
class _Block:
    shm: SharedMemory
    version: int | None = None  # None: never written, or a write failed half-way
    leases: int = 0


def _unlink_blocks(shms: list[SharedMemory]) -> None:
    """Unlinks then unmaps every block; safe to call twice and from a signal handler."""
    while shms:
        shm = shms.pop()
        with contextlib.suppress(FileNotFoundError):
            shm.unlink()
        # A publish interrupted mid-write (signal path) still holds a view; unlinking suffices.
        with contextlib.suppress(BufferError):
            shm.close()


class SnapshotPublisher:
    """Driver-side pool of snapshot blocks, one per live version, reused once no lease holds them.

    Args:
        layout: Layout of every snapshot this publisher writes.
        prefix: Block-name prefix; names are ``f"{prefix}{pid}_{token}_{i}"``. Blocks with this
            prefix whose creator pid is gone are reclaimed here (see the module docstring).
        max_blocks: Upper bound on the pool; exceeding it means leases are not being released.
    """

    def __init__(
        self, layout: ParamLayout, prefix: str = "zeropipe_", max_blocks: int = 32
    ) -> None:
        reclaim_stale_blocks(prefix)
        self.layout = layout
        self._prefix = f"{prefix}{os.getpid()}_{secrets.token_hex(4)}_"
        self._max_blocks = max_blocks
        self._blocks: dict[str, _Block] = {}
        self._by_version: dict[int, _Block] = {}
        self._latest: SnapshotRef | None = None
        self._shms: list[SharedMemory] = []
        self._finalizer = weakref.finalize(self, _unlink_blocks, self._shms)

    @property
    def block_names(self) -> list[str]:
        """Names of the blocks created so far."""
        return list(self._blocks)

    @property
    def latest(self) -> SnapshotRef | None:
        """The most recently published snapshot, if any."""
        return self._latest

    def leases(self, ref: SnapshotRef) -> int:
        """Number of leases currently held on ``ref`` (0 if it is no longer resident)."""
        block = self._blocks.get(ref.block_name)
        return block.leases if block is not None and block.version == ref.version else 0

    def publish(self, version: int, state_dict: Mapping[str, Any]) -> SnapshotRef:
        """Writes ``state_dict`` as snapshot ``version``, or returns the existing ref.

        Args:
            version: The train_iter of these parameters; versions only go up.
            state_dict: name → torch tensor or numpy array, matching the layout.

        Returns:
            The ref to send to workers (lease it with :meth:`acquire` when sending).

        Raises:
            SnapshotError: If closed, the version is older than the latest, the state dict does
                not match the layout, or every block is leased and the pool is full.
        """
        if not self._finalizer.alive:
            raise SnapshotError("publish() on a closed SnapshotPublisher")
        if version in self._by_version:
            return SnapshotRef(self._by_version[version].shm.name, version)
        if self._latest is not None and version < self._latest.version:
            raise SnapshotError(
                f"cannot publish version {version} after version {self._latest.version}: "
                "a version is written once and versions only increase"
            )
        arrays = self.layout.check_state_dict(state_dict)
        block = self._free_block()
        self._write(block, version, arrays)
        self._latest = SnapshotRef(block.shm.name, version)
        return self._latest

    def acquire(self, ref: SnapshotRef) -> None:
        """Takes a lease on ``ref``: its block is not overwritten until :meth:`release`.

        Raises:
            SnapshotError: If ``ref``'s block no longer holds ``ref.version``.
        """
        block = self._resident_block(ref, "lease")
        block.leases += 1

    def release(self, ref: SnapshotRef) -> None:
        """Returns a lease taken by :meth:`acquire`; a no-op after :meth:`close`.

        Raises:
            SnapshotError: If ``ref`` holds no lease (a double release is a driver bug).
        """
        if not self._finalizer.alive:
            return
        block = self._resident_block(ref, "release")
        if block.leases == 0:
            raise SnapshotError(f"release({ref}) without a matching acquire")
        block.leases -= 1

    def close(self) -> None:
        """Unlinks every block this publisher created. Idempotent; also runs at exit."""
        if self._finalizer.alive:
            logger.debug("unlinking %d snapshot blocks", len(self._shms))
        self._finalizer()
        self._blocks.clear()
        self._by_version.clear()

    def __enter__(self) -> SnapshotPublisher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _resident_block(self, ref: SnapshotRef, action: str) -> _Block:
        block = self._blocks.get(ref.block_name)
        if block is None or block.version != ref.version:
            held = "nothing" if block is None else f"version {block.version}"
            raise SnapshotError(
                f"cannot {action} {ref}: that block holds {held} now; only lease the ref "
                "returned by the latest publish() before sending it"
            )
        return block

    def _free_block(self) -> _Block:
        free = [b for b in self._blocks.values() if b.leases == 0]
        if free:
            block = min(free, key=lambda b: -1 if b.version is None else b.version)
            self._by_version.pop(block.version, None)  # type: ignore[arg-type]
            return block
        if len(self._blocks) >= self._max_blocks:
            raise SnapshotError(
                f"all {self._max_blocks} snapshot blocks are leased; release(ref) when a reply "
                "arrives and when a worker dies"
            )
        name = f"{self._prefix}{len(self._blocks)}"
        shm = SharedMemory(name=name, create=True, size=HEADER_BYTES + self.layout.total_bytes)
        self._shms.append(shm)
        block = _Block(shm)
        self._blocks[name] = block
        logger.debug("created snapshot block %s (%d bytes)", name, shm.size)
        return block

    def _write(self, block: _Block, version: int, arrays: Mapping[str, np.ndarray]) -> None:
        buf = block.shm.buf
        seq = int(_header(buf)[_SEQ])
        block.version = None
        _header(buf)[_SEQ] = seq + 1  # odd: readers back off
        for spec in self.layout.params:
            dest = np.ndarray(
                spec.shape, spec.dtype, buffer=buf, offset=HEADER_BYTES + spec.offset_bytes
            )
            np.copyto(dest, arrays[spec.name])
            del dest
        _header(buf)[_VERSION] = version
        _header(buf)[_FINGERPRINT] = self.layout.fingerprint
        _header(buf)[_SEQ] = seq + 2  # even: consistent again
        block.version = version
        self._by_version[version] = block


def _map_readonly(name: str) -> mmap.mmap:
    """Maps an existing block read-only without registering it with the resource tracker.

    Why not ``SharedMemory(name)``: on Python < 3.13 attaching registers the block with the
    resource tracker. A spawned worker shares the driver's tracker, whose registry is a set, so the
    usual fix (unregister right after attaching) would delete the *driver's* registration: the
    block would leak if the driver were killed, and the driver's own unlink would make the
    tracker print a KeyError. A worker started any other way has its own tracker, which would
    unlink the driver's block when the worker exits. Opening the POSIX object directly registers
    nothing at all, and a read-only mapping means a worker cannot corrupt a snapshot either.
    """
    if posixshmem is None:  # pragma: no cover
        raise SnapshotError("shared-memory snapshots need a POSIX system")
    try:
        fd = posixshmem.shm_open("/" + name, os.O_RDONLY, mode=0o600)
    except FileNotFoundError as exc:
        raise SnapshotError(
            f"snapshot block {name!r} does not exist: the driver closed it, or the ref is stale"
        ) from exc
    try:
        return mmap.mmap(fd, os.fstat(fd).st_size, prot=mmap.PROT_READ)
    finally:
        os.close(fd)


class SnapshotReader:
    """Worker-side reader: copies a named snapshot out of shared memory, verified by seqlock.

    Args:
        layout: The layout the driver sent in its ``SnapshotLayout`` message.
        max_attempts: Copies tried while the writer is busy or the copy tears, before giving up.
        retry_sleep_s: Pause between attempts.
    """

    def __init__(self, layout: ParamLayout, max_attempts: int = 100, retry_sleep_s: float = 0.001):
        self.layout = layout
        self._fingerprint = layout.fingerprint
        self._max_attempts = max_attempts
        self._retry_sleep_s = retry_sleep_s
        self._maps: dict[str, mmap.mmap] = {}

    def read(self, ref: SnapshotRef) -> dict[str, np.ndarray]:
        """Copies snapshot ``ref`` into fresh, writable arrays (all views of one buffer).

        Args:
            ref: The snapshot named by the request.

        Returns:
            name → array, in layout order.

        Raises:
            SnapshotError: If the block is gone, holds another version or layout, or no
                untorn copy was obtained within ``max_attempts``.
        """
        block = self._attach(ref.block_name)
        data = np.empty(self.layout.total_bytes, dtype=np.uint8)
        for _ in range(self._max_attempts):
            if self._try_copy(block, ref, data):
                return {
                    spec.name: np.ndarray(
                        spec.shape, spec.dtype, buffer=data, offset=spec.offset_bytes
                    )
                    for spec in self.layout.params
                }
            time.sleep(self._retry_sleep_s)
        raise SnapshotError(
            f"no consistent copy of {ref} after {self._max_attempts} attempts: the driver kept "
            "writing that block (was the ref leased while this request was in flight?)"
        )

    def close(self) -> None:
        """Unmaps every attached block (never unlinks: only the driver does that)."""
        while self._maps:
            self._maps.popitem()[1].close()

    def _attach(self, name: str) -> mmap.mmap:
        block = self._maps.get(name)
        if block is None:
            block = _map_readonly(name)
            if len(block) < HEADER_BYTES + self.layout.total_bytes:
                block.close()
                raise SnapshotError(f"block {name!r} is smaller than the layout; layouts differ")
            self._maps[name] = block
        return block

    def _try_copy(self, block: mmap.mmap, ref: SnapshotRef, data: np.ndarray) -> bool:
        # Ordering: every step below is a separate C call, so neither compiler nor interpreter
        # reorders them; x86-64 keeps loads in order (TSO). The lease is the real guarantee.
        seq = int(_header(block)[_SEQ])
        if seq % 2:
            return False  # a write is in progress
        version, fingerprint = (int(x) for x in _header(block)[_VERSION:])
        if version != ref.version:
            raise SnapshotError(
                f"block {ref.block_name!r} holds version {version}, not {ref.version}: the ref is "
                "stale or the driver reused a block it had not leased"
            )
        if fingerprint != self._fingerprint:
            raise SnapshotError(f"block {ref.block_name!r} was written with another layout")
        self._copy_data(block, data)
        return int(_header(block)[_SEQ]) == seq and int(_header(block)[_VERSION]) == ref.version

    def _copy_data(self, block: mmap.mmap, data: np.ndarray) -> None:
        # One memcpy of the whole data region keeps the seqlock window as short as possible.
        np.copyto(data, np.frombuffer(block, np.uint8, self.layout.total_bytes, HEADER_BYTES))


def load_into(
    module: torch.nn.Module, arrays: Mapping[str, np.ndarray], strict: bool = True
) -> None:
    """Loads arrays from :meth:`SnapshotReader.read` into a torch module (copies into its params).

    Args:
        module: The worker's model copy.
        arrays: name → array, as returned by ``SnapshotReader.read``.
        strict: Passed to ``load_state_dict``.
    """
    import torch  # deferred: transport is importable (and workers spawn fast) without torch

    tensors = {
        name: torch.from_numpy(a if a.flags.writeable else a.copy()) for name, a in arrays.items()
    }
    module.load_state_dict(tensors, strict=strict)
