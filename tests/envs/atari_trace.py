"""Per-step digests of an Atari `EnvBatch` run, and the script that records them as a fixture.

Runs in: tests (and by hand: ``PYTHONPATH=src python -m tests.envs.atari_trace`` rewrites
``tests/envs/fixtures/atari_trace.json``).

The fixture pins the observations of the preprocessing as it was before the batched Atari path
(recorded at commit 8078781 with the per-game `AtariGame` stepping): for each case, a fixed seed
and a fixed action sequence, every batch step is reduced to one short digest of its frames,
rewards, episode ends, reset frames and finished-game returns. A mismatch names the first step
that differs. The cases cover Pong gray/RGB in collect and eval mode with short time limits (so
episodes end and re-start with noops), and Breakout (FIRE reset, lives: episodic life in collect
mode) with sticky actions.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np

from zeropipe.config import EnvConfig
from zeropipe.envs import EnvBatch
from zeropipe.envs.batch import BatchStep

FIXTURE = Path(__file__).parent / "fixtures" / "atari_trace.json"
NUM_STEPS = 300

# name -> (env config fields, num_envs, mode, seed)
CASES: dict[str, tuple[dict[str, Any], int, str, int]] = {
    "pong_gray_collect": (
        {"env_id": "ALE/Pong-v5", "max_episode_steps": 90, "noop_max": 30},
        8,
        "collect",
        0,
    ),
    "pong_rgb_eval": (
        {"env_id": "ALE/Pong-v5", "gray_scale": False, "eval_max_episode_steps": 120},
        3,
        "eval",
        5,
    ),
    "breakout_sticky_collect": (
        {"env_id": "ALE/Breakout-v5", "sticky_action_prob": 0.25, "max_episode_steps": 250},
        4,
        "collect",
        11,
    ),
    "breakout_eval": (
        {"env_id": "ALE/Breakout-v5", "obs_size": 84, "eval_max_episode_steps": 200},
        2,
        "eval",
        3,
    ),
}


def step_digest(step: BatchStep) -> str:
    """A 16-hex-digit digest of everything one batch step returns."""
    h = hashlib.sha256()
    for array in (step.frames, step.rewards, step.terminated, step.truncated):
        h.update(np.ascontiguousarray(array).tobytes())
    for index in sorted(step.reset_frames):
        h.update(f"reset{index}".encode())
        h.update(step.reset_frames[index].tobytes())
    for index in sorted(step.episode_returns):
        h.update(
            f"game{index}:{step.episode_returns[index]}:{step.episode_lengths[index]}".encode()
        )
    return h.hexdigest()[:16]


def trace(name: str, num_steps: int = NUM_STEPS) -> dict[str, Any]:
    """Play one case; returns its reset digest, per-step digests and episode-end counts."""
    fields, num_envs, mode, seed = CASES[name]
    rng = np.random.default_rng(1234)
    digests, ends, games = [], 0, 0
    with EnvBatch(EnvConfig(**fields), num_envs, mode, seed) as batch:  # type: ignore[arg-type]
        frames, _ = batch.reset()
        first = hashlib.sha256(frames.tobytes()).hexdigest()[:16]
        actions = rng.integers(0, batch.spec.action_space_size, size=(num_steps, num_envs))
        for row in actions:
            out = batch.step(row)
            digests.append(step_digest(out))
            ends += len(out.reset_frames)
            games += len(out.episode_returns)
    return {"reset": first, "steps": digests, "episode_ends": ends, "games_over": games}


def main() -> None:
    """Record every case into the fixture file."""
    FIXTURE.write_text(json.dumps({name: trace(name) for name in CASES}, indent=0) + "\n")
    print(f"wrote {FIXTURE}")


if __name__ == "__main__":
    main()
