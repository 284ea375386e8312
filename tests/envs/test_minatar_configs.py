"""Every shipped MinAtar config trains: 500 env steps through the real CLI (in this process, so
that the configs share one import of torch and the kernels), the learner stepping and an eval
scored. The configs' sizes are cut (two envs, four simulations, batch 16) and training starts
after 100 env steps; everything else, the network and the type's options included, is the
shipped file's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from zeropipe.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted(p.name for p in (ROOT / "configs").glob("minatar_*.yaml"))
SMALL = {
    "max_env_step": 500,
    "env.collector_env_num": 2,
    "env.n_evaluator_episode": 1,
    "policy.num_simulations": 4,
    "policy.batch_size": 16,
    "policy.train_start_after_envsteps": 100,
    "policy.eval_freq": 10**6,  # the first weights' eval and the stop's
}


def test_five_types_have_a_config_for_each_minatar_game():
    games = {}
    for name in CONFIGS:
        raw = yaml.safe_load((ROOT / "configs" / name).read_text())
        games.setdefault(raw["env"]["env_id"], set()).add(raw["policy"]["type"])
    types = {"muzero", "efficientzero", "gumbel_muzero", "stochastic_muzero", "unizero"}
    assert games == {"MinAtar/Breakout-v1": types, "MinAtar/SpaceInvaders-v1": types}


@pytest.mark.timeout(300)
@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("name", CONFIGS)
def test_a_minatar_config_trains_500_env_steps(tmp_path: Path, name: str):
    run = tmp_path / "run"
    settings = [f"{key}={value}" for key, value in {**SMALL, "exp_name": run}.items()]
    argv = ["train", str(ROOT / "configs" / name), "--quiet"]
    assert main([*argv, *[w for s in settings for w in ("--set", s)]]) == 0
    lines = [json.loads(x) for x in (run / "log" / "metrics.jsonl").read_text().splitlines()]
    stop = lines[-1]
    assert stop["event"] == "stop" and stop["reason"] == "max_env_step"
    assert stop["envstep"] >= 500 and stop["train_iter"] > 0
    assert any(line["event"] == "eval" for line in lines)
