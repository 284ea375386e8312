"""Reading a LightZero config file as data: literals, bound names and arithmetic are evaluated;
nothing is imported or called, and what cannot be read is named by its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from zeropipe.config import ConfigError
from zeropipe.config.lightzero_source import Unread, read_lightzero


def _read(tmp_path: Path, text: str):
    path = tmp_path / "lz_config.py"
    path.write_text(text)
    return read_lightzero(path)


def test_literals_names_arithmetic_and_easydict_are_read(tmp_path: Path):
    source = _read(
        tmp_path,
        "from easydict import EasyDict\n"
        "n = 8\n"
        "size = int(1e6)\n"
        "main_config = EasyDict(dict(exp_name=f'data/x_n{n}_{0.25}', env=dict(n=n, m=max(n, 3)),\n"
        "    policy={'a': 2 * 4, 'b': -size // 2, 'c': (4, 64, 64), 'd': 1e-4, 'e': None,\n"
        "            'f': 'PongNoFrameskip-v4'[:-14], 'g': 2 ** 3, 'h': not True}))\n"
        "main_config.exp_name = main_config.exp_name + '_seed0'\n"
        "create_config = dict(policy=dict(type='muzero'))\n"
        "if __name__ == '__main__':\n"
        "    train_muzero([main_config, create_config], seed=3, max_env_step=int(2e5))\n",
    )
    assert source.main == {
        "exp_name": "data/x_n8_0.25_seed0",
        "env": {"n": 8, "m": 8},
        "policy": {
            "a": 8,
            "b": -500000,
            "c": (4, 64, 64),
            "d": 1e-4,
            "e": None,
            "f": "Pong",
            "g": 8,
            "h": False,
        },
    }
    assert source.create == {"policy": {"type": "muzero"}}
    assert source.entry == {"seed": 3, "max_env_step": 200000}
    assert source.entry_lines == {"seed": 10, "max_env_step": 10}


def test_nothing_is_run(tmp_path: Path):
    marker = tmp_path / "ran"
    source = _read(
        tmp_path,
        "import os\n"
        f"os.system('touch {marker}')\n"
        f"x = open('{marker}', 'w')\n"
        f"main_config = dict(a=__import__('os').system('touch {marker}'), b=x, c=1)\n",
    )
    assert not marker.exists()
    assert source.main["c"] == 1
    assert isinstance(source.main["a"], Unread) and source.main["a"].line == 4
    assert "call of \"__import__('os').system\"" in source.main["a"].why
    assert isinstance(source.main["b"], Unread) and "open" in source.main["b"].why


def test_a_name_bound_by_an_import_or_an_if_is_unread_with_its_line(tmp_path: Path):
    source = _read(
        tmp_path,
        "from zoo.maps import table\n"
        "size = table['Pong']\n"
        "if True:\n"
        "    device = 'cuda'\n"
        "main_config = dict(a=size, b=device, c=undefined_name)\n",
    )
    a, b, c = (source.main[k] for k in "abc")
    assert isinstance(a, Unread) and "imported at line 1" in a.why
    assert isinstance(b, Unread) and "statement at line 3" in b.why
    assert isinstance(c, Unread) and c.line == 5 and "'undefined_name' is not bound" in c.why


def test_a_config_built_in_a_function_reads_its_parameter_defaults(tmp_path: Path):
    source = _read(
        tmp_path,
        "def main(env_id='PongNoFrameskip-v4', seed=0):\n"
        "    k = 10\n"
        "    main_config = dict(env=dict(env_id=env_id), policy=dict(k=k))\n"
        "    main_config.exp_name = f'x/{env_id[:-14]}_seed{seed}'\n"
        "    create_config = dict(policy=dict(type='unizero'))\n"
        "    train_unizero([main_config, create_config], seed=seed, max_env_step=int(5e5))\n",
    )
    assert source.main == {
        "env": {"env_id": "PongNoFrameskip-v4"},
        "policy": {"k": 10},
        "exp_name": "x/Pong_seed0",
    }
    assert source.entry == {"seed": 0, "max_env_step": 500000}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("x = 1\n", "no main_config"),
        ("main_config = 3\n", "main_config is not a dict"),
        ("main_config = load()\n", ":1: main_config is not a dict"),
        ("main_config = dict(\n", "not a Python file"),
        ("main_config = {}\ncreate_config = make()\n", ":2: create_config cannot be read"),
    ],
)
def test_a_file_without_a_readable_main_config_is_one_line(tmp_path: Path, text, words):
    with pytest.raises(ConfigError) as info:
        _read(tmp_path, text)
    assert len(info.value.lines) == 1 and words in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("expr", "why"),
    [
        ("2 ** 1000", "too large"),
        ("'a' * 100000", "longer than 10000"),
        ("[0] * 10000 * 10000", "longer than 10000"),
        ("((10 ** 64) ** 64) ** 64", "too large"),
        ("f'{1:>999999999}'", "width too large"),
        ("dict(5)", "dict(...) failed"),
        ("1 / 0", "ZeroDivisionError"),
        ("[i for i in range(3)]", "ListComp"),
        ("lambda: 1", "Lambda"),
        ("dict(**other)", "**argument"),
    ],
)
def test_expressions_outside_the_literal_subset_are_unread(tmp_path: Path, expr, why):
    source = _read(tmp_path, f"other = {{}}\nmain_config = dict(a={expr})\n")
    value = source.main["a"]
    assert isinstance(value, Unread) and value.line == 2 and why in value.why, value
