"""Area-average resizing of Atari screens with numpy (the "warp frame" step of the preprocessing).

Runs in: collector | evaluator.

The DQN / LightZero WarpFrame resizes with OpenCV's ``INTER_AREA``. OpenCV is not a dependency, and
area averaging is linear and separable: one weight matrix per axis. Each output pixel is the mean
of the input area it covers (fractional edge pixels weighted by their overlap), so small objects
such as Pong's 2-pixel ball are averaged in rather than skipped, as bilinear sampling at a 3.3x
reduction would do.

The weight matrices are banded (an output row reads about 3.3 input rows), so each axis is applied
as a batch of small matrix products over row groups rather than one dense product. Besides doing
8x fewer multiplications, the small products stay below OpenBLAS's threading threshold: a dense
[64, 210] x [210, 160] product is multi-threaded and became 10x slower when the cores were busy
with other processes, as they are on a collector machine.
"""

from __future__ import annotations

import numpy as np


def area_weights(size_in: int, size_out: int) -> np.ndarray:
    """Weights of a 1-D area-average resize.

    Args:
        size_in: Input length.
        size_out: Output length.

    Returns:
        float32 matrix [size_out, size_in]; row o holds the overlap of output cell o with each input
        cell, divided by the cell width, so every row sums to 1.
    """
    scale = size_in / size_out
    edges = np.arange(size_out + 1, dtype=np.float64) * scale  # output cell borders in input units
    lo = edges[:-1, None]
    hi = edges[1:, None]
    cells = np.arange(size_in, dtype=np.float64)[None, :]
    overlap = np.clip(np.minimum(hi, cells + 1) - np.maximum(lo, cells), 0.0, None)
    return (overlap / scale).astype(np.float32)


class _AxisResize:
    """Area resize along the first axis of a 2-D array, as grouped banded matrix products."""

    def __init__(self, size_in: int, size_out: int) -> None:
        weights = area_weights(size_in, size_out)  # [out, in]
        group = max(d for d in range(1, 9) if size_out % d == 0)  # output rows per product
        blocks = weights.reshape(size_out // group, group, size_in)  # [G, group, in]
        used = blocks.any(axis=1)  # [G, in] input rows each group reads
        first = used.argmax(axis=1)
        last = size_in - 1 - used[:, ::-1].argmax(axis=1)
        span = int((last - first).max()) + 1
        starts = np.minimum(first, size_in - span)
        self._index = starts[:, None] + np.arange(span)[None, :]  # [G, span]
        self._band = np.take_along_axis(blocks, self._index[:, None, :], axis=2)  # [G, group, span]
        self.size_out = size_out

    def __call__(self, array: np.ndarray) -> np.ndarray:
        """[size_in, M] (any dtype) -> float32 [size_out, M]."""
        windows = array[self._index].astype(np.float32)  # [G, span, M]
        return np.matmul(self._band, windows).reshape(self.size_out, array.shape[1])


class AreaResize:
    """Resize fixed-size uint8 images to ``out_size x out_size``, channel-first.

    Args:
        in_height: Height H of the input images.
        in_width: Width W of the input images.
        out_size: Side S of the square output.
    """

    def __init__(self, in_height: int, in_width: int, out_size: int) -> None:
        self.out_size = out_size
        self._rows = _AxisResize(in_height, out_size)
        self._cols = _AxisResize(in_width, out_size)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        """Resize one image.

        Args:
            image: uint8 [H, W] (grayscale) or [H, W, C].

        Returns:
            uint8 [1, S, S] or [C, S, S], rounded to the nearest integer.
        """
        height, width = image.shape[:2]
        channels = 1 if image.ndim == 2 else image.shape[2]
        size = self.out_size
        rows = self._rows(image.reshape(height, width * channels))  # [S, W*C]
        by_column = rows.reshape(size, width, channels).transpose(1, 0, 2)  # [W, S, C]
        out = self._cols(by_column.reshape(width, size * channels))  # [S cols, S rows * C]
        out = out.reshape(size, size, channels).transpose(2, 1, 0)  # [C, S, S]
        return np.rint(out).astype(np.uint8)
