"""msgpack codec that carries numpy arrays as ext types and decodes them without copying.

Runs in: any

Frame layout (all offsets in bytes)::

    [0:4]    magic b"ZPC1"
    [4:8]    reserved (zero)
    [8:16]   body length, uint64 little-endian
    [16:..]  msgpack body; every numpy array in it is an ext type (code ``ARRAY_EXT_CODE``)
             whose payload is msgpack ``[dtype_str, shape, offset_bytes, nbytes]``
    [..]     data section (absent if there are no arrays), starting at the next multiple of 64:
             the raw array bytes, each array 64-byte aligned, ``offset_bytes`` counted from the
             start of the data section

Why the raw bytes sit after the body rather than inside the ext payload: msgpack-python hands an
ext payload to ``ext_hook`` as a fresh ``bytes`` object, i.e. it copies. With the bytes in a data
section, ``decode`` builds every array with ``np.frombuffer`` over the received buffer itself, so
a 50 MB frame is not copied a second time after it was read from the pipe.

Decoding rules a caller must know:
- decoded arrays are *views of the input buffer*: read-only when the input is ``bytes``,
  writable when it is a ``bytearray`` (or a writable memoryview); they keep the buffer alive;
- tuples decode as lists (msgpack has one array type);
- numpy scalars encode as Python scalars (``np.int64(3)`` decodes as ``3``), except complex
  scalars, which travel as 0-d arrays because msgpack has no complex type;
- only numeric dtypes (bool, signed/unsigned ints, floats incl. float16, complex) are allowed;
  byte order is kept as given (``dtype.str``);
- non-contiguous arrays are made C-contiguous on encode (one copy, only for them);
- map keys may be any msgpack scalar (``strict_map_key=False``).
"""

from __future__ import annotations

import math
import struct
from typing import Any

import msgpack
import numpy as np

from zeropipe.transport.errors import CodecError

ARRAY_EXT_CODE = 1
MAGIC = b"ZPC1"
ALIGN_BYTES = 64
_PREFIX = struct.Struct("<4s4xQ")
_NUMERIC_KINDS = frozenset("biufc")


def _align(n: int) -> int:
    return -(-n // ALIGN_BYTES) * ALIGN_BYTES


def _check_dtype(dtype: np.dtype) -> None:
    if dtype.kind not in _NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise CodecError(
            f"cannot encode numpy dtype {dtype!s}: only bool, integer, float and complex arrays "
            "travel on the wire; convert strings/objects to plain lists first"
        )


class _Packer:
    """Collects arrays met while packing and assigns each an aligned data-section offset."""

    def __init__(self) -> None:
        self.arrays: list[tuple[int, np.ndarray]] = []
        self.data_bytes = 0

    def default(self, obj: Any) -> Any:
        if isinstance(obj, np.ndarray):
            return self._array_ext(obj)
        if isinstance(obj, np.generic):
            if np.iscomplexobj(obj):
                return self._array_ext(np.asarray(obj))
            return obj.item()
        raise TypeError(f"cannot encode object of type {type(obj).__qualname__}")

    def _array_ext(self, array: np.ndarray) -> msgpack.ExtType:
        _check_dtype(array.dtype)
        flat = np.ascontiguousarray(array).reshape(-1)
        offset = _align(self.data_bytes)
        self.data_bytes = offset + flat.nbytes
        self.arrays.append((offset, flat))
        header = [array.dtype.str, list(array.shape), offset, flat.nbytes]
        return msgpack.ExtType(ARRAY_EXT_CODE, msgpack.packb(header))


def encode(obj: Any) -> bytes:
    """Encodes a tree of dicts, lists, scalars, strings, bytes and numpy arrays into one frame.

    Args:
        obj: The object to encode.

    Returns:
        The frame bytes (see the module docstring for the layout).

    Raises:
        CodecError: If ``obj`` holds a type msgpack cannot carry (e.g. an object array).
    """
    packer = _Packer()
    try:
        body = msgpack.packb(obj, default=packer.default, use_bin_type=True)
    except CodecError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise CodecError(f"cannot encode message: {exc}") from exc
    chunks: list[Any] = [_PREFIX.pack(MAGIC, len(body)), body]
    if not packer.arrays:
        return b"".join(chunks)
    position = _PREFIX.size + len(body)
    data_start = _align(position)
    chunks.append(bytes(data_start - position))
    position = data_start
    for offset, flat in packer.arrays:
        chunks.append(bytes(data_start + offset - position))
        chunks.append(flat.view(np.uint8))
        position = data_start + offset + flat.nbytes
    # One copy of each array, straight into the output frame.
    return b"".join(chunks)


class _Unpacker:
    """Turns array ext payloads into ``np.frombuffer`` views of the frame's data section."""

    def __init__(self, frame: memoryview, data_start: int) -> None:
        self.frame = frame
        self.data_start = data_start

    def ext_hook(self, code: int, payload: bytes) -> np.ndarray:
        if code != ARRAY_EXT_CODE:
            raise CodecError(f"unknown msgpack ext type code {code} (expected {ARRAY_EXT_CODE})")
        try:
            dtype_str, shape, offset, nbytes = msgpack.unpackb(payload)
            dtype = np.dtype(dtype_str)
            shape = tuple(int(n) for n in shape)
        except (ValueError, TypeError, msgpack.UnpackException) as exc:
            raise CodecError(f"malformed array header in frame: {exc}") from exc
        _check_dtype(dtype)
        count = math.prod(shape)
        start = self.data_start + offset
        if count * dtype.itemsize != nbytes or offset < 0 or start + nbytes > len(self.frame):
            raise CodecError(
                f"array header (dtype {dtype_str}, shape {shape}, offset {offset}, "
                f"{nbytes} bytes) does not fit the {len(self.frame)}-byte frame"
            )
        if count == 0:
            return np.empty(shape, dtype)
        return np.frombuffer(self.frame, dtype=dtype, count=count, offset=start).reshape(shape)


def decode(data: bytes | bytearray | memoryview) -> Any:
    """Decodes one frame made by :func:`encode`.

    Args:
        data: The whole frame. Arrays in the result are views of it (read-only if ``data`` is
            read-only) and keep it alive.

    Returns:
        The decoded object; tuples come back as lists.

    Raises:
        CodecError: If the frame is truncated, has a bad magic, or holds malformed msgpack.
    """
    frame = memoryview(data)
    if frame.format != "B" or frame.ndim != 1:
        frame = frame.cast("B")
    if len(frame) < _PREFIX.size:
        raise CodecError(f"frame of {len(frame)} bytes is shorter than the 16-byte prefix")
    magic, body_len = _PREFIX.unpack_from(frame)
    if magic != MAGIC:
        raise CodecError(f"frame starts with {bytes(magic)!r}, expected {MAGIC!r}")
    body_end = _PREFIX.size + body_len
    if body_end > len(frame):
        raise CodecError(f"frame body of {body_len} bytes runs past the {len(frame)}-byte frame")
    unpacker = _Unpacker(frame, _align(body_end))
    try:
        return msgpack.unpackb(
            frame[_PREFIX.size : body_end],
            ext_hook=unpacker.ext_hook,
            raw=False,
            strict_map_key=False,
        )
    except CodecError:
        raise
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        raise CodecError(f"malformed msgpack body: {exc}") from exc
