"""A loss, gradient or weight that stops being finite ends the run with an error naming the step
and the term; the last good `ckpt_latest` is left byte for byte as it was."""

from __future__ import annotations

import json

import pytest
import torch

from tests.learner.factories import tiny_policy
from tests.tiny import tiny_config
from zeropipe.learner.learner import Learner, NonFiniteError
from zeropipe.pipeline.async_driver import train_async
from zeropipe.pipeline.sync import train_sync

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("no_leaks")]


def _blown_up(cfg):
    """The run's config with a learning rate that overflows the weights at the first step."""
    return cfg.model_copy(update={"policy": cfg.policy.model_copy(update={"learning_rate": 1e30})})


def _stop_line(run) -> dict:
    lines = [json.loads(x) for x in (run / "log" / "metrics.jsonl").read_text().splitlines()]
    return [e for e in lines if e["event"] == "stop"][-1]


@pytest.mark.parametrize("pipeline", ["sync", "async"])
async def test_a_non_finite_loss_stops_the_run_and_keeps_the_last_good_checkpoint(
    tmp_path, pipeline
):
    cfg = tiny_config(tmp_path / "run", learner_num_threads=1)
    cfg.max_env_step = 120
    train_sync(cfg)
    latest = tmp_path / "run" / "ckpt" / "ckpt_latest.pth.tar"
    before = latest.read_bytes()
    blown = _blown_up(cfg)
    blown.max_env_step = 400
    # the next learner step's loss, or (an eval due inside the budget first) the search's roots
    with pytest.raises(NonFiniteError, match=r"(learner step \d+|search): .* not finite") as info:
        if pipeline == "sync":
            train_sync(blown, resume=True)
        else:
            await train_async(blown, resume=True, show_progress=False)
    assert "\n" not in str(info.value)
    assert latest.read_bytes() == before
    stop = _stop_line(tmp_path / "run")
    assert stop["reason"] == "error" and "NonFiniteError" in stop["error"]


def test_the_loss_check_names_the_term_and_leaves_the_weights(monkeypatch):
    learner = Learner.__new__(Learner)  # only the check's own state
    learner.train_iter = 41
    terms = {"value_loss": torch.tensor(0.5), "reward_loss": torch.tensor(float("nan"))}
    with pytest.raises(NonFiniteError, match=r"learner step 42: reward_loss = nan is not finite"):
        learner._check_finite(torch.tensor(float("nan")), terms)
    learner._check_finite(torch.tensor(1.0), terms)  # a finite total passes


def test_a_non_finite_weight_is_never_saved():
    from tests.learner.factories import OBS, A
    from zeropipe.models import MuZeroNetwork

    policy = tiny_policy()
    learner = Learner(MuZeroNetwork((OBS,), A, policy.model), policy, 1, seed=0)
    learner.check_weights()
    with torch.no_grad():
        next(learner.network.parameters()).view(-1)[0] = float("inf")
    with pytest.raises(NonFiniteError, match=r"weight .* is not finite"):
        learner.check_weights()
