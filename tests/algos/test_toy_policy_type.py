"""A policy type of one's own, declared in this file alone: its config section, its family and
its registry entry. No file under src/ names it; both pipelines train it, the async one in
worker processes that learn of it only from the config (`policy.type` is `module:name`)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Literal

import pytest
import torch
from pydantic import Field

from tests.tiny import tiny_config
from zeropipe.algos import registry
from zeropipe.algos.algorithm import Algorithm
from zeropipe.algos.muzero import MuZeroFamily, MuZeroFamilyConfig
from zeropipe.config import ConfigError, config_from_dict, dump_config
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.sync import train_sync

TOY = f"{__name__}:toy"


class ToyConfig(MuZeroFamilyConfig):
    """The toy type's section: MuZero's options plus one of its own."""

    type: Literal[TOY] = Field(TOY, description="The toy policy type.")  # type: ignore[valid-type]
    toy_loss_scale: float = Field(0.5, gt=0.0, description="Scales the whole MuZero loss.")


class ToyFamily(MuZeroFamily):
    """MuZero whose loss is scaled by the toy option, logged as a term of its own."""

    def loss(self, net, target_net, inputs, cfg: ToyConfig, train_iter: int):
        out = super().loss(net, target_net, inputs, cfg, train_iter)
        terms = {**out.terms, "toy_loss_scale": torch.tensor(cfg.toy_loss_scale)}
        return replace(out, per_sample=out.per_sample * cfg.toy_loss_scale, terms=terms)


if TOY not in registry.ALGORITHMS:  # this module is imported again by each worker process
    registry.register(Algorithm(ToyConfig, ToyFamily(), "puct"))


def _config(path):
    cfg = tiny_config(path, type=TOY, toy_loss_scale=0.25, learner_num_threads=1)
    cfg.max_env_step = 200
    return cfg


def _train_lines(run) -> list[dict]:
    lines = (run / "log" / "metrics.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "train"]


def test_the_section_holds_only_what_the_type_reads(tmp_path):
    cfg = _config(tmp_path)
    assert isinstance(cfg.policy, ToyConfig) and cfg.policy.toy_loss_scale == 0.25
    assert "toy_loss_scale: 0.25" in dump_config(cfg)
    assert "gumbel" not in dump_config(cfg)
    raw = cfg.model_dump(mode="json")
    raw["policy"]["toy_loss_scale"] = -1.0
    with pytest.raises(ConfigError, match=r"policy\.toy_loss_scale"):
        config_from_dict(raw)
    raw["policy"]["toy_loss_scale"] = 1.0
    raw["policy"]["kv_cache_clear_interval"] = 7
    with pytest.raises(ConfigError, match=r"kv_cache_clear_interval is an option of .*unizero"):
        config_from_dict(raw)


@pytest.mark.timeout(300)
@pytest.mark.usefixtures("no_leaks")
def test_the_toy_type_trains_sync(tmp_path):
    summary = train_sync(_config(tmp_path / "run"))
    assert summary.envstep >= 200 and summary.train_iter > 0
    train = _train_lines(tmp_path / "run")
    assert train and all(e["toy_loss_scale"] == 0.25 for e in train)


@pytest.mark.slow  # the fast path: it trains sync; other types train async there
@pytest.mark.timeout(300)
@pytest.mark.usefixtures("no_leaks")
async def test_the_toy_type_trains_async(tmp_path):
    summary = await train_async(_config(tmp_path / "run"), show_progress=False)
    assert summary.envstep >= 200 and summary.train_iter > 0
    train = _train_lines(tmp_path / "run")
    assert train and all(e["toy_loss_scale"] == 0.25 for e in train)
