"""Config composition: `base:` names a config to lay a file's keys over; the result is flat."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from zeropipe.config import ConfigError, config_from_dict, dump_config, load_config
from zeropipe.config.compose import merge
from zeropipe.config.loader import read_yaml

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"


def test_the_475_config_resolves_to_the_full_copy_it_replaced():
    # the fixture is the mapping the file held before it named a base (captured from it, then)
    before = yaml.safe_load((FIXTURES / "cartpole_muzero_475_flat.yaml").read_text())
    assert read_yaml(ROOT / "configs" / "cartpole_muzero_475.yaml") == before
    resolved = dump_config(load_config(ROOT / "configs" / "cartpole_muzero_475.yaml"))
    assert resolved == dump_config(config_from_dict(before))
    assert "base" not in yaml.safe_load(resolved)


def test_the_475_config_writes_only_its_four_differences():
    own = yaml.safe_load((ROOT / "configs" / "cartpole_muzero_475.yaml").read_text())
    assert own == {
        "base": "cartpole_muzero.yaml",
        "exp_name": "runs/cartpole_muzero_475",
        "env": {"stop_value": 475},
        "policy": {"batch_size": 256, "eval_freq": 250},
    }


@pytest.mark.parametrize(
    ("under", "over", "merged"),
    [
        ({"a": 1}, {}, {"a": 1}),
        ({}, {"a": 1}, {"a": 1}),
        ({"a": 1, "b": 2}, {"a": 3}, {"a": 3, "b": 2}),
        ({"s": {"x": 1, "y": 2}}, {"s": {"y": 5}}, {"s": {"x": 1, "y": 5}}),
        ({"s": {"t": {"x": 1}}}, {"s": {"t": {"y": 2}}}, {"s": {"t": {"x": 1, "y": 2}}}),
        ({"l": [1, 2, 3]}, {"l": [9]}, {"l": [9]}),  # a list replaces, never appends
        ({"s": {"x": 1}}, {"s": 7}, {"s": 7}),  # a value replaces a section
        ({"s": 7}, {"s": {"x": 1}}, {"s": {"x": 1}}),
        ({"a": 1}, {"a": None}, {"a": None}),  # null is a value, not a deletion
    ],
)
def test_merge_lays_the_file_over_its_base(under, over, merged):
    before = yaml.safe_dump(under)
    assert merge(under, over) == merged
    assert yaml.safe_dump(under) == before  # the base's mapping is not changed


def test_a_chain_of_bases_resolves_relative_to_each_file(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "root.yaml").write_text("seed: 1\nenv: {env_id: CartPole-v1, stop_value: 10}\n")
    (tmp_path / "a" / "mid.yaml").write_text("base: ../root.yaml\nseed: 2\nmax_env_step: 5\n")
    (tmp_path / "b" / "top.yaml").write_text("base: ../a/mid.yaml\nenv: {stop_value: 20}\n")
    assert read_yaml(tmp_path / "b" / "top.yaml") == {
        "seed": 2,
        "max_env_step": 5,
        "env": {"env_id": "CartPole-v1", "stop_value": 20},
    }


def _error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        read_yaml(path)
    assert len(info.value.lines) == 1, info.value.lines
    return str(info.value)


def test_a_cycle_is_one_line_naming_the_chain(tmp_path: Path):
    (tmp_path / "x.yaml").write_text("base: y.yaml\nseed: 1\n")
    (tmp_path / "y.yaml").write_text("base: ./x.yaml\nseed: 2\n")
    message = _error(tmp_path / "x.yaml")
    assert message.startswith(f"{tmp_path / 'y.yaml'}: base ")
    assert "cycle" in message and message.count("x.yaml") == 3, message


def test_a_file_naming_itself_is_a_cycle(tmp_path: Path):
    (tmp_path / "self.yaml").write_text("base: self.yaml\n")
    assert "cycle" in _error(tmp_path / "self.yaml")


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("nope.yaml", "'nope.yaml' does not exist"),
        (".", "'.' is a directory"),
        ("3", "must be the file name"),
        ("[a.yaml]", "must be the file name"),
        ("''", "must be the file name"),
    ],
)
def test_a_bad_base_is_one_line_naming_the_file_that_names_it(tmp_path: Path, value, words):
    (tmp_path / "mid.yaml").write_text(f"base: {value}\n")
    (tmp_path / "top.yaml").write_text("base: mid.yaml\n")
    message = _error(tmp_path / "top.yaml")
    assert message.startswith(f"{tmp_path / 'mid.yaml'}: base ") and words in message, message


def test_a_bad_key_in_a_base_is_still_reported(tmp_path: Path):
    (tmp_path / "root.yaml").write_text("env: {env_id: CartPole-v1}\nsed: 1\n")
    (tmp_path / "top.yaml").write_text("base: root.yaml\nseed: 2\n")
    with pytest.raises(ConfigError, match="unknown key 'sed'"):
        load_config(tmp_path / "top.yaml")
