"""Tiny networks run on one torch thread: on a shared 2-core machine, intra-op threads only wait."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Run the test with torch on one CPU thread; restore the previous count after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
