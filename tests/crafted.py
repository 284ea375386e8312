"""A crafted checkpoint: a pickle that creates a marker file when it is loaded unsafely.

Loading it with `torch.load(..., weights_only=False)` (or `pickle.load`) calls `open(marker, "w")`;
a test asserts that the marker never appears, i.e. that loading never ran code from the file.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import torch

RESUMABLE_KEYS = ("learner", "buffer", "envstep", "last_eval_iter", "best_reward")


class CreatesFile:
    """Unpickles as a call of `open(path, "w")`: the side effect a crafted file would have."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (str(self.path), "w"))


def write_crafted_checkpoint(path: Path, marker: Path, torch_zip: bool = True) -> None:
    """A file that looks like a run's checkpoint (every key a loader checks) with the payload
    in its "model" entry; `torch_zip=False` writes a bare pickle instead of a torch.save zip."""
    payload = {key: 0 for key in RESUMABLE_KEYS} | {"model": CreatesFile(marker)}
    path.parent.mkdir(parents=True, exist_ok=True)
    if torch_zip:
        torch.save(payload, path)
    else:
        path.write_bytes(pickle.dumps(payload))
