"""Third-party gymnasium envs by ``module:EnvId``: specs, frames, config errors, both pipelines."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.tiny import tiny_config
from zeropipe.config import ConfigError, EnvConfig
from zeropipe.envs import EnvBatch, EnvError, check_env_id, env_spec
from zeropipe.models.encoders import resolve_kind
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.sync import train_sync

MODULE = "tests.envs.third_party_env"
BITS = f"{MODULE}:ThirdParty/Bits-v0"
PIXELS = f"{MODULE}:ThirdParty/Pixels-v0"


def test_module_id_is_checked_like_any_id() -> None:
    check_env_id(BITS)


def test_missing_module_is_an_error_naming_it() -> None:
    with pytest.raises(EnvError, match=r"cannot import module 'no_such_pkg\.gym'"):
        check_env_id("no_such_pkg.gym:NoSuch/Env-v0")


def test_unregistered_name_in_an_imported_module_is_unknown() -> None:
    with pytest.raises(EnvError, match=r"unknown env id 'ThirdParty/Nope-v0'"):
        check_env_id(f"{MODULE}:ThirdParty/Nope-v0")


def test_bool_observations_become_float_vectors() -> None:
    spec = env_spec(EnvConfig(env_id=BITS))
    assert spec.frame_shape == (4,)
    assert spec.frame_dtype == np.float32
    assert resolve_kind(spec.frame_shape, "auto") == "mlp"
    batch = EnvBatch(EnvConfig(env_id=BITS), num_envs=2, mode="collect", seed=0)
    try:
        frames = batch.reset()[0]
        assert frames.dtype == np.float32 and frames.shape == (2, 4)
        assert set(np.unique(frames)) <= {0.0, 1.0}
    finally:
        batch.close()


def test_uint8_images_stay_uint8_and_become_channels_first() -> None:
    spec = env_spec(EnvConfig(env_id=PIXELS))
    assert spec.frame_shape == (2, 6, 6)
    assert spec.frame_dtype == np.uint8
    assert resolve_kind(spec.frame_shape, "auto") == "conv"
    batch = EnvBatch(EnvConfig(env_id=PIXELS), num_envs=3, mode="collect", seed=1)
    try:
        frames = batch.reset()[0]
        assert frames.dtype == np.uint8 and frames.shape == (3, 2, 6, 6)
        assert not frames[:, 1].any()  # channel 1 is always dark: the layout really moved
        for frame in frames:
            assert np.unique(frame[0]).size == 1  # channel 0 is one whole lit or dark plane
    finally:
        batch.close()


def test_cli_check_turns_a_missing_module_into_a_config_error(tmp_path) -> None:
    from zeropipe.cli.main import load_checked

    path = tmp_path / "c.yaml"
    path.write_text("exp_name: x\nenv:\n  env_id: 'no_such_pkg.gym:NoSuch/Env-v0'\n")
    with pytest.raises(ConfigError, match=r"no_such_pkg\.gym"):
        load_checked(str(path), [])


def _config(path):
    cfg = tiny_config(path, learner_num_threads=1)
    cfg.env.env_id = BITS
    cfg.max_env_step = 200
    return cfg


def _evals(run) -> list[dict]:
    lines = (run / "log" / "metrics.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "eval"]


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("no_leaks")
@pytest.mark.slow
def test_trains_sync(tmp_path) -> None:
    summary = train_sync(_config(tmp_path / "run"))
    assert summary.train_iter > 0
    assert _evals(tmp_path / "run")


@pytest.mark.timeout(180)
@pytest.mark.usefixtures("no_leaks")
@pytest.mark.slow
async def test_trains_async_with_worker_processes(tmp_path) -> None:
    summary = await train_async(_config(tmp_path / "run"), show_progress=False)
    assert summary.train_iter > 0
    assert _evals(tmp_path / "run")
