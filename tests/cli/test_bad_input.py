"""Bad configuration input ends `zeropipe train` with exit 2 and one line naming the key, before
anything is written (the README's promise), through the real CLI entry point."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from zeropipe.cli.main import EXIT_CONFIG, main

GOOD = "env: {env_id: CartPole-v1}\npolicy: {batch_size: 8, replay_buffer_size: 100}\n"
MLP = GOOD.replace("batch_size: 8", "model: {kind: mlp}, batch_size: 8")
CONV = MLP.replace("CartPole-v1", "ALE/Pong-v5").replace("kind: mlp", "kind: conv")
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


# (case, the YAML file's text, --set overrides, a word the one line must hold)
CASES = [
    ("stop_value nan", GOOD, ["env.stop_value=.nan"], "env.stop_value"),
    ("stop_value inf", GOOD, ["env.stop_value=.inf"], "env.stop_value"),
    ("learning_rate inf", GOOD, ["policy.learning_rate=.inf"], "policy.learning_rate"),
    ("replay_ratio inf", GOOD, ["policy.replay_ratio=.inf"], "policy.replay_ratio"),
    ("1e9 simulations", GOOD, ["policy.num_simulations=1000000000"], "policy.num_simulations"),
    ("seed above 2^63", GOOD, [f"seed={2**63 + 5}"], "seed"),
    ("bogus device", GOOD, ["policy.device=bogus"], "policy.device"),
    ("type as a list", GOOD, ["policy.type=[muzero]"], "policy.type"),
    ("duplicate policy key", GOOD + "policy: {td_steps: 3}\n", [], "duplicate key 'policy'"),
    ("unknown key", GOOD, ["policy.batch_sise=3"], "did you mean 'batch_size'"),
    ("LightZero key", GOOD, ["policy.cuda=true"], "policy.device: cuda"),
    # a config moved to another env keeps a model kind written for its own observations
    ("mlp on Breakout frames", MLP, ["env.env_id=ALE/Breakout-v5"], "policy.model.kind=conv"),
    ("conv on CartPole", CONV, ["env.env_id=CartPole-v1"], "policy.model.kind=mlp"),
]


def _run(tmp_path: Path, text: str | bytes, overrides: list[str], capsys) -> tuple[int, str]:
    config = tmp_path / "c.yaml"
    if isinstance(text, bytes):
        config.write_bytes(text)
    else:
        config.write_text(text)
    sets = [item for o in overrides for item in ("--set", o)]
    code = main(["train", str(config), "--quiet", "--set", f"exp_name={tmp_path / 'run'}", *sets])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "overrides", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_one_line_exit_2_and_nothing_written(
    tmp_path, capsys, text, overrides, needle
):
    code, err = _run(tmp_path, text, overrides, capsys)
    assert code == EXIT_CONFIG
    assert err.count("\n") == 1 and needle in err and len(err) < 400, err
    assert not (tmp_path / "run").exists()


def test_nested_aliases_give_short_lines(tmp_path, capsys):
    # the anchors' keys a..i are unknown keys too: one short line each, and one for the seed
    code, err = _run(tmp_path, GOOD + ALIAS_BOMB + "seed: *i\n", [], capsys)
    lines = err.splitlines()
    assert code == EXIT_CONFIG and len(lines) == 10, err
    assert all(len(line) < 400 for line in lines) and "seed" in lines[0], err
    assert not (tmp_path / "run").exists()


def test_a_binary_file_is_one_line(tmp_path, capsys):
    code, err = _run(tmp_path, bytes(range(256)) * 4, [], capsys)
    assert code == EXIT_CONFIG and err.count("\n") == 1 and "not a YAML text file" in err


def test_an_exp_name_that_cannot_be_created_is_one_line(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(GOOD)
    code = main(["train", str(config), "--quiet", "--set", "exp_name=/proc/zeropipe/run"])
    err = capsys.readouterr().err
    assert code == EXIT_CONFIG and err.count("\n") == 1 and "exp_name" in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_cuda_without_a_gpu_is_one_line(tmp_path, capsys):
    code, err = _run(tmp_path, GOOD, ["policy.device=cuda"], capsys)
    assert code == EXIT_CONFIG and err.count("\n") == 1 and "policy.device" in err
    assert not (tmp_path / "run").exists()


def test_wandb_without_the_package_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` raises ImportError
    config = tmp_path / "c.yaml"
    config.write_text(GOOD)
    code = main(["train", str(config), "--quiet", "--wandb", "--set", f"exp_name={tmp_path / 'r'}"])
    err = capsys.readouterr().err
    assert code == EXIT_CONFIG and err.count("\n") == 1 and 'pip install -e ".[wandb]"' in err
    assert not (tmp_path / "r").exists()
