"""Atari observations frame by frame against the recorded trace of the per-game preprocessing.

Any change to Atari stepping (batching, vectorised preprocessing, another emulator binding) must
keep these digests: same seed and actions, same frames, rewards, episode ends and game returns.
`atari_trace.py` says what the cases cover and how to re-record them (only for an intended
change of semantics, said in the commit).
"""

from __future__ import annotations

import json

import pytest

from tests.envs.atari_trace import CASES, FIXTURE, trace

SLOW_CASES = {"pong_rgb_eval", "breakout_eval"}


def _first_difference(got: list[str], want: list[str]) -> int | None:
    return next((i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w), None)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_CASES else n for n in CASES],
)
def test_observations_match_recorded_trace(name: str) -> None:
    want = json.loads(FIXTURE.read_text())[name]
    got = trace(name)
    assert got["reset"] == want["reset"], "first observations differ"
    step = _first_difference(got["steps"], want["steps"])
    assert step is None, f"{name}: batch step {step} differs from the recorded trace"
    assert (got["episode_ends"], got["games_over"]) == (want["episode_ends"], want["games_over"])


def test_trace_covers_episode_ends_and_life_losses() -> None:
    recorded = json.loads(FIXTURE.read_text())
    # Short time limits end and re-start Pong episodes (noop resets) in both modes.
    assert recorded["pong_gray_collect"]["episode_ends"] >= 8
    assert recorded["pong_rgb_eval"]["episode_ends"] >= 3
    # Breakout in collect mode: lost lives end episodes before games end (episodic life).
    breakout = recorded["breakout_sticky_collect"]
    assert breakout["episode_ends"] > breakout["games_over"] > 0
