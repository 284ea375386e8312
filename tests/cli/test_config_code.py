"""No code from a config outside `train`: `env.register_envs: module:function` is called by
`zeropipe train` only; `zeropipe config` and `zeropipe eval` read the config as data. Through the
real CLI, with a function that leaves a marker file when called."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.marker_hook import MARKER
from tests.cli.test_cli import TINY, run_cli

pytestmark = pytest.mark.usefixtures("no_leaks")

HOOK = "tests.cli.marker_hook:leave_mark"


@pytest.mark.timeout(300)
def test_only_train_calls_register_envs(tmp_path: Path):
    tiny = TINY.format(exp="run").replace("240", "48")
    tiny = tiny.replace("zeropipe/Chain-v0", f"zeropipe/Chain-v0, register_envs: '{HOOK}'")
    (tmp_path / "tiny.yaml").write_text(tiny)
    marker = tmp_path / MARKER
    shown = run_cli("config", "tiny.yaml", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"register_envs: {HOOK}" in shown.stdout
    assert not marker.exists(), "zeropipe config called env.register_envs"
    trained = run_cli("train", "tiny.yaml", "--quiet", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    assert marker.exists(), "zeropipe train did not call env.register_envs"
    marker.unlink()
    scored = run_cli("eval", "run/ckpt/ckpt_best.pth.tar", "--episodes", "1", cwd=tmp_path)
    assert scored.returncode == 0, scored.stderr
    assert not marker.exists(), "zeropipe eval called env.register_envs"
    assert f"env.register_envs {HOOK!r} is not called" in scored.stderr
    asked = run_cli(
        "eval", "run/ckpt/ckpt_best.pth.tar", "--episodes", "1", "--register-envs", HOOK,
        cwd=tmp_path,
    )  # fmt: skip
    assert asked.returncode == 0, asked.stderr
    assert marker.exists(), "eval --register-envs did not call the function named"
    assert "is not called" not in asked.stderr
