"""The numpy area resize that replaces OpenCV's INTER_AREA."""

from __future__ import annotations

import numpy as np
import pytest

from zeropipe.envs.frame import AreaResize, area_counts, area_weights


def test_weights_rows_sum_to_one_and_cover_the_input() -> None:
    weights = area_weights(210, 64)
    assert weights.shape == (64, 210)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(weights.sum(axis=0), 64 / 210, rtol=1e-5)


def test_integer_factor_is_the_block_mean() -> None:
    image = np.arange(16, dtype=np.uint8).reshape(4, 4) * 10
    out = AreaResize(4, 4, 2)(image)
    expected = image.reshape(2, 2, 2, 2).mean(axis=(1, 3))
    np.testing.assert_array_equal(out, np.rint(expected)[None].astype(np.uint8))


def test_constant_image_stays_constant_and_rgb_is_channel_first() -> None:
    image = np.zeros((210, 160, 3), dtype=np.uint8)
    image[..., 0], image[..., 1], image[..., 2] = 255, 7, 100
    out = AreaResize(210, 160, 64)(image)
    assert out.shape == (3, 64, 64) and out.dtype == np.uint8
    assert (out[0] == 255).all() and (out[1] == 7).all() and (out[2] == 100).all()


def test_a_small_sprite_is_not_lost() -> None:
    image = np.zeros((210, 160), dtype=np.uint8)
    for top, left in [(0, 0), (101, 77), (205, 155)]:  # a 2x4 "ball" anywhere
        image[:] = 0
        image[top : top + 4, left : left + 2] = 255
        assert AreaResize(210, 160, 64)(image).max() > 0


def _exact_area_mean(image: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """The area mean in integers (int64: exact in any order), rounded half to even; and its ties."""
    rows, cols = area_counts(210, size), area_counts(160, size)
    totals = np.stack([rows @ image[..., c].astype(np.int64) @ cols.T for c in range(3)])
    area = 210 * 160  # each output pixel is totals / area
    ties = int(((2 * totals) % (2 * area) == area).sum())
    return np.rint(totals / area).astype(np.uint8), ties


def test_area_counts_are_the_weights_in_integers() -> None:
    np.testing.assert_array_equal(area_counts(5, 2), [[2, 2, 1, 0, 0], [0, 0, 1, 2, 2]])
    np.testing.assert_allclose(area_counts(210, 84) / 210, area_weights(210, 84), rtol=1e-6)


def test_a_mean_half_way_between_two_levels_rounds_to_even() -> None:
    column = np.array([[1], [2], [2], [3]], dtype=np.uint8)  # means 1.5 and 2.5
    np.testing.assert_array_equal(AreaResize(4, 1, 2)(column)[0, :, 0], [2, 2])


@pytest.mark.parametrize("size", [64, 84, 96, 67])
def test_frames_are_the_exact_area_mean(size: int) -> None:
    # Flat 10x10 blocks, as in Atari screens: at 84 (2.5 rows per output row) hundreds of output
    # pixels fall exactly half way, where float weights rounded either way depending on the
    # order OpenBLAS's kernel for the CPU summed in (the Breakout trace differed on AVX-512).
    rng = np.random.default_rng(size)
    blocks = rng.integers(0, 256, size=(21, 16, 3), dtype=np.uint8)
    flat = np.repeat(np.repeat(blocks, 10, axis=0), 10, axis=1)
    noise = rng.integers(0, 256, size=(210, 160, 3), dtype=np.uint8)
    for image in (flat, noise):
        want, _ = _exact_area_mean(image, size)
        np.testing.assert_array_equal(AreaResize(210, 160, size)(image), want)
        np.testing.assert_array_equal(AreaResize(210, 160, size)(image[..., 0]), want[:1])
    if size == 84:
        assert _exact_area_mean(flat, size)[1] > 100  # the ties are really exercised
