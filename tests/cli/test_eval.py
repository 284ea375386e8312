"""`zeropipe eval`: a checkpoint of a real tiny CartPole run, scored by the real CLI."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest
import torch

from tests.cli.test_cli import TINY, run_cli
from tests.crafted import write_crafted_checkpoint
from zeropipe.cli.main import main
from zeropipe.outputs.checkpoint_format import read_checkpoint

CARTPOLE = (
    TINY.replace("env_id: zeropipe/Chain-v0", "env_id: CartPole-v1")
    .replace("max_env_step: 240", "max_env_step: 48")
    .replace("eval_freq: 20", "eval_freq: 4")
)


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished tiny CartPole run (a few evals, hence a ckpt_best)."""
    root = tmp_path_factory.mktemp("eval")
    config = root / "cartpole.yaml"
    config.write_text(CARTPOLE.format(exp="run"))
    proc = run_cli("train", str(config), "--quiet", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return root / "run"


def best_eval(run: Path) -> dict:
    """The eval line whose weights ckpt_best holds: the first one with the highest mean."""
    lines = (run / "log" / "metrics.jsonl").read_text().splitlines()
    evals = [e for e in map(json.loads, lines) if e["event"] == "eval"]
    assert evals
    return max(evals, key=lambda e: e["reward_mean"])  # max keeps the first of equals


def printed_returns(stdout: str) -> list[float]:
    line = next(line for line in stdout.splitlines() if line.startswith("returns "))
    return [float(value) for value in line.split()[1:]]


@pytest.mark.timeout(300)
def test_eval_reproduces_the_recorded_best(cartpole_run: Path, no_leaks: None):
    best = best_eval(cartpole_run)
    proc = run_cli("eval", str(cartpole_run / "ckpt" / "ckpt_best.pth.tar"), cwd=cartpole_run)
    assert proc.returncode == 0, proc.stderr
    mean = float(re.search(r"mean (\S+)", proc.stdout).group(1))
    assert mean == pytest.approx(best["reward_mean"])
    assert printed_returns(proc.stdout) == best["episode_returns"]
    assert "(eval seed 100000)" in proc.stdout  # the run's seed 0 + EVAL_SEED_OFFSET


@pytest.mark.timeout(300)
def test_episodes_seed_and_latest_checkpoint(cartpole_run: Path, capsys: pytest.CaptureFixture):
    ckpt = cartpole_run / "ckpt" / "ckpt_latest.pth.tar"
    assert main(["eval", str(ckpt), "--episodes", "3", "--seed", "7"]) == 0
    out = capsys.readouterr().out
    assert "episodes 3 " in out and "(eval seed 100007)" in out
    assert len(printed_returns(out)) == 3


@pytest.mark.timeout(300)
@pytest.mark.parametrize("suffix", [".mp4", ".gif"])
def test_video_decodes(
    cartpole_run: Path, tmp_path: Path, suffix: str, capsys: pytest.CaptureFixture
):
    video = tmp_path / f"episode{suffix}"
    ckpt = cartpole_run / "ckpt" / "ckpt_best.pth.tar"
    assert main(["eval", str(ckpt), "--episodes", "1", "--video", str(video)]) == 0
    out = capsys.readouterr().out
    episode_return = float(re.search(r"\(return (\S+)\)", out).group(1))
    assert episode_return == printed_returns(out)[0]  # the video shows the scored episode
    frames = iio.imread(video, index=None)  # [F, H, W, 3]
    # CartPole pays 1 per step: the start frame plus one frame per step.
    assert frames.shape[0] == episode_return + 1 > 1
    assert frames.shape[-1] == 3 and frames.std() > 0


def test_missing_checkpoint_is_a_clear_error(tmp_path: Path):
    proc = run_cli("eval", str(tmp_path / "ckpt" / "ckpt_best.pth.tar"), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("zeropipe eval: no config at")


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--video", "x.mp4"], "cannot render 'rgb_array' frames"),
        ([], "do not fit the network of this config"),
        (["--set", "policy.batch_sise=3"], "batch_sise"),
    ],
)
def test_bad_eval_input_exits_2(
    cartpole_run: Path,
    tmp_path: Path,
    extra: list[str],
    needle: str,
    capsys: pytest.CaptureFixture,
):
    chain = tmp_path / "chain.yaml"
    chain.write_text(TINY.format(exp=tmp_path / "chain"))
    ckpt = tmp_path / "copy.pth.tar"
    shutil.copy(cartpole_run / "ckpt" / "ckpt_best.pth.tar", ckpt)
    assert main(["eval", str(ckpt), "--config", str(chain), *extra]) == 2
    assert needle in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "x.mp4").exists()


def test_file_without_weights_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture):
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "config.yaml").write_text(TINY.format(exp=tmp_path))
    torch.save({"envstep": 3}, tmp_path / "ckpt" / "other.pth.tar")
    assert main(["eval", str(tmp_path / "ckpt" / "other.pth.tar")]) == 2
    assert "holds no network weights" in capsys.readouterr().err


@pytest.mark.timeout(120)
def test_eval_refuses_a_crafted_checkpoint_without_running_it(tmp_path: Path):
    """A shared ckpt_best that runs code when unpickled (here: creates a file)."""
    (tmp_path / "config.yaml").write_text(TINY.format(exp=tmp_path))
    ckpt, marker = tmp_path / "ckpt" / "ckpt_best.pth.tar", tmp_path / "marker"
    write_crafted_checkpoint(ckpt, marker)
    proc = run_cli("eval", str(ckpt), cwd=tmp_path)
    assert not marker.exists()
    assert proc.returncode == 2, proc.stderr
    # the config here is hand-written, not a run's dump: eval notes the options it predates
    (line,) = [x for x in proc.stderr.strip().splitlines() if not x.startswith("eval: ")]
    assert line == (
        f"zeropipe eval: {ckpt} was refused: loading it would call io.open; a checkpoint holds "
        "only tensors and plain data, and a file that needs more could run any code, so it is "
        "never loaded"
    )


@pytest.mark.timeout(300)
def test_eval_reads_a_checkpoint_written_by_an_earlier_version(
    cartpole_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture
):
    """Earlier versions pickled the numpy arrays of ckpt_latest as such (weights_only=False)."""
    old = tmp_path / "ckpt_latest.pth.tar"
    torch.save(read_checkpoint(cartpole_run / "ckpt" / "ckpt_latest.pth.tar"), old)
    config = str(cartpole_run / "config.yaml")
    assert main(["eval", str(old), "--config", config, "--episodes", "1"]) == 0
    assert "episodes 1 " in capsys.readouterr().out


@pytest.mark.timeout(300)
def test_eval_gives_an_older_runs_config_the_behaviour_it_trained_with(
    cartpole_run: Path, tmp_path: Path
):
    """A run dir written before an option existed (its config.yaml lacks the key) is scored with
    the behaviour it trained with (config/versions.py's migration), as --resume does."""
    import yaml

    old = tmp_path / "old_run"
    shutil.copytree(cartpole_run, old)
    saved = yaml.safe_load((old / "config.yaml").read_text())
    assert saved["policy"].pop("loss_weighting") == "reference"  # a run written now says so
    assert saved.pop("config_version") == 2  # and is stamped; an older one is not
    (old / "config.yaml").write_text(yaml.safe_dump(saved))
    proc = run_cli("eval", str(old / "ckpt" / "ckpt_best.pth.tar"), cwd=old)
    assert proc.returncode == 0, proc.stderr
    assert "eval: policy.loss_weighting is not in the run's config.yaml" in proc.stderr
    assert "'appendix_g', the behaviour the run started with" in proc.stderr
    assert printed_returns(proc.stdout) == best_eval(cartpole_run)["episode_returns"]


@pytest.mark.timeout(120)
def test_a_continuous_episode_is_recorded_and_replays_to_its_score():
    # Pendulum's actions are [D] float rows: the recorder once took int() of them and raised
    from zeropipe.cli.video import FirstEpisodeRecorder, render_episode
    from zeropipe.config import EnvConfig
    from zeropipe.envs import EnvBatch

    cfg = EnvConfig(env_id="Pendulum-v1", evaluator_env_num=2, n_evaluator_episode=2)
    envs = FirstEpisodeRecorder(EnvBatch(cfg, 2, "eval", seed=11))
    rng = np.random.default_rng(0)
    try:
        envs.reset()
        while envs.episode_return is None:
            envs.step(rng.uniform(-1.0, 1.0, size=(2, 1)).astype(np.float32))  # normalised
    finally:
        envs.close()
    assert len(envs.actions) == 200 and envs.actions[0].shape == (1,)
    # distinct torques were kept, not one buffer seen 200 times
    assert len({float(a[0]) for a in envs.actions}) == 200
    frames, replayed = render_episode(cfg, 11, envs.actions)
    assert replayed == pytest.approx(envs.episode_return, rel=1e-6)
    assert len(frames) == 201
