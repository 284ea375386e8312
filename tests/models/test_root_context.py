"""RootContexts' cache clocks: which (observation, action) context each root sees.

Each test drives the contexts as a worker does (roots, then `tick` with the envs that stepped,
then the resets of ended envs) and states by hand, per clock, which observations every root's
window holds; a root must equal a cache-free recomputation over exactly those.
"""

from __future__ import annotations

import pytest
import torch

from tests.models.test_world_model import ACTIONS, _assert_root_matches, _network, _root_reference
from zeropipe.models import RootContexts, UniZeroNetwork

INTERVAL = 3  # kv_cache_clear_interval; the window holds CONTEXT_STEPS = 4 observations
STEPS = 8
OBS = torch.randn(2, STEPS, 4, generator=torch.Generator().manual_seed(3))  # [env, step, obs]


def _action(env: int, step: int) -> int:
    """The action env `env` takes after its observation of batch step `step`."""
    return (step + 2 * env) % ACTIONS


def _check_roots(
    net: UniZeroNetwork, contexts: RootContexts, step: int, starts: set[int], expected
) -> None:
    """Roots of batch step `step` for the envs in `expected` ({env: the steps whose
    observations its window holds}); the envs in `starts` begin an episode."""
    env_ids = sorted(expected)
    prev = [-1 if env in starts else _action(env, step - 1) for env in env_ids]
    out = contexts.root(OBS[env_ids, step], env_ids, prev)
    for row, env in enumerate(env_ids):
        steps = expected[env]
        obs = [OBS[env, k] for k in steps]
        actions = [-1] + [_action(env, k - 1) for k in steps[1:]]
        _assert_root_matches(out, row, _root_reference(net, obs, actions))


# Collect: both envs step every batch step. Env 1's episodes end after batch steps 0 and 3 (its
# 3rd step: a multiple); env 0's steps reach 3 and 6 after batch steps 2 and 5.
COLLECT_STARTS = {0: {0, 1}, 1: {1}, 4: {1}}  # batch step -> envs starting an episode
COLLECT_ENDS = {0: 1, 3: 1}  # batch step -> the env whose episode ends on it
COLLECT_CONTEXTS = {
    # one clear of every env after batch steps 2 (env 0 at 3), 3 (env 1 at 3, its episode's last
    # step), 5 (env 0 at 6) and 6 (env 1 at 3): each env then keeps its newest observation
    "episode_step": (
        [[0], [0, 1], [0, 1, 2], [2, 3], [3, 4], [3, 4, 5], [5, 6], [6, 7]],
        [[0], [1], [1, 2], [2, 3], [4], [4, 5], [5, 6], [6, 7]],
    ),
    # windows dropped after batch steps 2 and 5, contexts kept: the last 4 observations
    "since_invalidation": (
        [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6],
         [4, 5, 6, 7]],
        [[0], [1], [1, 2], [1, 2, 3], [4], [4, 5], [4, 5, 6], [4, 5, 6, 7]],
    ),
}  # fmt: skip


@pytest.mark.parametrize("clock", ["episode_step", "since_invalidation"])
@torch.no_grad()
def test_collect_roots_see_the_contexts_of_the_clock(clock) -> None:
    net = _network()
    contexts = net.new_root_contexts(2, INTERVAL, clock)
    env0, env1 = COLLECT_CONTEXTS[clock]
    for step in range(STEPS):
        expected = {0: env0[step], 1: env1[step]}
        _check_roots(net, contexts, step, COLLECT_STARTS.get(step, set()), expected)
        contexts.tick([0, 1])  # as Collector._step: every env stepped, then the ended reset
        if step in COLLECT_ENDS:
            contexts.reset(COLLECT_ENDS[step])


# Eval: both envs start together; env 1's episode ends after batch step 1 and it idles (no roots,
# no steps counted) while env 0 plays on.
EVAL_CONTEXTS = {
    # env 0's steps reach 3 and 6 after batch steps 2 and 5
    "episode_step": [[0], [0, 1], [0, 1, 2], [2, 3], [2, 3, 4], [2, 3, 4, 5], [5, 6], [5, 6, 7]],
    "since_invalidation": [
        [0], [0, 1], [0, 1, 2], [0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6],
        [4, 5, 6, 7],
    ],
}  # fmt: skip


@pytest.mark.parametrize("clock", ["episode_step", "since_invalidation"])
@torch.no_grad()
def test_eval_roots_see_the_contexts_of_the_clock(clock) -> None:
    net = _network()
    contexts = net.new_root_contexts(2, INTERVAL, clock)
    contexts.reset(0), contexts.reset(1)  # as Evaluator._play_round
    for step in range(STEPS):
        live = [0, 1] if step < 2 else [0]
        expected = {0: EVAL_CONTEXTS[clock][step]}
        if step < 2:
            expected[1] = [[0], [0, 1]][step]
        _check_roots(net, contexts, step, {0, 1} if step == 0 else set(), expected)
        contexts.tick(live)


# One env; new weights after batch step 1 (a collector's weight load between two collects).
WEIGHT_LOAD_CONTEXTS = {
    # the load keeps only o_1 and restarts the count: 3 steps after batch step 4
    "episode_step": [[0], [0, 1], [1, 2], [1, 2, 3], [1, 2, 3, 4], [4, 5]],
    # the load drops keys/values only and restarts the clock: windows dropped after step 4
    "since_invalidation": [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5]],
}


@pytest.mark.parametrize("clock", ["episode_step", "since_invalidation"])
@torch.no_grad()
def test_a_weight_load_drops_the_context_by_the_clock(clock) -> None:
    net = _network()
    contexts = net.new_root_contexts(1, INTERVAL, clock)
    for step in range(6):
        if step == 2:
            contexts.invalidate()
        expected = {0: WEIGHT_LOAD_CONTEXTS[clock][step]}
        _check_roots(net, contexts, step, {0} if step == 0 else set(), expected)
        contexts.tick([0])


@torch.no_grad()
def test_a_resumed_episode_step_clock_keeps_each_envs_count() -> None:
    net = _network()
    contexts = net.new_root_contexts(1, INTERVAL, "episode_step")
    _check_roots(net, contexts, 0, {0}, {0: [0]})
    contexts.tick([0])
    _check_roots(net, contexts, 1, set(), {0: [0, 1]})
    contexts.tick([0])
    resumed = net.new_root_contexts(1, INTERVAL, "episode_step")
    resumed.load_state_dict(contexts.state_dict())
    _check_roots(net, resumed, 2, set(), {0: [0, 1, 2]})
    resumed.tick([0])  # the 3rd step of the episode, counted across the resume: a clear
    _check_roots(net, resumed, 3, set(), {0: [2, 3]})
