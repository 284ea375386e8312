"""What a collector, evaluator or model needs to know about an environment, and the env error.

Runs in: any.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class EnvError(Exception):
    """An env cannot be created or used as configured (bad id, unsupported spaces, misuse)."""


class NonFiniteEnvOutput(EnvError):
    """An env returned a NaN or infinite observation or reward; the message names the env id,
    the env, the step and the field. The run stops there: a later failure (a search's "index -1
    is out of bounds", the value transform's two-hot) would name none of them."""


@dataclass(frozen=True)
class EnvSpec:
    """Shapes of what an `EnvBatch` of one `EnvConfig` produces.

    Attributes:
        frame_shape: One observation frame: (O,) for vector envs, (C, H, W) for Atari frames.
        frame_dtype: float32 for vector envs, uint8 for Atari frames.
        action_space_size: Number of discrete actions A; for a Box action space, its dimension
            D (LightZero's `action_space_size` of continuous envs).
        frame_stack: Frames the model stacks as its input (`EnvConfig.frame_stack`). The envs do not
            stack; the replay stores single frames.
        action_dim: D for a Box action space, 0 for Discrete actions.
        action_low: [D] float32 lower bounds of a Box action space (None for Discrete).
        action_high: [D] float32 upper bounds of a Box action space (None for Discrete).
    """

    frame_shape: tuple[int, ...]
    frame_dtype: np.dtype
    action_space_size: int
    frame_stack: int
    action_dim: int = 0
    action_low: np.ndarray | None = None
    action_high: np.ndarray | None = None

    @property
    def continuous(self) -> bool:
        """Whether actions are float vectors in [-1, 1]^D (scaled to the bounds by the env)."""
        return self.action_dim > 0


def scale_action(action: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """A squashed action in [-1, 1]^D mapped affinely onto the env's bounds [low, high]^D.

    Args:
        action: [D] float action in [-1, 1] (clipped there first).
        low: [D] lower bounds.
        high: [D] upper bounds.

    Returns:
        [D] float32 action in [low, high].
    """
    a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
    return (low + (a + 1.0) * 0.5 * (high - low)).astype(np.float32)
