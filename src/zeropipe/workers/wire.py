"""GameSegment ⇄ wire dict: how a collector worker's segments travel in a ``CollectResult``.

Runs in: collector (``segment_to_wire``), driver (``segment_from_wire``, ``segments_from_wire``).

The wire form is a plain dict keyed by the ``GameSegment`` field names: numpy arrays for the array
fields, ``int`` / ``bool`` for the scalars, ``None`` for absent priorities. Encoding copies
nothing (the codec writes each array straight into the outgoing frame). Optional arrays
(priorities, root sampled actions, chance labels) travel as ``None`` when absent.

Decoding copies nothing either: the arrays that ``transport.codec.decode`` returns are views of
the received frame (read-only for ``bytes``, writable for the driver's ``bytearray``), and the
decoded segment keeps those views. That is safe to push into the ``ReplayBuffer`` because its
storage copies every field into its own arrays on push and keeps no reference to the segment's
arrays (priorities included); the frame buffer is freed once the last segment referencing it is
dropped. Code that keeps decoded segments around for long, or writes into their arrays, must copy
them first.

Decoding validates everything the driver relies on: the exact field set, each field's type, array
rank and dtype kind, and ``GameSegment.validate()``; any failure raises ``SegmentWireError``
naming the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from zeropipe.buffer.segment import GameSegment

# name → (exact ndim, or None for "at least 1"; allowed numpy dtype kinds)
_ARRAY_FIELDS: dict[str, tuple[int | None, str]] = {
    "obs": (None, "buif"),  # [S-1 + n + 1, *frame]: uint8 pixels or float features
    "actions": (None, "iuf"),  # [n] integer or [n, D] float (checked by GameSegment.validate)
    "rewards": (1, "f"),  # [n]
    "child_visits": (2, "f"),  # [n, A]
    "root_values": (1, "f"),  # [n]
    "action_masks": (2, "b"),  # [n + 1, A]
    "priorities": (1, "f"),  # [length], or None
    "root_sampled_actions": (None, "iuf"),  # [n, K] int or [n, K, D] float, or None
    "chance_labels": (1, "iu"),  # [n] the env's chance outcomes, or None
}
_OPTIONAL_FIELDS = frozenset({"priorities", "root_sampled_actions", "chance_labels"})
_INT_FIELDS = ("length", "episode_id", "start_step")
_BOOL_FIELDS = ("ends_episode", "terminated")
_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(GameSegment))


class SegmentWireError(ValueError):
    """A segment received on the wire is malformed; the message names the bad field."""


def segment_to_wire(seg: GameSegment) -> dict[str, Any]:
    """Returns ``seg`` as a codec-ready plain dict (no array is copied).

    Args:
        seg: A segment made by the collector.

    Returns:
        ``{field name: np.ndarray | int | bool | None}`` for every ``GameSegment`` field.
    """
    wire: dict[str, Any] = {}
    for name in _ARRAY_FIELDS:
        value = getattr(seg, name)
        wire[name] = None if value is None else np.asarray(value)
    for name in _INT_FIELDS:
        wire[name] = int(getattr(seg, name))
    for name in _BOOL_FIELDS:
        wire[name] = bool(getattr(seg, name))
    return wire


def segment_from_wire(data: Any) -> GameSegment:
    """Rebuilds and validates a segment from its wire dict.

    Args:
        data: One entry of ``CollectResult.segments`` as decoded by the codec.

    Returns:
        The segment; its arrays are the (possibly read-only) decoded views, not copies. They are
        safe to push into the replay buffer, which copies on push (see the module docstring).

    Raises:
        SegmentWireError: If ``data`` is not a map, lacks or adds fields, holds a value of the
            wrong type, rank or dtype, or breaks a ``GameSegment`` invariant; names the field.
    """
    if not isinstance(data, Mapping):
        raise SegmentWireError(f"a segment on the wire must be a map, got {type(data).__name__}")
    missing = [name for name in _FIELD_NAMES if name not in data]
    extra = [str(key) for key in data if key not in _FIELD_NAMES]
    if missing or extra:
        raise SegmentWireError(
            f"segment on the wire: missing fields {missing}, unexpected fields {extra}"
        )
    kwargs: dict[str, Any] = {name: _array(name, data[name]) for name in _ARRAY_FIELDS}
    _check_actions(kwargs["actions"])
    kwargs.update({name: _int(name, data[name]) for name in _INT_FIELDS})
    kwargs.update({name: _bool(name, data[name]) for name in _BOOL_FIELDS})
    seg = GameSegment(**kwargs)
    # continuous actions: the targets span the K sampled actions, the masks the D dimensions
    if seg.actions.ndim == 1 and seg.child_visits.shape[1] != seg.action_masks.shape[1]:
        raise SegmentWireError(
            f"segment field 'child_visits' has {seg.child_visits.shape[1]} actions but "
            f"'action_masks' has {seg.action_masks.shape[1]}"
        )
    try:
        seg.validate()
    except ValueError as exc:
        raise SegmentWireError(f"segment on the wire is inconsistent: {exc}") from exc
    return seg


def segments_from_wire(items: Sequence[Any], source: str) -> list[GameSegment]:
    """Decodes every segment of one result; errors say which result and which segment.

    Args:
        items: ``CollectResult.segments``.
        source: Where they came from, for errors, e.g. ``"collect_result 7 from collector-0"``.

    Raises:
        SegmentWireError: On the first malformed segment.
    """
    segments = []
    for i, item in enumerate(items):
        try:
            segments.append(segment_from_wire(item))
        except SegmentWireError as exc:
            raise SegmentWireError(f"{source}, segment {i}: {exc}") from exc
    return segments


def _array(name: str, value: Any) -> np.ndarray | None:
    if value is None and name in _OPTIONAL_FIELDS:
        return None
    ndim, kinds = _ARRAY_FIELDS[name]
    if not isinstance(value, np.ndarray):
        raise SegmentWireError(
            f"segment field {name!r} must be a numpy array, got {type(value).__name__}"
        )
    if (value.ndim != ndim) if ndim is not None else value.ndim < 1:
        expected = f"{ndim}" if ndim is not None else "at least 1"
        raise SegmentWireError(
            f"segment field {name!r} must have {expected} dimensions, got shape {value.shape}"
        )
    if value.dtype.kind not in kinds:
        raise SegmentWireError(
            f"segment field {name!r} has dtype {value.dtype}, expected one of kinds {kinds!r} "
            "(b bool, i/u integer, f float)"
        )
    return value


def _check_actions(actions: np.ndarray) -> None:
    """Actions are [n] integers (discrete) or [n, D] floats (continuous)."""
    if actions.ndim == 1 and actions.dtype.kind in "iu":
        return
    if actions.ndim == 2 and actions.dtype.kind == "f":
        return
    raise SegmentWireError(
        f"segment field 'actions' has dtype {actions.dtype} and shape {actions.shape}; expected "
        "[n] integer (discrete) or [n, D] float (continuous) actions"
    )


def _int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise SegmentWireError(f"segment field {name!r} must be an int, got {value!r}")
    return int(value)


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise SegmentWireError(f"segment field {name!r} must be a bool, got {value!r}")
    return bool(value)
