"""A resume refuses every async setting that changes which data is collected when, key by key
(set directly, or through `num_collector_actors` where one follows it); it accepts the worker
settings that only say where and how the workers run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_cli import TINY
from zeropipe.config import ConfigError, dump_config, load_config
from zeropipe.config.resume import load_resume_config

AP = "policy.async_pipeline."
# the run's own values (TINY: one collector, the rest at their defaults), by hand
RUN = {
    "max_policy_lag": 0,
    "weight_sync_interval": 1,
    "max_train_budget_queue_size": 2,  # unset: 2 × num_collector_actors
    "max_collect_inflight": 1,  # unset: num_collector_actors
    "max_train_chunk_steps": 4,
    "collect_freshness": "refresh",
}

REFUSED = [
    ("max_policy_lag=3", "max_policy_lag", "0 -> 3"),
    ("max_policy_lag=-1", "max_policy_lag", "0 -> -1"),
    ("weight_sync_interval=5", "weight_sync_interval", "1 -> 5"),
    ("max_train_budget_queue_size=1", "max_train_budget_queue_size", "2 -> 1"),
    ("max_train_budget_queue_size=3", "max_train_budget_queue_size", "2 -> 3"),
    ("max_collect_inflight=2", "max_collect_inflight", "1 -> 2"),
    ("max_train_chunk_steps=1", "max_train_chunk_steps", "4 -> 1"),
    ("collect_freshness=reference", "collect_freshness", "refresh -> reference"),
    ("collect_freshness=just_in_time", "collect_freshness", "refresh -> just_in_time"),
]
ACCEPTED = [
    [f"{AP}max_train_budget_queue_size=2"],  # the value it has: nothing changes
    [f"{AP}collect_freshness=refresh"],
    [f"{AP}num_evaluator_actors=2"],
    [f"{AP}collector_num_cpus=2"],
    [f"{AP}max_queued_evals=8"],
    [f"{AP}poll_interval_s=0.05"],
    [f"{AP}shutdown_timeout_s=5"],
    [f"{AP}eval_at_start=true"],
    # more collectors, with the two rules that would follow them kept at the run's values
    [
        f"{AP}num_collector_actors=3",
        f"{AP}max_train_budget_queue_size=2",
        f"{AP}max_collect_inflight=1",
    ],
]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    (tmp_path / "tiny.yaml").write_text(TINY.format(exp=tmp_path / "run"))
    directory = tmp_path / "run"
    directory.mkdir()
    (directory / "config.yaml").write_text(dump_config(load_config(tmp_path / "tiny.yaml")))
    return directory


def test_the_table_is_the_runs_own_values(run: Path):
    pipeline = load_resume_config(run, [])[0].policy.async_pipeline
    resolved = {
        **{name: getattr(pipeline, name) for name in RUN},
        "max_train_budget_queue_size": pipeline.resolved_max_train_budget_queue_size,
        "max_collect_inflight": pipeline.resolved_max_collect_inflight,
    }
    assert resolved == RUN


@pytest.mark.parametrize(("override", "rule", "change"), REFUSED)
def test_a_collect_rule_that_changes_is_refused(run: Path, override: str, rule: str, change: str):
    with pytest.raises(ConfigError) as refused:
        load_resume_config(run, [AP + override])
    message = str(refused.value)
    assert message.startswith(f"--set {AP}{rule}: it would change the run ({change})")


@pytest.mark.parametrize(
    ("override", "rule", "change"),
    [
        ([f"{AP}num_collector_actors=3"], "max_train_budget_queue_size", "2 -> 6"),
        (
            [f"{AP}num_collector_actors=3", f"{AP}max_train_budget_queue_size=2"],
            "max_collect_inflight",
            "1 -> 3",
        ),
    ],
)
def test_more_collectors_are_refused_where_a_rule_follows_them(
    run: Path, override: list[str], rule: str, change: str
):
    with pytest.raises(ConfigError) as refused:
        load_resume_config(run, override)
    message = str(refused.value)
    assert f"policy.async_pipeline.{rule} follows it ({change})" in message
    keep = message.rsplit("; set ", 1)[1]  # every rule that would change, with its value
    assert f"policy.async_pipeline.{rule}={change.split()[0]}" in keep and " too to keep" in keep


@pytest.mark.parametrize("overrides", ACCEPTED)
def test_worker_settings_are_accepted(run: Path, overrides: list[str]):
    _, notes = load_resume_config(run, overrides)
    assert len(notes) == len(overrides)
