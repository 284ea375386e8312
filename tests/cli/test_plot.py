"""`zeropipe plot`: grouping seeds into one band, the figure's data, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest

from tests.cli.test_cli import TINY, run_cli
from tests.tiny import tiny_config
from zeropipe.cli.curves import GRID_POINTS, plot_runs
from zeropipe.cli.errors import InputError
from zeropipe.outputs.events import CollectEvent, EvalEvent
from zeropipe.outputs.run_dir import RunDir

ENVSTEPS = [0, 100, 200]


def fake_run(root: Path, name: str, seed: int, scale: float, **policy) -> Path:
    """A run directory written by the real RunDir: eval reward_mean = scale·envstep."""
    cfg = tiny_config(root / name, **policy).model_copy(update={"seed": seed})
    run = RunDir(cfg)
    for envstep in ENVSTEPS:
        counters = {"envstep": envstep, "train_iter": envstep // 2}
        rates = {"envstep_per_s": 10.0 * scale, "learner_steps_per_s": scale}
        run.metrics.emit(CollectEvent(**counters, **rates))
        run.metrics.emit(EvalEvent(**counters, reward_mean=scale * envstep))
    run.close()
    return run.root


def reward_axes(fig):
    return fig.axes[0]


def labelled_lines(ax) -> list:
    """The legend's lines: group means (each run's own points are drawn unlabelled)."""
    return [line for line in ax.get_lines() if not line.get_label().startswith("_")]


def test_three_seeds_are_one_band(tmp_path: Path):
    runs = [fake_run(tmp_path, f"tiny_seed{s}", s, scale=s + 1.0) for s in range(3)]
    out = tmp_path / "out" / "curves.png"
    fig = plot_runs(runs, out, "envstep")
    ax = reward_axes(fig)
    assert len(ax.collections) == 1  # one min–max band
    (line,) = labelled_lines(ax)
    assert line.get_label() == "tiny (3 seeds)"
    assert len(ax.get_lines()) == 1 + 3  # the mean and each run's own points
    x, y = line.get_xydata().T
    assert x[0] == 0 and x[-1] == 200
    np.testing.assert_allclose(y, 2.0 * x)  # mean of 1x, 2x, 3x
    band_y = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert band_y.min() == pytest.approx(0.0) and band_y.max() == pytest.approx(600.0)
    (env_line,) = fig.axes[1].get_lines()  # mean env steps/s of 10, 20, 30
    (learner_line,) = fig.axes[2].get_lines()  # its twin axis: mean learner steps/s of 1, 2, 3
    np.testing.assert_allclose(env_line.get_ydata(), 20.0)
    np.testing.assert_allclose(learner_line.get_ydata(), 2.0)
    image = iio.imread(out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and image.shape[0] > 100
    assert image.reshape(-1, image.shape[-1]).std(axis=0).max() > 0  # not a blank canvas


def test_other_config_is_its_own_curve(tmp_path: Path):
    runs = [fake_run(tmp_path, f"tiny_seed{s}", s, scale=1.0) for s in range(2)]
    runs.append(fake_run(tmp_path, "bigger", 0, scale=5.0, batch_size=16))
    fig = plot_runs(runs, tmp_path / "c.png", "time_s")
    ax = reward_axes(fig)
    assert [line.get_label() for line in labelled_lines(ax)] == ["tiny (2 seeds)", "bigger"]
    assert len(ax.collections) == 1  # a single run has no band
    assert ax.get_xlabel() == "wall time (s)"


def test_time_continues_across_a_resume(tmp_path: Path):
    from zeropipe.cli.curves import read_run

    run = fake_run(tmp_path, "r", 0, scale=1.0)
    metrics = run / "log" / "metrics.jsonl"
    last = json.loads(metrics.read_text().splitlines()[-1])["time_s"]
    with metrics.open("a") as f:
        f.write(json.dumps({"event": "resume", "time_s": 0.0, "envstep": 200, "train_iter": 1}))
        f.write(
            "\n"
            + json.dumps(
                {
                    "event": "eval",
                    "time_s": 1.5,
                    "envstep": 300,
                    "train_iter": 2,
                    "reward_mean": 7.0,
                }
            )
            + "\n"
        )
    curve = read_run(run).reward
    assert curve.time_s[-1] == pytest.approx(last + 1.5)
    assert np.all(np.diff(curve.time_s) >= 0)


def test_a_line_being_written_is_not_read_yet(tmp_path: Path):
    """A live run's last line may be half written: it is left out; a broken whole line is not."""
    from zeropipe.cli.curves import read_run

    run = fake_run(tmp_path, "r", 0, scale=1.0)
    metrics = run / "log" / "metrics.jsonl"
    whole = json.dumps({"event": "eval", "time_s": 9.0, "envstep": 300, "reward_mean": 3.0})
    with metrics.open("a") as f:
        f.write(whole[:40])  # the writer's first page, its newline not yet written
    assert list(read_run(run).reward.envstep) == ENVSTEPS
    with metrics.open("a") as f:
        f.write(whole[40:] + "\n")
    assert list(read_run(run).reward.envstep) == [*ENVSTEPS, 300]
    with metrics.open("a") as f:
        f.write(whole[:40] + "\n")  # a whole line that is not JSON is still an error
    with pytest.raises(InputError, match=r"metrics\.jsonl:8 is not a JSON line"):
        read_run(run)


@pytest.mark.parametrize("case", ["no_runs", "not_a_run", "no_eval_lines"])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, case: str):
    args: list[str] = []
    if case == "not_a_run":
        (tmp_path / "empty").mkdir()
        args = [str(tmp_path / "empty")]
        needle = "has no log/metrics.jsonl"
    elif case == "no_eval_lines":
        run = RunDir(tiny_config(tmp_path / "fresh"))
        run.metrics.emit(CollectEvent(envstep=10, train_iter=0, envstep_per_s=1.0))
        run.close()
        args = [str(tmp_path / "fresh")]
        needle = "has no eval line"
    else:
        needle = "no run directory given"
    proc = run_cli("plot", *args, "-o", str(tmp_path / "c.png"), cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zeropipe plot: ") and needle in lines[0]
    assert not (tmp_path / "c.png").exists()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_plot_three_real_seeds(tmp_path: Path, no_leaks: None):
    config = tmp_path / "tiny.yaml"
    tiny = TINY.format(exp="placeholder").replace("max_env_step: 240", "max_env_step: 64")
    config.write_text(tiny.replace("eval_freq: 20", "eval_freq: 4"))  # evals all along
    runs = []
    for seed in range(3):
        exp = f"runs/tiny_seed{seed}"
        proc = run_cli(
            "train",
            str(config),
            "--quiet",
            "--set",
            f"seed={seed}",
            "--set",
            f"exp_name={exp}",
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        runs.append(exp)
    proc = run_cli("plot", *runs, "-o", "curves.png", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert iio.imread(tmp_path / "curves.png").ndim == 3
    fig = plot_runs([tmp_path / r for r in runs], tmp_path / "again.png", "envstep")
    ax = reward_axes(fig)
    assert len(ax.collections) == 1
    (mean,) = labelled_lines(ax)
    assert mean.get_label() == "tiny (3 seeds)"
    assert len(mean.get_xdata()) == GRID_POINTS  # the seeds share an env-step range
