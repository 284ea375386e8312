"""A NaN observation or reward from an env stops at the step that produced it, with one line
naming the env id, the step and the field: in the env batch, and through the real CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.cli.test_cli import TINY, run_cli
from tests.envs import nan_env
from zeropipe.config import EnvConfig
from zeropipe.envs.batch import EnvBatch
from zeropipe.envs.spec import NonFiniteEnvOutput

HOOK = "tests.envs.nan_env:register_envs"
FIELDS = {"observation": nan_env.NAN_OBSERVATION_ID, "reward": nan_env.NAN_REWARD_ID}


@pytest.mark.parametrize("field", FIELDS)
def test_the_env_batch_names_the_env_the_step_and_the_field(field):
    env_id = FIELDS[field]
    with EnvBatch(EnvConfig(env_id=env_id, register_envs=HOOK), 2, "collect", 0) as batch:
        batch.reset()
        for _ in range(nan_env.NAN_AT_STEP - 1):
            batch.step(np.zeros(2, dtype=np.int64))
        with pytest.raises(NonFiniteEnvOutput) as info:
            batch.step(np.zeros(2, dtype=np.int64))
    message = str(info.value)
    assert f"env {env_id!r} (collect env 0) returned a non-finite {field}" in message
    assert f"at step {nan_env.NAN_AT_STEP} of its episode" in message
    assert "\n" not in message


@pytest.mark.timeout(300)
@pytest.mark.usefixtures("no_leaks")
@pytest.mark.parametrize("pipeline", [[], ["--async-pipeline"]], ids=["sync", "async"])
@pytest.mark.parametrize("field", FIELDS)
def test_a_non_finite_env_stops_the_run_with_one_line(tmp_path: Path, field, pipeline):
    tiny = TINY.format(exp="run").replace(
        "zeropipe/Chain-v0", f"{FIELDS[field]}, register_envs: {HOOK}"
    )
    (tmp_path / "tiny.yaml").write_text(tiny)
    proc = run_cli("train", "tiny.yaml", "--quiet", *pipeline, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert f"env {FIELDS[field]!r}" in last and f"non-finite {field}" in last, proc.stderr
    assert f"at step {nan_env.NAN_AT_STEP} of its episode" in last
    assert "Traceback" not in proc.stderr and "index -1" not in proc.stderr, proc.stderr
