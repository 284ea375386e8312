"""Codec: numpy arrays as ext types, zero-copy decode, scalars and containers."""

from __future__ import annotations

import numpy as np
import pytest

from zeropipe.transport import CodecError, decode, encode

NUMERIC_DTYPES = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    ">f4",
    ">i8",
]


def roundtrip(obj: object) -> object:
    return decode(encode(obj))


@pytest.mark.parametrize("dtype", NUMERIC_DTYPES)
def test_every_numeric_dtype_roundtrips(dtype: str) -> None:
    array = (np.arange(24).reshape(2, 3, 4) % 5).astype(dtype)
    out = roundtrip({"x": array})["x"]
    assert out.dtype == array.dtype and out.shape == array.shape
    np.testing.assert_array_equal(out, array)


@pytest.mark.parametrize(
    "array",
    [
        np.arange(40.0).reshape(5, 8)[:, ::3],  # strided
        np.arange(12, dtype=np.int32).reshape(3, 4).T,  # transposed
        np.zeros((0, 7), np.float32),  # zero-size
        np.zeros((3, 0, 2), np.complex64),
        np.array(3.5),  # 0-d
        np.array(True),
    ],
)
def test_shape_edge_cases_roundtrip(array: np.ndarray) -> None:
    out = roundtrip(array)
    assert out.dtype == array.dtype and out.shape == array.shape
    np.testing.assert_array_equal(out, array)


def test_nested_containers_scalars_and_tuples() -> None:
    obj = {
        "a": [1, 2.5, "s", None, True, b"raw", {"b": (1, 2)}],
        3: {"arr": [np.ones(2), np.zeros((1, 1), np.uint8)]},
        "scalars": [np.int64(7), np.float32(0.5), np.bool_(True), np.uint8(3)],
        "complex_scalar": np.complex64(1 - 2j),
    }
    out = roundtrip(obj)
    assert out["a"][:6] == [1, 2.5, "s", None, True, b"raw"]
    assert out["a"][6] == {"b": [1, 2]}  # tuples come back as lists
    np.testing.assert_array_equal(out[3]["arr"][1], np.zeros((1, 1), np.uint8))
    assert out["scalars"] == [7, 0.5, True, 3]
    assert [type(x) for x in out["scalars"]] == [int, float, bool, int]
    assert out["complex_scalar"] == np.complex64(1 - 2j) and out["complex_scalar"].shape == ()


def test_decode_views_the_input_buffer_without_copying() -> None:
    frame = bytearray(encode({"obs": np.arange(1000, dtype=np.float32), "n": 1}))
    out = decode(frame)
    assert np.shares_memory(out["obs"], np.frombuffer(frame, np.uint8))
    assert out["obs"].flags.writeable  # bytearray in → writable views
    readonly = decode(bytes(frame))["obs"]
    assert not readonly.flags.writeable  # bytes in → read-only views (documented)


def test_large_array_roundtrip() -> None:
    array = np.arange(100 * 2**20 // 8, dtype=np.int64)  # 100 MB
    frame = encode({"big": array})
    out = decode(frame)["big"]
    assert np.shares_memory(out, np.frombuffer(frame, np.uint8))
    assert out[-1] == array[-1] and np.array_equal(out[::4099], array[::4099])


@pytest.mark.parametrize(
    "obj", [np.array(["a", "b"]), np.array([object()], dtype=object), 1 + 2j, object()]
)
def test_unencodable_values_raise_codec_error(obj: object) -> None:
    with pytest.raises(CodecError):
        encode({"x": obj})


@pytest.mark.parametrize(
    "frame", [b"", b"XXXX" + bytes(12), encode([1, 2])[:-1], encode(np.ones(4))[:-8]]
)
def test_malformed_frames_raise_codec_error(frame: bytes) -> None:
    with pytest.raises(CodecError):
        decode(frame)
