"""The collector stores the env's chance outcomes (2048's spawns) with the segments it emits, when
the learner reads them (`use_true_chance_label`)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.tiny import tiny_2048_config, tiny_config
from zeropipe.envs.board2048 import decode_chance
from zeropipe.pipeline.build import build_collector

pytestmark = pytest.mark.timeout(120)


def _true_labels_config(exp_name):
    return tiny_2048_config(
        exp_name,
        type="stochastic_muzero",
        stochastic={"chance_space_size": 32, "use_true_chance_label": True},
    )


def _one_collect(cfg):
    """The segments of one collect of a fresh collector."""
    collector = build_collector(cfg)
    try:
        return collector.collect(temperature=1.0, epsilon=0.0).segments
    finally:
        collector.close()


def test_2048_segments_carry_the_spawn_of_every_step(tmp_path):
    segments = _one_collect(_true_labels_config(tmp_path / "run"))
    assert segments
    s = segments[0].frame_stack
    for seg in segments:
        labels = seg.chance_labels
        assert labels is not None and labels.shape == (seg.num_stored,)
        for t, code in enumerate(labels.tolist()):
            cell, exponent = decode_chance(code)
            after = seg.obs[t + s]  # [16, 4, 4] exponent planes after action t
            assert after[exponent].reshape(-1)[cell] == 1.0, (seg.episode_id, t, code)
    every = np.concatenate([seg.chance_labels for seg in segments])
    assert len(np.unique(every)) > 8  # spawns land on many cells


def test_segments_of_an_env_without_chance_have_no_labels(tmp_path):
    segments = _one_collect(tiny_config(tmp_path / "run"))
    assert segments and all(seg.chance_labels is None for seg in segments)


@pytest.mark.parametrize("policy", [{}, {"type": "stochastic_muzero"}])
def test_2048_segments_have_no_labels_when_the_learner_does_not_read_them(tmp_path, policy):
    segments = _one_collect(tiny_2048_config(tmp_path / "run", **policy))
    assert segments and all(seg.chance_labels is None for seg in segments)
