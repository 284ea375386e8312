"""Snapshots in one process: layout, publish/read round-trip, leases, seqlock checks, close."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import torch

from tests.leaks import shm_blocks
from zeropipe.transport import (
    ParamLayout,
    SnapshotError,
    SnapshotPublisher,
    SnapshotReader,
    SnapshotRef,
    load_into,
)


def params(version: int) -> dict[str, np.ndarray]:
    return {
        "w": np.full((64, 33), version, np.float32),
        "b": np.full(7, version, np.int64),
        "h": np.full((3, 5), version % 2048, np.float16),
    }


LAYOUT = ParamLayout.from_state_dict(params(0))


def test_layout_is_aligned_and_survives_the_wire() -> None:
    assert all(spec.offset_bytes % 64 == 0 for spec in LAYOUT.params)
    assert LAYOUT.total_bytes % 64 == 0
    assert ParamLayout.from_wire(LAYOUT.to_wire()) == LAYOUT
    with pytest.raises(SnapshotError):
        ParamLayout.from_wire({"params": [["w", 0, "<f4", [10]]], "total_bytes": 8})


def test_torch_module_roundtrip_through_shared_memory() -> None:
    torch.manual_seed(0)
    source = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.BatchNorm1d(4))
    target = torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.BatchNorm1d(4))
    layout = ParamLayout.from_state_dict(source.state_dict())
    with SnapshotPublisher(layout) as publisher:
        ref = publisher.publish(3, source.state_dict())
        assert ref.block_name.startswith("zeropipe_") and ref.block_name in shm_blocks()
        reader = SnapshotReader(layout)
        load_into(target, reader.read(ref))
        reader.close()
    for (name, a), b in zip(source.state_dict().items(), target.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_same_version_returns_same_ref_and_versions_only_increase() -> None:
    with SnapshotPublisher(LAYOUT) as publisher:
        ref = publisher.publish(5, params(5))
        assert publisher.publish(5, params(999)) == ref
        assert publisher.latest == ref
        with pytest.raises(SnapshotError, match="versions only increase"):
            publisher.publish(4, params(4))


def test_state_dict_must_match_the_layout() -> None:
    with SnapshotPublisher(LAYOUT) as publisher:
        with pytest.raises(SnapshotError, match="missing"):
            publisher.publish(1, {"w": params(1)["w"]})
        bad = {**params(1), "b": np.zeros(7, np.int32)}
        with pytest.raises(SnapshotError, match="'b'"):
            publisher.publish(1, bad)


def test_leased_block_is_never_overwritten_and_free_blocks_are_reused() -> None:
    with SnapshotPublisher(LAYOUT) as publisher:
        reader = SnapshotReader(LAYOUT)
        leased = publisher.publish(1, params(1))
        publisher.acquire(leased)
        for version in range(2, 30):
            ref = publisher.publish(version, params(version))
            assert ref.block_name != leased.block_name
            np.testing.assert_array_equal(reader.read(leased)["w"], 1)
        assert len(publisher.block_names) == 2  # unleased versions shared one block
        publisher.release(leased)
        assert publisher.publish(30, params(30)).block_name == leased.block_name
        with pytest.raises(SnapshotError, match="stale"):
            reader.read(leased)  # overwritten after release: detected, never loaded
        with pytest.raises(SnapshotError, match="cannot lease"):
            publisher.acquire(leased)
        with pytest.raises(SnapshotError, match="without a matching acquire"):
            publisher.release(publisher.latest)  # type: ignore[arg-type]
        reader.close()


def test_pool_is_bounded_when_leases_are_not_released() -> None:
    with SnapshotPublisher(LAYOUT, max_blocks=2) as publisher:
        for version in (1, 2):
            publisher.acquire(publisher.publish(version, params(version)))
        with pytest.raises(SnapshotError, match="all 2 snapshot blocks are leased"):
            publisher.publish(3, params(3))


def _header(publisher: SnapshotPublisher, ref: SnapshotRef) -> np.ndarray:
    return np.ndarray((3,), np.int64, buffer=publisher._blocks[ref.block_name].shm.buf)


def test_reader_backs_off_while_a_write_is_in_progress() -> None:
    with SnapshotPublisher(LAYOUT) as publisher:
        ref = publisher.publish(1, params(1))
        header = _header(publisher, ref)
        header[0] += 1  # odd: as if the driver were mid-write (or died mid-write)
        reader = SnapshotReader(LAYOUT, max_attempts=3, retry_sleep_s=0)
        with pytest.raises(SnapshotError, match="after 3 attempts"):
            reader.read(ref)
        header[0] += 1
        np.testing.assert_array_equal(reader.read(ref)["b"], 1)
        del header
        reader.close()


class _TearingReader(SnapshotReader):
    """Simulates a complete concurrent write landing during the first copy."""

    def __init__(self, publisher: SnapshotPublisher, ref: SnapshotRef) -> None:
        super().__init__(publisher.layout, retry_sleep_s=0)
        self.header = _header(publisher, ref)
        self.copies = 0

    def _copy_data(self, block: object, data: np.ndarray) -> None:
        super()._copy_data(block, data)  # type: ignore[arg-type]
        self.copies += 1
        if self.copies == 1:
            self.header[0] += 2


def test_reader_retries_a_copy_that_raced_a_write() -> None:
    with SnapshotPublisher(LAYOUT) as publisher:
        ref = publisher.publish(4, params(4))
        reader = _TearingReader(publisher, ref)
        np.testing.assert_array_equal(reader.read(ref)["w"], 4)
        assert reader.copies == 2
        del reader.header
        reader.close()


def test_close_unlinks_every_block_and_is_idempotent() -> None:
    publisher = SnapshotPublisher(LAYOUT)
    refs = []
    for version in range(3):
        refs.append(publisher.publish(version, params(version)))
        publisher.acquire(refs[-1])
    assert {r.block_name for r in refs} <= shm_blocks()
    publisher.close()
    publisher.close()
    assert not {r.block_name for r in refs} & shm_blocks()
    publisher.release(refs[0])  # no-op once closed
    with pytest.raises(SnapshotError, match="closed"):
        publisher.publish(9, params(9))
    with pytest.raises(SnapshotError, match="does not exist"):
        SnapshotReader(LAYOUT).read(refs[0])


_DRIVER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    from zeropipe.transport import ParamLayout, SnapshotPublisher
    sd = {"w": np.ones(1000, np.float32)}
    publisher = SnapshotPublisher(ParamLayout.from_state_dict(sd))
    print(publisher.publish(1, sd).block_name, flush=True)
    if sys.argv[1] == "hang":
        time.sleep(600)
    """
)


def _run_driver(mode: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.Popen(
        [sys.executable, "-c", _DRIVER_SCRIPT, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_gone(name: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while name in shm_blocks() and time.monotonic() < deadline:
        time.sleep(0.05)
    return name not in shm_blocks()


@pytest.mark.timeout(60)
def test_driver_exit_without_close_leaves_no_block() -> None:
    proc = _run_driver("exit")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert _wait_gone(out.strip(), 5), "atexit finalizer did not unlink the block"
    assert "leaked" not in err


@pytest.mark.timeout(60)
def test_killed_driver_leaves_no_block() -> None:
    proc = _run_driver("hang")
    assert proc.stdout is not None
    name = proc.stdout.readline().strip()
    assert name in shm_blocks()
    proc.kill()
    proc.communicate(timeout=30)
    # The resource tracker notices the driver is gone and unlinks what it created.
    assert _wait_gone(name, 15), "resource tracker did not unlink the killed driver's block"
