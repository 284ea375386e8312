"""The evaluator plays an evaluation's episodes together: one env and one seed per episode, one
search batch that shrinks as episodes end, rounds only under an `env.evaluator_env_num` bound."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from zeropipe.config import load_config
from zeropipe.workers.evaluator import Evaluator, eval_batch_size
from zeropipe.workers.factory import build_evaluator


def _evaluator(episodes: int, bound: int | None = None) -> Evaluator:
    overrides = [f"env.n_evaluator_episode={episodes}", "policy.num_simulations=4"]
    if bound is not None:
        overrides.append(f"env.evaluator_env_num={bound}")
    torch.manual_seed(0)  # the same untrained weights in every evaluator of a test
    return build_evaluator(load_config("configs/cartpole_muzero.yaml", overrides))


def _spy(evaluator: Evaluator) -> tuple[list[int], list[int]]:
    """Record the batch size of every search and the seed of every env reset."""
    batches: list[int] = []
    seeds: list[int] = []
    search_from = evaluator.search.search_from

    def recording_search(root, mask, *args):
        batches.append(mask.shape[0])
        return search_from(root, mask, *args)

    evaluator.search.search_from = recording_search  # type: ignore[method-assign]
    for game in evaluator.envs._games:
        reset = game.reset

        def recording_reset(seed=None, _reset=reset):
            if seed is not None:
                seeds.append(seed)
            return _reset(seed)

        game.reset = recording_reset  # type: ignore[method-assign]
    return batches, seeds


@pytest.mark.parametrize(
    ("episodes", "bound", "width"),
    [(3, None, 3), (16, None, 16), (16, 3, 3), (16, 16, 16), (16, 32, 16), (1, None, 1)],
)
def test_batch_size_rule(episodes: int, bound: int | None, width: int) -> None:
    cfg = load_config(
        "configs/cartpole_muzero.yaml",
        [f"env.n_evaluator_episode={episodes}"]
        + ([] if bound is None else [f"env.evaluator_env_num={bound}"]),
    )
    assert eval_batch_size(cfg.env) == width


def test_episodes_are_searched_as_one_batch() -> None:
    evaluator = _evaluator(episodes=8)
    batches, seeds = _spy(evaluator)
    calls: list[tuple[int, int, int]] = []
    try:
        out = evaluator.evaluate(progress=lambda *args: calls.append(args))
    finally:
        evaluator.close()
    assert calls[-1] == (8, 8, out.envsteps)
    lengths = [int(r) for r in out.episode_returns]  # CartPole: +1 per step
    assert len(lengths) == 8
    # one search per step of the longest episode, not one per step of every episode
    assert len(batches) == max(lengths)
    assert batches[0] == 8
    # the batch shrinks as episodes end: at step t it holds the episodes longer than t
    assert batches == [sum(n > t for n in lengths) for t in range(max(lengths))]
    assert sum(batches) == out.envsteps == sum(lengths)
    base = evaluator.seed
    assert seeds == [base + k for k in range(8)]  # episode k seeded seed + k


def test_a_bound_plays_rounds_with_the_same_episodes() -> None:
    together = _evaluator(episodes=5)
    rounds = _evaluator(episodes=5, bound=2)
    batches, seeds = _spy(rounds)
    try:
        whole, split = together.evaluate(), rounds.evaluate()
    finally:
        together.close()
        rounds.close()
    assert batches[0] == 2 and max(batches) == 2
    base = rounds.seed
    # rounds of envs 0-1: episodes 0-1, 2-3, then 4 (env 1 idles, seeded but not scored)
    assert seeds == [base + k for k in range(6)]
    # episode k is the same game whichever round plays it
    assert split.episode_returns == whole.episode_returns
    assert split.envsteps == whole.envsteps


def test_evaluations_are_deterministic() -> None:
    evaluator = _evaluator(episodes=6)
    other = _evaluator(episodes=6)
    try:
        first, again, fresh = evaluator.evaluate(), evaluator.evaluate(), other.evaluate()
    finally:
        evaluator.close()
        other.close()
    assert first.episode_returns == again.episode_returns == fresh.episode_returns
    assert len(set(first.episode_returns)) > 1  # distinct seeds play distinct games
    assert np.isclose(first.reward_mean, np.mean(first.episode_returns))
