"""`env.register_envs`: a package that registers its gymnasium ids only when asked, named by
'module:function', called once per process before envs are made; clear errors otherwise."""

from __future__ import annotations

import gymnasium as gym
import pytest

from tests.envs import lazy_env
from tests.tiny import tiny_config
from zeropipe.config import ConfigError, EnvConfig, config_from_dict
from zeropipe.envs import EnvBatch, EnvError, env_spec
from zeropipe.pipeline.sync import train_sync

HOOK = "tests.envs.lazy_env:register_envs"


def test_an_id_registered_only_when_asked_is_unknown_without_the_hook():
    if lazy_env.LAZY_ID in gym.registry:
        pytest.skip("registered by an earlier test in this process")
    with pytest.raises(EnvError, match=r"unknown env id 'Lazy/Bits-v0'.*env\.register"):
        env_spec(EnvConfig(env_id=lazy_env.LAZY_ID))


def test_the_hook_registers_it_once_per_process_and_the_env_plays():
    spec = env_spec(EnvConfig(env_id=lazy_env.LAZY_ID, register_envs=HOOK))
    assert spec.frame_shape == (4,) and spec.action_space_size == 2
    before = lazy_env.calls
    batch = EnvBatch(EnvConfig(env_id=lazy_env.LAZY_ID, register_envs=HOOK), 2, "collect", 0)
    batch.close()
    assert lazy_env.calls == before == 1  # called once, however many envs are made


def test_a_run_trains_on_it(tmp_path):
    cfg = tiny_config(tmp_path / "run")
    cfg.env.env_id, cfg.env.register_envs = lazy_env.LAZY_ID, HOOK
    cfg.max_env_step = 48
    assert train_sync(cfg, show_progress=False).stop_reason == "max_env_step"


@pytest.mark.parametrize(
    ("hook", "needle"),
    [
        ("no_such_pkg.gym:register_envs", r"cannot import 'no_such_pkg\.gym'"),
        ("tests.envs.lazy_env:nothing_here", r"has no function 'nothing_here'"),
        ("tests.envs.lazy_env:broken", r"failed: RuntimeError: no ROMs found"),
    ],
)
def test_a_bad_hook_is_an_error_naming_it(hook, needle):
    with pytest.raises(EnvError, match=needle):
        env_spec(EnvConfig(env_id="CartPole-v1", register_envs=hook))


def test_a_hook_that_is_not_module_colon_function_is_a_config_error():
    with pytest.raises(ConfigError, match="register_envs"):
        config_from_dict({"env": {"env_id": "CartPole-v1", "register_envs": "minatar.gym"}})
