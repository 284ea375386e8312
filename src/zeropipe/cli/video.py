"""The video of one evaluation episode: record its actions, replay them on a rendering env, write.

Runs in: driver (the CLI process, for `zeropipe eval --video`).

The evaluator's envs do not render (rendering costs time in every evaluation of a run). Instead
`FirstEpisodeRecorder` passes the evaluator's `EnvBatch` calls through and keeps env 0's actions
until its first game ends; `render_episode` then plays the same actions on one game of the same
config made with ``render_mode="rgb_array"`` and seeded as env 0 was (`EnvBatch`: env i uses
``seed + i``), so it shows exactly the scored episode. The running score is drawn on each frame.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from zeropipe.config import EnvConfig
from zeropipe.envs import BatchStep, EnvBatch
from zeropipe.envs.registry import make_game

log = logging.getLogger("zeropipe.cli")

VIDEO_FPS = 30  # one frame per agent step
RGB = "rgb_array"


class FirstEpisodeRecorder:
    """An `EnvBatch` stand-in that records env 0's actions until its first game is over.

    Args:
        envs: the evaluator's env batch; every call is passed through unchanged.
    """

    def __init__(self, envs: EnvBatch) -> None:
        self._envs = envs
        self.actions: list[Any] = []  # an int (discrete) or a float array (continuous) each
        self.episode_return: float | None = None
        self._recording = False
        self._started = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._envs, name)

    def reset(self) -> tuple[np.ndarray, np.ndarray]:
        """Reset every env; the first reset starts recording env 0 (an evaluation that plays its
        episodes in rounds resets again; env 0's first game is episode 0 all the same)."""
        if not self._started:
            self._started = self._recording = True
        return self._envs.reset()

    def step(self, actions: np.ndarray) -> BatchStep:
        """Step every env; note env 0's action while its first game lasts."""
        out = self._envs.step(actions)
        if self._recording:
            # a copy: the caller may reuse its action buffer. Discrete actions stay ints; a
            # continuous env's row ([D] floats) is kept whole (`int()` of it raised TypeError)
            first = np.array(actions[0], copy=True)
            self.actions.append(int(first) if first.ndim == 0 else first)
            if 0 in out.episode_returns:
                self.episode_return = out.episode_returns[0]
                self._recording = False
        return out


def check_renderable(cfg: EnvConfig) -> None:
    """Raise EnvError now, before an evaluation, if the env cannot render rgb frames."""
    _headless()
    game, _ = make_game(cfg, "eval", render_mode=RGB)
    game.close()


def _headless() -> None:
    """Offscreen SDL for envs that draw with pygame (classic control): no display, no sound card."""
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")


def render_episode(cfg: EnvConfig, seed: int, actions: list[Any]) -> tuple[list[np.ndarray], float]:
    """Replay `actions` from a game seeded `seed` and render every step.

    Args:
        cfg: the env config of the evaluation.
        seed: the seed env 0 of the evaluator was reset with.
        actions: env 0's actions of its first game, in order.

    Returns:
        (frames: uint8 [H, W, 3] each, the start frame plus one per action, annotated with the
        running return; the episode's return).
    """
    _headless()
    game, _ = make_game(cfg, "eval", render_mode=RGB)
    try:
        game.reset(seed)
        total = 0.0
        frames = [_annotated(game.render(), total, 0)]
        for step_index, action in enumerate(actions, start=1):
            total += game.step(action).raw_reward
            frames.append(_annotated(game.render(), total, step_index))
    finally:
        game.close()
    return frames, total


def write_video(path: Path, frames: list[np.ndarray], fps: int = VIDEO_FPS) -> None:
    """Write frames as a GIF when `path` ends in .gif, else as a video through ffmpeg (mp4).

    Args:
        path: output file; its parent directory is created.
        frames: uint8 [H, W, 3] each, all of one size.
        fps: frames per second.
    """
    import imageio.v2 as imageio

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".gif":
        imageio.mimsave(path, frames, duration=1000 / fps, loop=0)
        return
    # yuv420p needs even sizes; a block of 2 avoids imageio's resize to multiples of 16.
    with imageio.get_writer(path, fps=fps, macro_block_size=2) as writer:
        for frame in frames:
            writer.append_data(_even(frame))


def _even(frame: np.ndarray) -> np.ndarray:
    """Crop a frame to even height and width (what the h264 pixel format accepts)."""
    height, width = frame.shape[0] // 2 * 2, frame.shape[1] // 2 * 2
    return frame[:height, :width]


def _annotated(frame: np.ndarray | None, episode_return: float, step: int) -> np.ndarray:
    """The frame with `return R  step N` drawn in its top-left corner."""
    from PIL import Image, ImageDraw, ImageFont

    if frame is None:
        raise ValueError("the env returned no frame from render()")
    image = Image.fromarray(np.ascontiguousarray(frame, dtype=np.uint8))
    draw = ImageDraw.Draw(image)
    size = max(10, image.height // 20)
    font = ImageFont.load_default(size=size)
    score = f"{episode_return:g}" if math.isfinite(episode_return) else str(episode_return)
    text = f"return {score}  step {step}"
    left, top, right, bottom = draw.textbbox((4, 4), text, font=font)
    draw.rectangle((left - 2, top - 2, right + 2, bottom + 2), fill=(0, 0, 0))
    draw.text((4, 4), text, fill=(255, 255, 255), font=font)
    return np.asarray(image)
