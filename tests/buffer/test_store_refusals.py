"""The replay store refuses what it cannot store yet instead of corrupting it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.workers.test_segment_wire import make_segment
from zeropipe.buffer.store import SegmentStore


@pytest.mark.parametrize("kind", ["float_actions", "root_sampled_actions"])
def test_continuous_actions_and_sampled_actions_are_refused_by_name(kind: str) -> None:
    seg = make_segment()
    n = seg.num_stored
    if kind == "float_actions":
        seg = dataclasses.replace(seg, actions=np.zeros((n, 2), np.float32))
    else:
        seg = dataclasses.replace(seg, root_sampled_actions=np.zeros((n, 2), np.int64))
    with pytest.raises(ValueError, match="continuous actions or root sampled actions"):
        SegmentStore().check([seg])
