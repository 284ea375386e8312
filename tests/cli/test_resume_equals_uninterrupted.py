"""Resume is the same run: a sync run stopped (at a limit, or SIGKILLed after a periodic
checkpoint) and resumed gives the same evals at the same env steps, and the same learner losses,
as the run never stopped. Through the real CLI, with the shipped defaults: compiled inference, bf16
where the CPU has it, the learner's thread count chosen by the run."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.cli.test_cli import TINY, run_cli
from tests.cli.test_run_recovery import start, wait_for
from zeropipe.cli import compare as same_run

pytestmark = [pytest.mark.usefixtures("no_leaks"), pytest.mark.timeout(300)]

WHOLE, PART = 480, 200
SETTINGS = ["--set", "policy.eval_freq=10"]
REPO = Path(__file__).resolve().parents[2]
# a shipped config, smaller: fewer envs and simulations, a smaller batch, an eval every 10
# learner steps, no stop by reward (CartPole MuZero's batch norms are what a frozen graph folds)
SMALLER = [
    "--set", "env.collector_env_num=2", "--set", "env.evaluator_env_num=2",
    "--set", "env.n_evaluator_episode=2", "--set", "env.stop_value=100000",
    "--set", "policy.num_simulations=8", "--set", "policy.batch_size=32",
    "--set", "policy.eval_freq=10",
]  # fmt: skip


def _lines(run: Path, event: str) -> list[dict]:
    lines = [json.loads(x) for x in (run / "log" / "metrics.jsonl").read_text().splitlines()]
    return [e for e in lines if e["event"] == event]


def _scheduled_evals(run: Path) -> list[tuple]:
    """(envstep, train_iter, reward_mean) of the evals the schedule ran (not a stop's final)."""
    evals = _lines(run, "eval")
    return [(e["envstep"], e["train_iter"], e["reward_mean"]) for e in evals if not e.get("final")]


def _losses(run: Path) -> list[tuple]:
    return [(e["train_iter"], e["value_loss"], e["policy_loss"]) for e in _lines(run, "train")]


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The uninterrupted run, trained once for the module; each test writes its own run beside."""
    tmp_path = tmp_path_factory.mktemp("resume")
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp="run"))
    done = run_cli(
        "train", "tiny.yaml", "--quiet", *SETTINGS, "--set", "exp_name=whole",
        "--set", f"max_env_step={WHOLE}", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert len(_scheduled_evals(tmp_path / "whole")) >= 4
    return tmp_path / "whole"


def test_stop_at_a_limit_and_resume_is_the_uninterrupted_run(whole: Path):
    tmp = whole.parent
    first = run_cli(
        "train", "tiny.yaml", "--quiet", *SETTINGS, "--set", "exp_name=parts",
        "--set", f"max_env_step={PART}", cwd=tmp,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    again = run_cli(
        "train", "parts", "--resume", "--quiet", "--set", f"max_env_step={WHOLE}", cwd=tmp
    )
    assert again.returncode == 0, again.stderr
    parts = tmp / "parts"
    assert _scheduled_evals(parts) == _scheduled_evals(whole)
    assert _losses(parts)[-1] == _losses(whole)[-1]
    assert _lines(parts, "stop")[-1]["envstep"] == _lines(whole, "stop")[-1]["envstep"]
    same, report = same_run.compare(whole, parts)  # every train line, not only the last
    assert same, report


def test_sigkill_after_a_periodic_checkpoint_and_resume_is_the_uninterrupted_run(whole: Path):
    tmp = whole.parent
    proc = start(
        tmp, *SETTINGS, "--set", "exp_name=killed", "--set", f"max_env_step={WHOLE}",
        "--set", "checkpoint.latest_interval_train_iter=40",
    )  # fmt: skip
    killed = tmp / "killed"
    try:
        wait_for(proc, killed, lambda e: e["event"] == "checkpoint" and e["train_iter"] >= 80)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    again = run_cli("train", "killed", "--resume", "--quiet", cwd=tmp)
    assert again.returncode == 0, again.stderr
    lines = [json.loads(x) for x in (killed / "log" / "metrics.jsonl").read_text().splitlines()]
    resumed = max(i for i, e in enumerate(lines) if e["event"] == "resume")
    after = [  # what the resumed process logged; the killed one may have gone further
        (e["envstep"], e["train_iter"], e["reward_mean"])
        for e in lines[resumed:]
        if e["event"] == "eval" and not e.get("final")
    ]
    # The checkpoint at the end of a budget comes before the eval due at that train_iter, so the
    # resumed process runs that eval again, at the checkpoint's own env steps: compare from the
    # checkpoint's train_iter on (an env-step filter `> envstep` would drop that eval from the
    # whole run's side only).
    at_iter = lines[resumed]["train_iter"]
    assert after and after == [e for e in _scheduled_evals(whole) if e[1] >= at_iter]
    assert _losses(killed)[-1] == _losses(whole)[-1]
    same, report = same_run.compare(whole, killed)  # a line logged twice: the resumed one's
    assert same, report


@pytest.mark.parametrize(
    ("config", "whole_steps"),
    [
        ("cartpole_muzero", 500),
        pytest.param("cartpole_unizero", 400, marks=pytest.mark.slow),
        pytest.param("pendulum_sampled_efficientzero", 400, marks=pytest.mark.slow),
    ],
)
def test_a_shipped_config_stopped_and_resumed_is_the_same_run(
    tmp_path: Path, config: str, whole_steps: int
):
    """A config of each family (MuZero, UniZero, sampled), smaller, stopped at 150 env steps.
    CartPole MuZero stops at learner step 42, between the target network's copies at 40 and
    60: the run never stopped computes the bootstrap values with the graph frozen from the
    target's weights, so the resumed run must too (a live trace rounds differently). The evals
    due in the budget trained after the env steps were spent are not run, but the resumed run
    evaluates at the multiples of eval_freq as the run never stopped does."""
    path = str(REPO / "configs" / f"{config}.yaml")
    for name, steps in (("whole", whole_steps), ("parts", 150)):
        done = run_cli(
            "train", path, "--quiet", *SMALLER, "--set", f"exp_name={name}",
            "--set", f"max_env_step={steps}", cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    at_iter = _lines(parts, "stop")[-1]["train_iter"]
    if config == "cartpole_muzero":
        assert at_iter % 20 and at_iter > 20  # the config's target_update_freq: between copies
    again = run_cli(
        "train", "parts", "--resume", "--quiet", "--set", f"max_env_step={whole_steps}",
        cwd=tmp_path,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    lines = [json.loads(x) for x in (parts / "log" / "metrics.jsonl").read_text().splitlines()]
    resumed = max(i for i, e in enumerate(lines) if e["event"] == "resume")
    after = [
        (e["envstep"], e["train_iter"], e["reward_mean"])
        for e in lines[resumed:]
        if e["event"] == "eval" and not e.get("final")
    ]
    assert after and after == [e for e in _scheduled_evals(whole) if e[1] >= at_iter]
    same, report = same_run.compare(whole, parts)
    assert same, report
