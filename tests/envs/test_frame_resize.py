"""The numpy area resize that replaces OpenCV's INTER_AREA."""

from __future__ import annotations

import numpy as np
import pytest

from zeropipe.envs.frame import AreaResize, area_weights


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


@pytest.mark.parametrize("size", [64, 84, 96, 67])
@pytest.mark.parametrize("channels", [1, 3])
def test_banded_products_equal_the_dense_area_resize(size: int, channels: int) -> None:
    image = np.random.default_rng(0).integers(0, 256, size=(210, 160, channels), dtype=np.uint8)
    rows = area_weights(210, size).astype(np.float64)
    cols = area_weights(160, size).astype(np.float64)
    dense = np.stack([rows @ image[..., c].astype(np.float64) @ cols.T for c in range(channels)])
    got = AreaResize(210, 160, size)(image[..., 0] if channels == 1 else image)
    assert got.shape == (channels, size, size)
    assert np.abs(got.astype(np.int64) - np.rint(dense)).max() <= 1  # float32 rounding at .5
