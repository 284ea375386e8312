"""Where an eval line sits on the curve: at the counters of the weights it scored.

An async eval's result arrives while collecting and training go on; its line must say what the
evaluated weights had seen (the env steps collected when the snapshot was taken, train_iter = the
snapshot's version), or an async curve is shifted right against a sync one by however long the
eval took (issue 23: UniZero's async "2x env steps" on CartPole was mostly this).
"""

from __future__ import annotations

from tests.runlog import events
from tests.tiny import tiny_config
from zeropipe.learner.budget import TrainBudget
from zeropipe.learner.trainer import Trainer
from zeropipe.outputs.run_dir import RunDir
from zeropipe.pipeline.build import build_driver
from zeropipe.pipeline.run_state import RunState
from zeropipe.pipeline.threads import ThreadChoice
from zeropipe.workers.evaluator import EvalOutcome


def _state(tmp_path) -> RunState:
    cfg = tiny_config(tmp_path / "run")
    comps = build_driver(cfg)
    run = RunDir(cfg, resume=False)
    return RunState(
        cfg, run, Trainer(comps.learner, comps.buffer, cfg.policy), ThreadChoice(1, "t")
    )


def _outcome(version: int, reward: float) -> EvalOutcome:
    return EvalOutcome(reward, [reward, reward], version, False, 0, 1.0)


def test_an_eval_that_arrives_later_is_logged_at_its_snapshot(tmp_path):
    state = _state(tmp_path)
    weights = state.trainer.learner.network.state_dict()
    state.envstep, state.trainer.learner.train_iter = 1000, 300  # where the result arrives
    state.record_eval(_outcome(250, 5.0), weights, snapshot_at=(600, 40))
    state.run.close()
    line = [e for e in events(tmp_path / "run") if e["event"] == "eval"][-1]
    assert (line["envstep"], line["train_iter"], line["policy_version"]) == (600, 250, 250)
    assert (line["result_envstep"], line["result_train_iter"]) == (1000, 300)
    assert line["owed_learner_steps"] == 40


def test_a_sync_eval_is_logged_at_the_current_counters(tmp_path):
    """Inside a budget (eval_grid 'learner_step') a sync eval owes the rest of it: 100 - 30."""
    state = _state(tmp_path)
    weights = state.trainer.learner.network.state_dict()
    state.envstep, state.trainer.learner.train_iter = 1000, 300
    state.record_eval(_outcome(300, 5.0), weights)
    state.trainer.budgets.append(TrainBudget(100, None, progress=30))
    state.record_eval(_outcome(300, 6.0), weights)
    state.run.close()
    lines = [e for e in events(tmp_path / "run") if e["event"] == "eval"]
    assert [(e["envstep"], e["train_iter"]) for e in lines] == [(1000, 300), (1000, 300)]
    assert [e["owed_learner_steps"] for e in lines] == [0, 70]
    assert not {"result_envstep", "result_train_iter"} & set(lines[-1])


def test_owed_steps_are_what_the_queued_budgets_have_left(tmp_path):
    trainer = _state(tmp_path).trainer
    assert trainer.owed_steps() == 0
    trainer.budgets.extend([TrainBudget(100, None, progress=30), TrainBudget(100, None)])
    assert trainer.owed_steps() == 70 + 100
