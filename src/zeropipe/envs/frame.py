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

The products are exact, so the frames do not depend on the machine. With float weights (0.4, 0.2
...) a pixel whose true mean is k + 0.5 came out a rounding error either side of it, and which side
depended on the order in which OpenBLAS's kernel for the CPU summed: the same Breakout frames
differed between an AVX-512 and an AVX2 machine. Each axis now multiplies by integer weights (the
overlap in units of 1/size_out of an input cell; a row sums to size_in), every partial sum is an
integer below 2^24 (float32) or 2^53 (float64, for larger screens), and one division by
H * W at the end rounds half to even.
"""

from __future__ import annotations

import numpy as np


def area_counts(size_in: int, size_out: int) -> np.ndarray:
    """Integer weights of a 1-D area-average resize: `area_weights` times ``size_in``.

    Returns:
        int64 matrix [size_out, size_in]; entry (o, i) is the overlap of output cell o with input
        cell i in units of 1/size_out of an input cell, so every row sums to ``size_in``.
    """
    out = np.arange(size_out)[:, None]
    cells = np.arange(size_in)[None, :]
    lo = np.maximum(out * size_in, cells * size_out)  # borders scaled by size_out: integers
    hi = np.minimum((out + 1) * size_in, (cells + 1) * size_out)
    return np.clip(hi - lo, 0, None).astype(np.int64)


def area_weights(size_in: int, size_out: int) -> np.ndarray:
    """Weights of a 1-D area-average resize.

    Args:
        size_in: Input length.
        size_out: Output length.

    Returns:
        float32 matrix [size_out, size_in]; row o holds the overlap of output cell o with each input
        cell, divided by the cell width, so every row sums to 1.
    """
    return (area_counts(size_in, size_out) / size_in).astype(np.float32)


class _AxisResize:
    """Area resize along the first axis of a 2-D array, as grouped banded matrix products."""

    def __init__(self, size_in: int, size_out: int, dtype: type[np.floating]) -> None:
        weights = area_counts(size_in, size_out).astype(dtype)  # [out, in], integers
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
        """[size_in, M] (any dtype) -> [size_out, M], times ``size_in`` (exact integers)."""
        windows = array[self._index].astype(self._band.dtype)  # [G, span, M]
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
        # The largest partial sum, 255 * H * W, must be exact in the products' float type.
        dtype = np.float32 if 255 * in_height * in_width < 2**24 else np.float64
        # An IEEE division is correctly rounded: a true k + 0.5 stays exact, and any other
        # quotient is at least 1 / (H * W) from a tie, many times its rounding error.
        self._denominator = dtype(in_height * in_width)
        self._rows = _AxisResize(in_height, out_size, dtype)
        self._cols = _AxisResize(in_width, out_size, dtype)

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
        out = out.reshape(size, size, channels).transpose(2, 1, 0)  # [C, S, S], times H * W
        return np.rint(out / self._denominator).astype(np.uint8)
