"""Checkpoint files: numpy state as tensors and plain data, and loading without running code."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
import torch

from tests.crafted import write_crafted_checkpoint
from zeropipe.outputs.checkpoint_format import encode, read_checkpoint
from zeropipe.outputs.errors import CheckpointError, CheckpointRefused

# What the resumable state holds (buffer columns, numpy / python / bit_generator RNG states),
# plus the awkward cases: a 0-d array, an empty one, a strided view, another byte order.
NUMPY_STATE = {
    "priorities": np.array([0.5, 1.0, 2.0]),
    "obs": np.arange(24, dtype=np.uint8).reshape(2, 3, 4),
    "done": np.array([True, False]),
    "numpy_rng": ("MT19937", np.arange(624, dtype=np.uint32), 3, 0, 0.0),
    "python_rng": (3, tuple(range(625)), None),
    "pcg64": {"bit_generator": "PCG64", "state": {"state": 2**127 + 5, "inc": 2**100 + 1}},
    "best_reward": np.float64(1.5),
    "count": np.int64(7),
    "zero_d": np.array(2.5),
    "empty": np.zeros((0, 3), dtype=np.float32),
    "strided": np.arange(12).reshape(3, 4)[:, ::2],
    "big_endian": np.arange(3, dtype=">i4"),
    "weights": OrderedDict(w=torch.arange(3.0)),
}


def same(a, b) -> bool:
    """Equal in value, type and dtype, through containers."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray | np.generic):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    if isinstance(a, torch.Tensor):
        return a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_numpy_state_round_trips_through_a_weights_only_file(tmp_path):
    path = tmp_path / "ckpt.pth.tar"
    torch.save(encode(NUMPY_STATE), path)
    assert torch.serialization.get_unsafe_globals_in_checkpoint(path) == []  # plain data only
    torch.load(path, weights_only=True)  # loads with torch's own allowlist alone
    loaded = read_checkpoint(path)
    assert same(loaded, NUMPY_STATE)
    assert loaded["strided"].tolist() == [[0, 2], [4, 6], [8, 10]]


def test_containers_without_numpy_are_saved_as_they_are():
    state_dict = torch.nn.BatchNorm1d(2).state_dict()  # carries _metadata (module versions)
    payload = {"model": state_dict, "train_iter": 3, "rng": (1, [2, 3])}
    assert encode(payload) is payload
    mixed = encode({"model": state_dict, "rng": np.zeros(2)})
    assert mixed["model"] is state_dict


@pytest.mark.parametrize("bad", [np.array([object()]), np.zeros(2, dtype=[("a", "i4")])])
def test_arrays_without_a_plain_bytes_form_are_refused_at_save(bad):
    with pytest.raises(TypeError, match="cannot hold a numpy array"):
        encode({"buffer": bad})


def test_a_checkpoint_written_by_an_earlier_version_still_loads(tmp_path):
    """Earlier versions pickled numpy arrays and numpy scalars themselves (weights_only=False)."""
    path = tmp_path / "old.pth.tar"
    # Not "big_endian": the old format itself read it back as a native-endian array.
    old = {k: v for k, v in NUMPY_STATE.items() if k != "big_endian"}
    torch.save(old, path)
    assert "numpy.ndarray" in torch.serialization.get_unsafe_globals_in_checkpoint(path)
    assert same(read_checkpoint(path), old)


@pytest.mark.parametrize(
    ("torch_zip", "error", "message"),
    [
        (True, CheckpointRefused, "was refused: loading it would call io.open;"),
        (False, CheckpointError, "not a checkpoint"),
    ],
    ids=["torch-zip", "bare-pickle"],
)
def test_a_crafted_checkpoint_is_refused_without_running_it(tmp_path, torch_zip, error, message):
    path, marker = tmp_path / "ckpt_best.pth.tar", tmp_path / "marker"
    write_crafted_checkpoint(path, marker, torch_zip=torch_zip)
    with pytest.raises(error) as err:
        read_checkpoint(path)
    assert not marker.exists()
    assert type(err.value) is error and message in str(err.value)
    assert str(path) in str(err.value) and "\n" not in str(err.value)
