"""stochastic_muzero in both pipelines: the chance terms are learned, reanalysis included; on 2048
with the env's true chance labels; without labels, a config error."""

from __future__ import annotations

import json

import pytest

from tests.tiny import tiny_2048_config, tiny_config
from zeropipe.config import ConfigError
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


def true_label_config(path):
    cfg = tiny_2048_config(
        path,
        type="stochastic_muzero",
        stochastic={"chance_space_size": 32, "use_true_chance_label": True},
        reanalyze_ratio=0.5,
    )
    cfg.max_env_step = 160  # enough train lines to carry the chance terms, and a final eval
    return cfg


def test_true_chance_labels_train_sync(tmp_path):
    summary = train_sync(true_label_config(tmp_path / "run"))
    assert summary.train_iter > 0
    check_chance_terms_logged(tmp_path / "run")


async def test_true_chance_labels_train_async(tmp_path):
    summary = await train_async(true_label_config(tmp_path / "run"), show_progress=False)
    assert summary.train_iter > 0
    check_chance_terms_logged(tmp_path / "run")


def test_true_chance_labels_need_an_env_that_reports_them(tmp_path):
    cfg = tiny_config(
        tmp_path / "run",
        type="stochastic_muzero",
        stochastic={"chance_space_size": 3, "use_true_chance_label": True},
    )
    with pytest.raises(ConfigError, match="does not report info\\['chance'\\]"):
        train_sync(cfg)
