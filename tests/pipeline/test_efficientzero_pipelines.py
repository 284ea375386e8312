"""EfficientZero in both pipelines on the tiny config, reanalysis searching the packed state."""

from __future__ import annotations

import json

import pytest

from tests.tiny import tiny_config
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.sync import train_sync

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.usefixtures("no_leaks")]


def efficientzero_config(path):
    cfg = tiny_config(
        path,
        type="efficientzero",
        value_prefix={"lstm_hidden_size": 8, "lstm_horizon_len": 2},
        reanalyze_ratio=0.5,
        eval_freq=50,
    )
    cfg.max_env_step = 160
    return cfg


def check_value_prefix_trained(run) -> None:
    lines = (run / "log" / "metrics.jsonl").read_text().splitlines()
    train = [e for e in map(json.loads, lines) if e["event"] == "train"]
    assert train and all("value_prefix_loss" in e and "ssl_loss" in e for e in train)
    assert not any("reward_loss" in e for e in train)


def test_efficientzero_trains_in_the_sync_pipeline(tmp_path):
    summary = train_sync(efficientzero_config(tmp_path / "run"))
    assert summary.train_iter > 0
    check_value_prefix_trained(tmp_path / "run")


async def test_efficientzero_trains_in_the_async_pipeline(tmp_path):
    summary = await train_async(efficientzero_config(tmp_path / "run"), show_progress=False)
    assert summary.train_iter > 0
    check_value_prefix_trained(tmp_path / "run")
