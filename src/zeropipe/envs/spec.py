"""What a collector, evaluator or model needs to know about an environment, and the env error.

Runs in: any.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class EnvError(Exception):
    """An env cannot be created or used as configured (bad id, unsupported spaces, misuse)."""


@dataclass(frozen=True)
class EnvSpec:
    """Shapes of what an `EnvBatch` of one `EnvConfig` produces.

    Attributes:
        frame_shape: One observation frame: (O,) for vector envs, (C, H, W) for Atari frames.
        frame_dtype: float32 for vector envs, uint8 for Atari frames.
        action_space_size: Number of discrete actions A.
        frame_stack: Frames the model stacks as its input (`EnvConfig.frame_stack`). The envs do not
            stack; the replay stores single frames.
    """

    frame_shape: tuple[int, ...]
    frame_dtype: np.dtype
    action_space_size: int
    frame_stack: int
