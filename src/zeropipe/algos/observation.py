"""Model-input layout: stacks of single frames into the network's input tensor.

Runs in: any. The replay stores every frame once; a model input is a stack of S frames, laid out
channel-wise for images ([S·C, H, W]) and concatenated for vectors ([S·O]).
"""

from __future__ import annotations

import numpy as np
import torch


def stacked_input_shape(frame_shape: tuple[int, ...], frame_stack: int) -> tuple[int, ...]:
    """Shape of one model input made of `frame_stack` frames of `frame_shape`."""
    return (frame_stack * frame_shape[0], *frame_shape[1:])


def stack_frames(frames: np.ndarray, frame_ndim: int) -> np.ndarray:
    """Merge the stack axis into the first frame axis.

    Args:
        frames: [..., S, *frame] with frame (O,) (frame_ndim 1) or (C, H, W) (frame_ndim 3).
        frame_ndim: number of axes of one frame.

    Returns:
        [..., S·O] or [..., S·C, H, W]; a view when the input is contiguous.
    """
    stack_axis = frames.ndim - frame_ndim - 1
    lead = frames.shape[:stack_axis]
    s, first = frames.shape[stack_axis], frames.shape[stack_axis + 1]
    return frames.reshape(*lead, s * first, *frames.shape[stack_axis + 2 :])


def to_tensor(array: np.ndarray, device: torch.device | str = "cpu") -> torch.Tensor:
    """numpy → torch without a copy on CPU (copies only when the array is read-only)."""
    if not array.flags.writeable:
        array = array.copy()
    return torch.from_numpy(np.ascontiguousarray(array)).to(device, non_blocking=True)
