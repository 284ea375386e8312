"""Scoring a saved checkpoint with the run's own Evaluator (`zeropipe eval`).

Runs in: driver (the CLI process). The evaluator is built by `pipeline.build.build_evaluator`, so
its env seeds are the ones the run's evaluator used (`seed + EVAL_SEED_OFFSET`, env i `+ i`):
with the run's config and seed, the weights of `ckpt_best.pth.tar` score exactly the eval
`reward_mean` that made them the best (evaluation is deterministic, see workers/evaluator.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from zeropipe.cli.errors import InputError
from zeropipe.cli.video import (
    FirstEpisodeRecorder,
    check_renderable,
    render_episode,
    write_video,
)
from zeropipe.config import ExperimentConfig
from zeropipe.outputs.checkpoint_format import read_checkpoint
from zeropipe.outputs.errors import CheckpointError

log = logging.getLogger("zeropipe.cli")


@dataclass(frozen=True)
class CheckpointWeights:
    """The network weights of a checkpoint file and what the file says about them."""

    state_dict: dict[str, torch.Tensor]
    policy_version: int
    recorded_reward_mean: float | None  # the eval score saved with a ckpt_best, else None


@dataclass(frozen=True)
class CheckpointScore:
    """The outcome of `score_checkpoint`."""

    eval_seed: int  # env i of the evaluator was seeded eval_seed + i
    episode_returns: list[float]
    recorded_reward_mean: float | None
    video_return: float | None  # the return of the episode in the video, when one was written

    def summary(self) -> str:
        """Two lines: episodes, mean/std/min/max, the recorded score if any; every return."""
        r = np.asarray(self.episode_returns, dtype=np.float64)
        line = (
            f"episodes {r.size}  mean {r.mean():.4g}  std {r.std():.4g}  "
            f"min {r.min():.4g}  max {r.max():.4g}  (eval seed {self.eval_seed})"
        )
        if self.recorded_reward_mean is not None:
            line += f"; recorded at save time: mean {self.recorded_reward_mean:.4g}"
        return line + "\nreturns " + " ".join(f"{value:g}" for value in self.episode_returns)


def checkpoint_of(path: Path) -> Path:
    """The checkpoint to score for `path`: a file as given, or a run directory's
    `ckpt/ckpt_best.pth.tar`, else its `ckpt/ckpt_latest.pth.tar`.

    Raises:
        InputError: a directory with neither checkpoint.
    """
    if not path.is_dir():
        return path
    for name in ("ckpt_best.pth.tar", "ckpt_latest.pth.tar"):
        if (path / "ckpt" / name).is_file():
            return path / "ckpt" / name
    raise InputError(
        f"{path} is a directory without ckpt/ckpt_best.pth.tar or ckpt/ckpt_latest.pth.tar: "
        "pass a run directory or a checkpoint file"
    )


def run_config_path(checkpoint: Path) -> Path:
    """The run's resolved config for a checkpoint at `<exp_name>/ckpt/<file>`."""
    return checkpoint.resolve().parent.parent / "config.yaml"


def load_checkpoint_weights(path: Path) -> CheckpointWeights:
    """Read the network weights of any checkpoint a run writes.

    `ckpt_best.pth.tar` and `iteration_N.pth.tar` hold them under "model";
    `ckpt_latest.pth.tar` under "learner" → "model" (pipeline/run_state.py).

    The file is read with `read_checkpoint`, which never runs code from it: checkpoints are
    shared, and evaluating one must not execute it.

    Raises:
        InputError: the file is missing, unreadable, refused (it would run code to load) or holds
            no network weights.
    """
    if not path.is_file():
        raise InputError(f"no checkpoint file at {path}")
    try:
        payload: Any = read_checkpoint(path)
    except CheckpointError as exc:  # names the file already
        raise InputError(str(exc)) from None
    except Exception as exc:
        raise InputError(f"cannot read checkpoint {path}: {exc}") from None
    if isinstance(payload, dict) and isinstance(payload.get("model"), dict):
        version = int(payload.get("policy_version", payload.get("train_iter", -1)))
        recorded = payload.get("reward_mean")
        return CheckpointWeights(payload["model"], version, recorded)
    learner = payload.get("learner") if isinstance(payload, dict) else None
    if isinstance(learner, dict) and isinstance(learner.get("model"), dict):
        return CheckpointWeights(learner["model"], int(learner.get("train_iter", -1)), None)
    raise InputError(
        f"{path} holds no network weights (expected a 'model' or 'learner' entry: "
        "pass ckpt_best.pth.tar, ckpt_latest.pth.tar or iteration_N.pth.tar)"
    )


def score_checkpoint(
    cfg: ExperimentConfig, checkpoint: Path, video: Path | None = None
) -> CheckpointScore:
    """Play `cfg.env.n_evaluator_episode` evaluation episodes with a checkpoint's weights.

    Args:
        cfg: the resolved config of the run (its `seed` sets the evaluator's env seeds).
        checkpoint: a checkpoint file written by a run.
        video: where to write the first episode of env 0 (.gif, or a video format such as .mp4).

    Returns:
        The returns of every episode.

    Raises:
        InputError: bad checkpoint, weights that do not fit the config's network, or an env
            that cannot render when a video is asked for.
    """
    from zeropipe.envs import EnvError
    from zeropipe.pipeline.build import build_evaluator

    weights = load_checkpoint_weights(checkpoint)
    if video is not None:
        try:
            check_renderable(cfg.env)
        except EnvError as exc:
            raise InputError(f"--video: {exc}") from None
    evaluator = build_evaluator(cfg)
    recorder = None
    try:
        try:
            evaluator.load_weights(weights.state_dict, weights.policy_version)
        except RuntimeError as exc:
            detail = [line.strip() for line in str(exc).splitlines() if line.strip()][-1]
            raise InputError(
                f"the weights in {checkpoint} do not fit the network of this config "
                f"(pass the run's config with --config): {detail}"
            ) from None
        if video is not None:
            recorder = FirstEpisodeRecorder(evaluator.envs)
            evaluator.envs = recorder  # type: ignore[assignment]
        result = evaluator.evaluate()
    finally:
        evaluator.close()
    video_return = None
    if recorder is not None and video is not None:
        video_return = _write_first_episode(cfg, evaluator.seed, recorder, video)
    return CheckpointScore(
        evaluator.seed, result.episode_returns, weights.recorded_reward_mean, video_return
    )


def _write_first_episode(
    cfg: ExperimentConfig, seed: int, recorder: FirstEpisodeRecorder, video: Path
) -> float:
    """Render the recorded episode and write it; warn if the replay scored differently."""
    frames, replay_return = render_episode(cfg.env, seed, recorder.actions)
    if recorder.episode_return is not None and replay_return != recorder.episode_return:
        log.warning(
            "the rendered replay scored %g, the evaluated episode %g (env not deterministic "
            "for a seed and the same actions?)",
            replay_return,
            recorder.episode_return,
        )
    write_video(video, frames)
    log.info("wrote %s: %d frames, return %g", video, len(frames), replay_return)
    return replay_return
