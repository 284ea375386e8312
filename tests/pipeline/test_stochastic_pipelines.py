"""stochastic_muzero in both pipelines: the chance terms are learned, reanalysis included."""

from __future__ import annotations

import json

import pytest

from tests.tiny import tiny_config
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.sync import train_sync

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("no_leaks")]

CHANCE_TERMS = ("afterstate_policy_loss", "afterstate_value_loss", "commitment_loss")


def stochastic_config(path):
    return tiny_config(
        path, type="stochastic_muzero", stochastic={"chance_space_size": 3}, reanalyze_ratio=0.5
    )


def check_chance_terms_logged(run) -> None:
    lines = (run / "log" / "metrics.jsonl").read_text().splitlines()
    train = [e for e in map(json.loads, lines) if e["event"] == "train"]
    assert train
    for name in CHANCE_TERMS:
        assert all(name in e for e in train), name
    assert any(e["afterstate_value_loss"] > 0 for e in train)


def test_stochastic_muzero_trains_sync(tmp_path):
    summary = train_sync(stochastic_config(tmp_path / "run"))
    assert summary.train_iter > 0
    check_chance_terms_logged(tmp_path / "run")


async def test_stochastic_muzero_trains_async(tmp_path):
    summary = await train_async(stochastic_config(tmp_path / "run"), show_progress=False)
    assert summary.train_iter > 0
    check_chance_terms_logged(tmp_path / "run")
