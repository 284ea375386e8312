"""The embedder's API through the real driver: heavy work off the loop, events, status, endpoint."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.tiny import tiny_config
from zeropipe import start
from zeropipe.learner.trainer import Trainer
from zeropipe.outputs.events import (
    CollectEvent,
    EvalEvent,
    PublishEvent,
    StopEvent,
    StopReason,
    TrainEvent,
)
from zeropipe.outputs.phases import PhaseTotals
from zeropipe.outputs.run_dir import RunDir

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("no_leaks")]


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "log" / "metrics.jsonl").read_text().splitlines()]


def record_threads(monkeypatch, cls: type, name: str) -> list[int]:
    """Wrap `cls.name` to note the thread each call runs on."""
    seen: list[int] = []
    real = getattr(cls, name)

    def wrapper(self, *args, **kwargs):
        seen.append(threading.get_ident())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, wrapper)
    return seen


async def test_heavy_work_runs_off_the_loop_thread_and_stop_is_clean(tmp_path, monkeypatch):
    steps = record_threads(monkeypatch, Trainer, "step")
    saves = record_threads(monkeypatch, RunDir, "save")
    cfg = tiny_config(tmp_path / "run")
    cfg.max_env_step = 10**6
    run = start(cfg)
    seen = []
    async for event in run.events():
        seen.append(event)
        if isinstance(event, TrainEvent):
            break
    final = await run.stop()
    loop_thread = threading.get_ident()
    assert steps and loop_thread not in steps
    assert len(set(steps)) == 1  # one dedicated thread
    assert saves and loop_thread not in saves  # the final checkpoint too
    assert final["running"] is False and final["stop_reason"] == "cancelled"
    last = records(tmp_path / "run")[-1]
    assert last["event"] == "stop" and last["reason"] == "cancelled"
    assert (tmp_path / "run" / "ckpt" / "ckpt_latest.pth.tar").exists()


def _get(address: tuple[str, int], path: str) -> str:
    with urllib.request.urlopen(f"http://{address[0]}:{address[1]}{path}", timeout=10) as resp:
        assert resp.status == 200
        return resp.read().decode()


async def test_events_status_and_endpoint_agree_with_metrics_jsonl(tmp_path):
    cfg = tiny_config(tmp_path / "run")
    run = start(cfg, status="127.0.0.1:0")
    address = run.status_address
    assert address[0] == "127.0.0.1" and address[1] > 0
    slow = run.events(maxsize=2)  # never read during the run: it must not hold the driver back
    events = [event async for event in run.events(maxsize=100_000)]
    summary = await run.wait()
    log = records(tmp_path / "run")
    assert [dict(e.record) for e in events] == log  # every line, in order
    for event in events:  # a line's fields are the event's declared ones
        declared = {f.name for f in dataclasses.fields(event)} | {"event"}
        spread = set(getattr(event, "learner", {})) | set(PhaseTotals.__dataclass_fields__)
        assert set(event.record) <= declared | spread, event.event
    trains = [e for e in events if isinstance(e, TrainEvent)]
    last_train = [r for r in log if r["event"] == "train"][-1]
    assert trains[-1].losses == {k: v for k, v in last_train.items() if k.endswith("_loss")}
    assert {"total_loss", "value_loss", "policy_loss"} <= set(trains[-1].losses)
    assert trains[-1].phases.train_s_total == last_train["train_s_total"]
    kinds = {CollectEvent: "collect", TrainEvent: "train", EvalEvent: "eval"}
    for cls, name in {**kinds, PublishEvent: "publish", StopEvent: "stop"}.items():
        assert all(isinstance(e, cls) for e in events if e.event == name)
        assert any(e.event == name for e in events)
    assert events[-1].reason == summary.stop_reason == StopReason.MAX_ENV_STEP
    evals = [e for e in events if isinstance(e, EvalEvent)]
    assert evals[-1].reward_mean == [r for r in log if r["event"] == "eval"][-1]["reward_mean"]
    left = [e async for e in slow]
    assert len(left) == 2 and isinstance(left[-1], StopEvent)

    status = json.loads(await asyncio.to_thread(_get, address, "/status"))
    assert status == run.status()
    assert status["events_dropped"] == len(log) - 2
    _check_against_log(status, log)
    text = await asyncio.to_thread(_get, address, "/metrics")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("zeropipe_envsteps_total", ())] == log[-1]["envstep"]
    assert samples[("zeropipe_learner_steps_total", ())] == log[-1]["train_iter"]
    last_train = [r for r in log if r["event"] == "train"][-1]
    for term in ("total_loss", "value_loss", "policy_loss"):
        assert samples[("zeropipe_loss", (("term", term),))] == last_train[term]
    labels = (("env", "zeropipe/Chain-v0"), ("pipeline", "async"), ("type", "muzero"))
    run_info = [k for k in samples if k[0] == "zeropipe_run_info"]
    assert len(run_info) == 1 and set(labels) <= set(run_info[0][1])
    assert samples[("zeropipe_evals_total", ())] == len(evals)
    assert samples[("zeropipe_eval_reward_mean_best", ())] == max(e.reward_mean for e in evals)
    assert samples[("zeropipe_restarts_total", ())] == 0
    publish_s = sum(r["publish_s"] for r in log if r["event"] == "publish")
    assert samples[("zeropipe_publish_seconds_total", ())] == pytest.approx(publish_s)
    last_collect = [r for r in log if r["event"] == "collect"][-1]
    busy = samples[("zeropipe_worker_busy_fraction", (("worker", "collector-0"),))]
    assert busy == last_collect["worker_busy_fraction"]
    assert samples[("zeropipe_policy_lag", ())] == last_collect["policy_lag"]
    await run.stop()
    with pytest.raises(urllib.error.URLError):
        await asyncio.to_thread(_get, address, "/status")  # the endpoint is gone


def _check_against_log(status: dict, log: list[dict]) -> None:
    evals = [r["reward_mean"] for r in log if r["event"] == "eval"]
    assert status["running"] is False and status["stop_reason"] == "max_env_step"
    assert (status["envstep"], status["train_iter"]) == (log[-1]["envstep"], log[-1]["train_iter"])
    assert status["collects"] == sum(r["event"] == "collect" for r in log)
    assert status["publishes"] == sum(r["event"] == "publish" for r in log)
    assert (status["last_eval"], status["best_eval"]) == (evals[-1], max(evals))
    with_rate = [r for r in log if "learner_steps_per_s" in r]
    assert status["learner_steps_per_s_run"] == with_rate[-1]["learner_steps_per_s"]
    assert set(status["workers"]) == {"collector-0", "evaluator-0"}
    assert status["workers"]["collector-0"]["role"] == "collector"
