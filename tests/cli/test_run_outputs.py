"""What a short CartPole run through the real CLI leaves for a reader: TensorBoard event files
with the losses, evals, hyperparameters and config text and no meaningless tags, and a plain-text
`log/train.log` with the run's INFO records, `--quiet` or not."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import plugin_data_pb2

from tests.cli.test_cli import run_cli
from tests.leaks import shm_blocks

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "cartpole_muzero.yaml"
# a CartPole run of seconds: few simulations, small batches, an eval every 10 learner steps
TINY_BUDGET = [
    "max_env_step=200",
    "policy.num_simulations=4",
    "policy.batch_size=16",
    "policy.eval_freq=10",
    "env.n_evaluator_episode=1",
    "env.evaluator_env_num=1",
    "env.collector_env_num=2",
    "policy.game_segment_length=10",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, str]:
    """The run directory and the console (stderr) of one `--quiet` CartPole run."""
    root = tmp_path_factory.mktemp("cartpole")
    before = shm_blocks()
    sets = [item for o in [*TINY_BUDGET, f"exp_name={root / 'run'}"] for item in ("--set", o)]
    proc = run_cli("train", str(CONFIG), "--quiet", *sets, cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert shm_blocks() <= before
    return root / "run", proc.stderr


def _events(run_dir: Path) -> EventAccumulator:
    (path,) = (run_dir / "log").glob("events.out.tfevents.*")
    acc = EventAccumulator(str(path), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    return acc


def _metrics(run_dir: Path) -> list[dict]:
    lines = (run_dir / "log" / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.timeout(300)
def test_tensorboard_has_the_losses_and_evals_and_no_meaningless_tags(run):
    run_dir, _ = run
    acc = _events(run_dir)
    tags = set(acc.Tags()["scalars"])
    wanted = {"train/total_loss", "train/value_loss", "train/policy_loss", "train/reward_loss"}
    assert wanted | {"eval/reward_mean", "collect/envstep_per_s"} <= tags
    assert not [t for t in tags if t.endswith(("/time_s", "/policy_version", "/seed"))], tags
    assert not [t for t in tags if t.split("/")[0] in ("checkpoint", "stop", "resume")], tags
    evals = [r for r in _metrics(run_dir) if r["event"] == "eval"]
    points = acc.Scalars("eval/reward_mean")
    assert [(p.step, p.value) for p in points] == [(r["envstep"], r["reward_mean"]) for r in evals]


@pytest.mark.timeout(300)
def test_tensorboard_has_the_hparams_and_the_config_text_once(run):
    run_dir, _ = run
    acc = _events(run_dir)
    content = acc.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hparams = start.session_start_info.hparams
    assert hparams["env.env_id"].string_value == "CartPole-v1"
    assert hparams["policy.num_simulations"].number_value == 4  # --set
    assert hparams["policy.td_steps"].number_value == 20  # the file
    assert hparams["policy.absorbing_terminal"].bool_value is True
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"])
    assert [m.name.tag for m in experiment.experiment.metric_infos] == ["eval/reward_mean"]
    (text,) = acc.Tensors("config/text_summary")
    yaml_text = text.tensor_proto.string_val[0].decode()
    assert "    env_id: CartPole-v1\n" in yaml_text and "    num_simulations: 4\n" in yaml_text


@pytest.mark.timeout(300)
def test_the_text_log_has_the_runs_info_records_though_the_console_was_quiet(run):
    run_dir, console = run
    lines = (run_dir / "log" / "train.log").read_text().splitlines()
    line = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} zeropipe\.\S+ (INFO|WARNING|ERROR): ")
    assert lines and all(line.match(text) for text in lines), lines
    logged = [int(m.group(1)) for t in lines if (m := re.search(r"eval at iter (\d+):", t))]
    evals = [r["train_iter"] for r in _metrics(run_dir) if r["event"] == "eval"]
    assert logged == evals and evals
    assert "eval at iter" not in console
