"""muzero_context and muzero_rnn_full_obs in both pipelines; a weight load drops carried roots."""

from __future__ import annotations

import json

import pytest

from tests.tiny import tiny_config
from zeropipe.pipeline.build import build_collector

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("no_leaks")]

TYPES = {
    "muzero_context": {"context_length_init": 3},
    "muzero_rnn_full_obs": {"context_length_init": 3, "ssl_loss_weight": 2.0, "use_priority": True},
}


def _config(path, name):
    # one learner thread: on a shared 2-core machine, intra-op threads only wait
    return tiny_config(path, type=name, learner_num_threads=1, **TYPES[name])


def _events(run, kind: str) -> list[dict]:
    lines = (run / "log" / "metrics.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == kind]


@pytest.mark.parametrize("name", TYPES)
def test_a_weight_load_drops_every_carried_root(tmp_path, name):
    collector = build_collector(_config(tmp_path / "run", name))
    try:
        collector.collect(temperature=1.0, epsilon=0.0)
        assert any(latent is not None for latent in collector.roots.latents)
        state = {k: v + 0.01 for k, v in collector.search.network.state_dict().items()}
        collector.load_weights(state, version=1)
        assert all(latent is None for latent in collector.roots.latents)
    finally:
        collector.close()
