"""Every registered policy type trains and evaluates in both pipelines on the tiny config, with
reanalysis, and logs its own loss terms (one test for all types; what is particular to a type is
tested in its own files)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.tiny import tiny_config
from zeropipe.algos import registry
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.sync import train_sync

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.usefixtures("no_leaks")]

WORLD = {"embed_dim": 16, "num_layers": 1, "num_heads": 2, "context_steps": 3, "dropout": 0.0}
SAMPLED = {"num_of_sampled_actions": 2, "prior": "uniform"}
SMALL_LSTM = {"lstm_hidden_size": 8, "lstm_horizon_len": 2}

# Small settings of each type's own options, and the loss terms its `train` lines must carry.
TYPES: dict[str, tuple[dict, tuple[str, ...]]] = {
    "muzero": ({"ssl_loss_weight": 2.0}, ("reward_loss", "ssl_loss")),
    "muzero_context": ({"context_length_init": 3}, ("reward_loss",)),
    "muzero_rnn_full_obs": (
        {"context_length_init": 3, "ssl_loss_weight": 2.0, "use_priority": True},
        ("reward_loss", "ssl_loss"),
    ),
    "gumbel_muzero": ({"gumbel": {"max_num_considered_actions": 2}}, ("reward_loss",)),
    "efficientzero": ({"value_prefix": SMALL_LSTM}, ("value_prefix_loss", "ssl_loss")),
    "sampled_efficientzero": (
        {"value_prefix": SMALL_LSTM, "sampled": SAMPLED},
        ("value_prefix_loss", "ssl_loss"),
    ),
    "sampled_muzero": ({"sampled": SAMPLED}, ("reward_loss",)),
    "stochastic_muzero": (
        {"stochastic": {"chance_space_size": 3}},
        ("afterstate_policy_loss", "afterstate_value_loss", "commitment_loss"),
    ),
    "unizero": (
        {"model": {"norm_type": "LN", "world_model": WORLD}, "kv_cache_clear_interval": 7},
        ("latent_loss", "reward_loss"),
    ),
    "sampled_unizero": (
        {"model": {"norm_type": "LN", "world_model": WORLD}, "sampled": SAMPLED},
        ("latent_loss", "reward_loss"),
    ),
}


# Terms a type must not log (the value prefix replaces the per-step reward).
ABSENT = {"efficientzero": ("reward_loss",), "sampled_efficientzero": ("reward_loss",)}


def test_the_table_names_every_built_in_type():
    builtin = {name for name in registry.ALGORITHMS if ":" not in name}
    assert set(TYPES) == builtin


def _config(path, name: str):
    options, _ = TYPES[name]
    model = {**tiny_config(path).policy.model.model_dump(), **options.get("model", {})}
    if "world_model" in model:  # the MuZero family's projection sizes are not UniZero's
        model = {k: v for k, v in model.items() if not k.startswith(("proj_", "pred_"))}
    cfg = tiny_config(
        path,
        type=name,
        learner_num_threads=1,  # on a shared 2-core machine, intra-op threads only wait
        reanalyze_ratio=0.5,
        target_update_type="ema",
        **{**options, "model": model},
    )
    cfg.max_env_step = 160
    return cfg


def _check_run(run, name: str) -> None:
    lines = [json.loads(line) for line in (run / "log" / "metrics.jsonl").read_text().splitlines()]
    train = [e for e in lines if e["event"] == "train"]
    evals = [e for e in lines if e["event"] == "eval"]
    assert train and evals and all(np.isfinite(e["reward_mean"]) for e in evals)
    for term in TYPES[name][1]:
        assert all(term in e and np.isfinite(e[term]) for e in train), term
    for term in ABSENT.get(name, ()):
        assert not any(term in e for e in train), term


@pytest.mark.parametrize("name", sorted(TYPES))
def test_trains_and_evaluates_sync(tmp_path, name):
    summary = train_sync(_config(tmp_path / "run", name))
    assert summary.train_iter > 0
    _check_run(tmp_path / "run", name)


@pytest.mark.parametrize("name", sorted(TYPES))
async def test_trains_and_evaluates_async(tmp_path, name):
    summary = await train_async(_config(tmp_path / "run", name), show_progress=False)
    assert summary.train_iter > 0
    _check_run(tmp_path / "run", name)
