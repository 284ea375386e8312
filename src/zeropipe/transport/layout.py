"""Parameter layout: where each named parameter lives inside a snapshot block.

Runs in: any (built by the driver from the learner's state dict, sent once to every worker)
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from zeropipe.transport.errors import SnapshotError

ALIGN_BYTES = 64


def as_numpy(name: str, value: Any) -> np.ndarray:
    """Returns a numpy view (no copy for CPU tensors) of one state-dict entry.

    Args:
        name: Parameter name, for error messages.
        value: A torch tensor, numpy array or anything ``np.asarray`` accepts.

    Returns:
        The array.

    Raises:
        SnapshotError: If the value has no numeric numpy equivalent (e.g. bfloat16).
    """
    try:
        if hasattr(value, "detach"):  # torch.Tensor, without importing torch here
            value = value.detach().cpu().numpy()
        array = np.asarray(value)
    except (TypeError, RuntimeError) as exc:
        raise SnapshotError(
            f"parameter {name!r} cannot be viewed as a numpy array ({exc}); "
            "store it as float32/float16 (bfloat16 has no numpy dtype)"
        ) from exc
    if array.dtype.kind not in "biufc":
        raise SnapshotError(f"parameter {name!r} has non-numeric dtype {array.dtype}")
    return array


@dataclass(frozen=True)
class ParamSpec:
    """One parameter's place in a snapshot's data region.

    Attributes:
        name: State-dict key.
        offset_bytes: Offset from the start of the data region (64-byte aligned).
        dtype: numpy dtype string, e.g. ``"<f4"``.
        shape: Array shape.
    """

    name: str
    offset_bytes: int
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        """Size of the parameter in bytes."""
        return math.prod(self.shape) * np.dtype(self.dtype).itemsize


@dataclass(frozen=True)
class ParamLayout:
    """The parameter-layout table (name → offset, dtype, shape) of every snapshot of one model.

    Attributes:
        params: One spec per parameter, in state-dict order.
        total_bytes: Size of the data region (a multiple of 64).
    """

    params: tuple[ParamSpec, ...]
    total_bytes: int

    @classmethod
    def from_state_dict(cls, state_dict: Mapping[str, Any]) -> ParamLayout:
        """Lays out a state dict's entries back to back, each 64-byte aligned.

        Args:
            state_dict: name → torch tensor or numpy array.

        Returns:
            The layout.

        Raises:
            SnapshotError: If an entry is not a numeric array.
        """
        specs = []
        offset = 0
        for name, value in state_dict.items():
            array = as_numpy(name, value)
            spec = ParamSpec(name, offset, array.dtype.str, tuple(array.shape))
            specs.append(spec)
            offset = -(-(offset + spec.nbytes) // ALIGN_BYTES) * ALIGN_BYTES
        return cls(tuple(specs), offset)

    @property
    def names(self) -> list[str]:
        """Parameter names in layout order."""
        return [spec.name for spec in self.params]

    @property
    def fingerprint(self) -> int:
        """A 63-bit hash of the table; a block stamped with another fingerprint is rejected."""
        digest = hashlib.blake2b(repr(self.to_wire()).encode(), digest_size=8).digest()
        return int.from_bytes(digest, "little") >> 1

    def to_wire(self) -> dict[str, Any]:
        """Returns the layout as plain data (msgpack-able)."""
        return {
            "total_bytes": self.total_bytes,
            "params": [[s.name, s.offset_bytes, s.dtype, list(s.shape)] for s in self.params],
        }

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ParamLayout:
        """Rebuilds a layout from :meth:`to_wire` output.

        Raises:
            SnapshotError: If the data is not a valid layout table.
        """
        try:
            specs = tuple(
                ParamSpec(str(name), int(offset), np.dtype(dtype).str, tuple(int(n) for n in shape))
                for name, offset, dtype, shape in data["params"]
            )
            layout = cls(specs, int(data["total_bytes"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise SnapshotError(f"malformed parameter layout: {exc!r}") from exc
        for spec in specs:
            if spec.offset_bytes < 0 or spec.offset_bytes + spec.nbytes > layout.total_bytes:
                raise SnapshotError(
                    f"parameter {spec.name!r} lies outside the layout's data region"
                )
        return layout

    def check_state_dict(self, state_dict: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """Converts a state dict to arrays and checks it matches this layout exactly.

        Returns:
            name → numpy array, in layout order.

        Raises:
            SnapshotError: On a missing or extra key, or a dtype/shape mismatch.
        """
        missing = [n for n in self.names if n not in state_dict]
        extra = [n for n in state_dict if n not in {s.name for s in self.params}]
        if missing or extra:
            raise SnapshotError(
                f"state dict does not match the layout: missing {missing}, unexpected {extra}; "
                "build the layout from the same model"
            )
        arrays = {}
        for spec in self.params:
            array = as_numpy(spec.name, state_dict[spec.name])
            if array.dtype.str != spec.dtype or tuple(array.shape) != spec.shape:
                raise SnapshotError(
                    f"parameter {spec.name!r} is {array.dtype.str}{list(array.shape)}, "
                    f"the layout says {spec.dtype}{list(spec.shape)}"
                )
            arrays[spec.name] = array
        return arrays
