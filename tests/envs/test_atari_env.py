"""ALE Atari through our preprocessing: frame format, one frame skip, clipping, seeds, lives.

Each test plays at most a few hundred agent steps of one or two envs.
"""

from __future__ import annotations

import numpy as np
import pytest

from zeropipe.config import EnvConfig
from zeropipe.envs import EnvBatch
from zeropipe.envs.atari import AtariGame
from zeropipe.envs.registry import make_game


def _game(mode: str = "collect", **overrides: object) -> AtariGame:
    fields: dict[str, object] = {"env_id": "ALE/Pong-v5", **overrides}
    game, _ = make_game(EnvConfig(**fields), mode)  # type: ignore[arg-type]
    assert isinstance(game, AtariGame)
    return game


@pytest.mark.parametrize(("gray_scale", "channels"), [(True, 1), (False, 3)])
def test_pong_frames(gray_scale: bool, channels: int) -> None:
    cfg = EnvConfig(env_id="ALE/Pong-v5", gray_scale=gray_scale, obs_size=64)
    with EnvBatch(cfg, 2, "collect", seed=0) as batch:
        frames, masks = batch.reset()
        assert frames.shape == (2, channels, 64, 64) and frames.dtype == np.uint8
        assert masks.shape == (2, 6) and masks.all()
        out = batch.step(np.array([0, 3]))
        assert out.frames.shape == (2, channels, 64, 64) and out.frames.dtype == np.uint8
        assert out.frames.max() > out.frames.min()  # an actual picture


@pytest.mark.parametrize("env_id", ["ALE/Pong-v5", "PongNoFrameskip-v4"])
@pytest.mark.parametrize("frame_skip", [1, 4])
def test_one_step_is_frame_skip_frames(env_id: str, frame_skip: int) -> None:
    # ALE/*-v5 defaults to frameskip=4 and sticky actions; a second skip layer would make one
    # step 16 frames (LightZero PR #494).
    game = _game(env_id=env_id, frame_skip=frame_skip, sticky_action_prob=0.25)
    game.reset(seed=0)
    start = game.ale.getEpisodeFrameNumber()
    for _ in range(10):
        game.step(2)
    assert game.ale.getEpisodeFrameNumber() - start == 10 * frame_skip
    game.close()


def test_noop_reset_starts_at_seeded_random_frames() -> None:
    starts = set()
    game = _game(noop_max=30)
    for seed in range(6):
        game.reset(seed=seed)
        starts.add(game.ale.getEpisodeFrameNumber())
    game.close()
    assert len(starts) > 1
    assert all(1 + 8 <= frame <= 30 + 8 for frame in starts)  # noops, then FIRE and RIGHT steps


def _rewards(mode: str, num_steps: int = 300) -> tuple[list[float], dict[int, float]]:
    # Space Invaders pays 5-30 points per alien; Pong's ±1 would not show clipping.
    cfg = EnvConfig(
        env_id="ALE/SpaceInvaders-v5",
        episode_life=False,
        max_episode_steps=num_steps,
        eval_max_episode_steps=num_steps,
    )
    rng = np.random.default_rng(0)
    rewards: list[float] = []
    with EnvBatch(cfg, 1, mode, seed=3) as batch:  # type: ignore[arg-type]
        batch.reset()
        for _ in range(num_steps):
            out = batch.step(rng.integers(0, 6, size=1))
            rewards.append(float(out.rewards[0]))
    return rewards, out.episode_returns


def test_rewards_are_clipped_in_collect_mode_only() -> None:
    collect_rewards, collect_returns = _rewards("collect")
    eval_rewards, eval_returns = _rewards("eval")
    assert max(eval_rewards) > 1.0
    assert collect_rewards == [float(np.sign(reward)) for reward in eval_rewards]
    # the reported game return is the raw score in both modes
    assert collect_returns == eval_returns == {0: sum(eval_rewards)}


def test_eval_is_reproducible() -> None:
    cfg = EnvConfig(env_id="ALE/Pong-v5", sticky_action_prob=0.25, noop_max=30)
    actions = np.random.default_rng(0).integers(0, 6, size=(40, 2))

    def play(batch: EnvBatch) -> np.ndarray:
        frames = [batch.reset()[0]]
        frames += [batch.step(step_actions).frames for step_actions in actions]
        return np.stack(frames)

    with EnvBatch(cfg, 2, "eval", seed=7) as first, EnvBatch(cfg, 2, "eval", seed=7) as second:
        reference = play(first)
        np.testing.assert_array_equal(reference, play(second))
        np.testing.assert_array_equal(reference, play(first))  # every evaluation, same episodes
        first.reseed(seed=8)
        assert not np.array_equal(reference, play(first))


def test_episodic_life_ends_episodes_not_games() -> None:
    # Breakout with NOOP only: FIRE (from the reset) launches the ball, the paddle misses it.
    cfg = EnvConfig(env_id="ALE/Breakout-v5", episode_life=True)
    with EnvBatch(cfg, 1, "collect", seed=0) as batch:
        batch.reset()
        life_losses, game_return = 0, None
        for _ in range(300):
            out = batch.step(np.zeros(1, dtype=np.int64))
            if out.terminated[0]:
                assert 0 in out.reset_frames
                if out.episode_returns:
                    game_return, game_length = out.episode_returns, out.episode_lengths
                    break
                life_losses += 1
        assert life_losses == 4  # five lives: four life-loss episodes, then the game ends
        assert game_return == {0: 0.0}
        assert game_length[0] > 4 * 10  # the length counts every life


def test_eval_plays_through_lost_lives() -> None:
    # Eval gets no automatic FIRE after a lost life, so the policy presses FIRE (action 1) itself.
    cfg = EnvConfig(env_id="ALE/Breakout-v5", episode_life=True)
    with EnvBatch(cfg, 1, "eval", seed=0) as batch:
        batch.reset()
        out, steps = batch.step(np.ones(1, dtype=np.int64)), 1
        while not out.terminated[0] and steps < 300:
            out, steps = batch.step(np.ones(1, dtype=np.int64)), steps + 1
        assert out.episode_returns == {0: 0.0}
        assert out.episode_lengths == {0: steps}
        assert steps > 4 * 10


def test_atari_time_limit_counts_agent_steps() -> None:
    cfg = EnvConfig(env_id="ALE/Pong-v5", max_episode_steps=12)
    with EnvBatch(cfg, 1, "collect", seed=0) as batch:
        batch.reset()
        for _ in range(11):
            assert not batch.step(np.zeros(1, dtype=np.int64)).truncated[0]
        out = batch.step(np.zeros(1, dtype=np.int64))
        assert out.truncated[0] and not out.terminated[0]
        assert out.episode_lengths == {0: 12}
        assert 0 in out.reset_frames
