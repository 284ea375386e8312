"""What a checkpoint file holds, and reading one without running code from it.

Runs in: driver (and the `zeropipe eval` CLI process).

A checkpoint is a `torch.save` zip whose pickle holds only tensors and plain data (dict, list,
tuple, str, int, float, bool, None), so it loads with `torch.load(..., weights_only=True)`: a file
someone shares can be read, evaluated or resumed without trusting it. Loading a pickle with
`weights_only=False` runs whatever callables the file names (a crafted `__reduce__` can call
`os.system`), so this module never does that.

The resumable state holds numpy arrays (replay contents, numpy RNG states); `encode` turns each
one into a tagged dict of its raw bytes (a uint8 tensor), its dtype string and its shape, and
`decode` turns those back into the same arrays, bit for bit. Containers without an array are kept
as they are (a module's state dict keeps its `_metadata`); tuples stay tuples.

Earlier versions pickled the numpy arrays themselves. Those files still load, through the same
restricted unpickler with only numpy's array and dtype reconstructors allowed besides torch's own
set (`LEGACY_NUMPY_GLOBALS`): they rebuild an array from its dtype, shape and bytes and call
nothing else. A file that needs any other callable is refused (`CheckpointRefused`).
"""

from __future__ import annotations

import pickle
import warnings
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zeropipe.outputs.errors import CheckpointError, CheckpointRefused

try:
    from numpy._core import multiarray as _multiarray  # numpy >= 2
except ImportError:  # numpy 1.26
    from numpy.core import multiarray as _multiarray

NUMPY_TAG = "__zeropipe_numpy__"  # value: "ndarray" or "scalar"

# (callable, the name an earlier numpy wrote it under): numpy 2 moved numpy.core to numpy._core.
# The dtype classes (numpy.dtypes.Int64DType, ...) are there because unpickling a dtype sets its
# state (byte order, alignment) on an instance of one; `bytes` because pickle protocol 2 (which
# torch.save uses) writes an empty array's data as a call of `bytes()`.
LEGACY_NUMPY_GLOBALS: list[Any] = [
    bytes,
    np.ndarray,
    np.dtype,
    *(getattr(np.dtypes, name) for name in np.dtypes.__all__),
    (_multiarray._reconstruct, "numpy._core.multiarray._reconstruct"),
    (_multiarray._reconstruct, "numpy.core.multiarray._reconstruct"),
    (_multiarray.scalar, "numpy._core.multiarray.scalar"),
    (_multiarray.scalar, "numpy.core.multiarray.scalar"),
]


def encode(value: Any) -> Any:
    """`value` with every numpy array and numpy scalar replaced by a tagged dict of tensors.

    Returns `value` itself when it holds no numpy object.

    Raises:
        TypeError: an array of Python objects or with named fields (no plain-bytes form).
    """
    return _rebuild(value, lambda v: _encode_array(v) if isinstance(v, _NUMPY) else v)


def decode(value: Any) -> Any:
    """The inverse of `encode`: tagged dicts back to numpy arrays and scalars."""
    return _rebuild(value, lambda v: _decode_array(v) if _is_tagged(v) else v)


_NUMPY = (np.ndarray, np.generic)


def _is_tagged(value: Any) -> bool:
    return isinstance(value, dict) and NUMPY_TAG in value


def _rebuild(value: Any, convert: Callable[[Any], Any]) -> Any:
    """`value` with `convert` applied to every node, top down; unchanged parts stay the same
    objects (a container is only rebuilt, as its own type, when something inside it changed)."""
    converted = convert(value)
    if converted is not value:
        return converted
    if isinstance(value, dict):
        items = {k: _rebuild(v, convert) for k, v in value.items()}
        if all(items[k] is v for k, v in value.items()):
            return value
        return OrderedDict(items) if isinstance(value, OrderedDict) else items
    if isinstance(value, list | tuple):
        seq = [_rebuild(v, convert) for v in value]
        if all(new is old for new, old in zip(seq, value, strict=True)):
            return value
        return tuple(seq) if isinstance(value, tuple) else seq
    return value


def _encode_array(value: np.ndarray | np.generic) -> dict[str, Any]:
    array = np.asarray(value, order="C")  # a copy only if not C-contiguous; keeps 0-d
    if array.dtype.hasobject or array.dtype.fields is not None:
        raise TypeError(f"a checkpoint cannot hold a numpy array of dtype {array.dtype}")
    raw = array.reshape(-1).view(np.uint8)  # a view: no copy of the (possibly large) contents
    return {
        NUMPY_TAG: "scalar" if isinstance(value, np.generic) else "ndarray",
        "dtype": array.dtype.str,
        "shape": tuple(array.shape),
        "bytes": torch.from_numpy(raw),
    }


def _decode_array(value: dict[str, Any]) -> np.ndarray | np.generic:
    array = value["bytes"].numpy().view(np.dtype(value["dtype"])).reshape(value["shape"])
    return array[()] if value[NUMPY_TAG] == "scalar" else array


def read_checkpoint(path: Path) -> Any:
    """Load a checkpoint file without running code from it, numpy arrays decoded.

    Args:
        path: a file written by `RunDir.save` (or by an earlier version, see the module doc).

    Returns:
        The payload, as it was saved.

    Raises:
        CheckpointRefused: the file needs callables besides tensors and plain data to load.
        CheckpointError: the file is not a checkpoint at all (an arbitrary pickle, garbage).
        Exception: whatever else `torch.load` raised for an unreadable file (truncated zip).
    """
    with torch.serialization.safe_globals(LEGACY_NUMPY_GLOBALS), warnings.catch_warnings():
        # Said of any pickle not written by torch.save: that file is refused in one line below.
        warnings.filterwarnings("ignore", message="Detected pickle protocol")
        try:
            payload = torch.load(path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError:
            unsafe = _unsafe_globals(path)
            if unsafe:
                raise CheckpointRefused(
                    f"{path} was refused: loading it would call {', '.join(sorted(unsafe))}; a "
                    "checkpoint holds only tensors and plain data, and a file that needs more "
                    "could run any code, so it is never loaded"
                ) from None
            raise CheckpointError(
                f"cannot read {path}: not a checkpoint (a torch.save zip file of tensors and "
                "plain data)"
            ) from None
    return decode(payload)


def _unsafe_globals(path: Path) -> list[str]:
    """The callables `path`'s pickle names beyond the allowed ones ([] if it cannot be read)."""
    try:
        return torch.serialization.get_unsafe_globals_in_checkpoint(path)
    except Exception:  # not a torch zip file at all: unreadable, not refused
        return []
