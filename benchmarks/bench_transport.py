"""Transport benchmark: snapshot publish/read time per MB, codec encode/decode throughput.

Runs in: driver (a single process; readers are timed in-process, the copy path is the same).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from zeropipe.transport import (
    ParamLayout,
    SnapshotPublisher,
    SnapshotReader,
    decode,
    encode,
)

MB = 2**20


def _median_s(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm-up: page faults, allocator
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _state_dict(total_mb: int) -> dict[str, np.ndarray]:
    """A model-like state dict: a few big float32 matrices plus many small vectors."""
    rng = np.random.default_rng(0)
    small = {f"layer{i}.bias": rng.standard_normal(256, dtype=np.float32) for i in range(32)}
    big_elems = (total_mb * MB - 32 * 256 * 4) // 4 // 4
    big = {f"layer{i}.weight": rng.standard_normal(big_elems, dtype=np.float32) for i in range(4)}
    return {**big, **small}


def bench_snapshots(total_mb: int, repeats: int = 7) -> list[dict[str, Any]]:
    """Times publish (driver write) and read (worker copy-out) of one snapshot."""
    state_dict = _state_dict(total_mb)
    layout = ParamLayout.from_state_dict(state_dict)
    size_mb = layout.total_bytes / MB
    with SnapshotPublisher(layout) as publisher:
        version = iter(range(1, 10_000))
        publish_s = _median_s(lambda: publisher.publish(next(version), state_dict), repeats)
        ref = publisher.latest
        assert ref is not None
        publisher.acquire(ref)
        reader = SnapshotReader(layout)
        read_s = _median_s(lambda: reader.read(ref), repeats)
        reader.close()
    return [
        {
            "name": f"snapshot publish {size_mb:.0f} MB",
            "value": publish_s * 1e3 / size_mb,
            "unit": "ms/MB",
        },
        {
            "name": f"snapshot read {size_mb:.0f} MB",
            "value": read_s * 1e3 / size_mb,
            "unit": "ms/MB",
        },
    ]


def _segment_message() -> dict[str, Any]:
    """A collect-result-like message: uint8 frames ~20 MB plus small per-step arrays."""
    frames = [np.full((100, 4, 96, 128), i, np.uint8) for i in range(4)]  # 4 × [L, C, H, W] 4.9 MB
    return {
        "type": "collect_result",
        "segments": [
            {"obs": f, "actions": np.zeros(100, np.int64), "rewards": np.ones(100, np.float32)}
            for f in frames
        ],
    }


def _many_small_message() -> dict[str, Any]:
    """Many small arrays: 10 000 float32 [16] vectors (root values, priorities, ...)."""
    return {"arrays": [np.full(16, i, np.float32) for i in range(10_000)]}


def bench_codec(
    name: str, message: dict[str, Any], num_arrays: int, repeats: int = 7
) -> list[dict[str, Any]]:
    """Encode and decode throughput of one message, in MB/s of frame bytes."""
    frame = encode(message)
    size_mb = len(frame) / MB
    encode_s = _median_s(lambda: encode(message), repeats)
    decode_s = _median_s(lambda: decode(frame), repeats)
    # Decode is zero-copy (arrays view the frame), so its MB/s grows with array size; the
    # per-array cost is the figure that matters for many small arrays.
    return [
        {"name": f"encode {name} ({size_mb:.1f} MB)", "value": size_mb / encode_s, "unit": "MB/s"},
        {"name": f"decode {name} ({size_mb:.1f} MB)", "value": size_mb / decode_s, "unit": "MB/s"},
        {"name": f"encode {name}", "value": encode_s * 1e6 / num_arrays, "unit": "us/array"},
        {"name": f"decode {name}", "value": decode_s * 1e6 / num_arrays, "unit": "us/array"},
    ]


def bench_transport() -> list[dict[str, Any]]:
    """Runs every transport benchmark; returns rows of {name, value, unit}."""
    rows: list[dict[str, Any]] = []
    for total_mb in (10, 50):
        rows += bench_snapshots(total_mb)
    rows += bench_codec("segment frames", _segment_message(), num_arrays=12)
    rows += bench_codec("10k small arrays", _many_small_message(), num_arrays=10_000)
    return rows


def main() -> list[dict]:
    """Prints the benchmark table; returns its rows (`python -m benchmarks --json`)."""
    rows = bench_transport()
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        print(f"{row['name']:<{width}}  {row['value']:>10.3f} {row['unit']}")
    return rows


if __name__ == "__main__":
    main()
