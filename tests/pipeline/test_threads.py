"""The learner's thread choice: the rule, the kernel's busy count, and a resume keeping it."""

from __future__ import annotations

import pytest
import torch

from tests.runlog import events
from tests.tiny import tiny_config
from zeropipe.pipeline import threads
from zeropipe.pipeline.sync import train_sync

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("no_leaks")]

MLP = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
CONV = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Flatten())


@pytest.fixture
def four_cores_one_busy(monkeypatch):
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: 1)


def test_the_choice_rule(four_cores_one_busy):
    assert threads.choose_threads(None, MLP).threads == 1  # small ops: one thread
    assert threads.choose_threads(None, CONV).threads == 3  # the cores nobody else runs on
    assert threads.choose_threads(None, CONV, restored=2).threads == 2  # a resumed run's count
    configured = threads.choose_threads(5, MLP, restored=2)
    assert (configured.threads, configured.explicit) == (5, True)  # the option always wins
    # the run's own async workers, busy starting, are not other processes' load
    assert threads.choose_threads(None, CONV, own_workers=1).threads == 4
    assert threads.choose_threads(None, CONV, own_workers=2).threads == 4


def test_a_machine_busy_everywhere_still_gets_one_thread(monkeypatch):
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: 7)
    assert threads.choose_threads(None, CONV).threads == 1


def test_busy_elsewhere_reads_the_runnable_count_less_this_process(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  1 2 3\nprocs_running 3\nprocs_blocked 0\n")
    assert threads.busy_elsewhere(stat) == 2
    stat.write_text("procs_running 1\n")
    assert threads.busy_elsewhere(stat) == 0


def test_a_resumed_run_keeps_the_thread_count_it_started_with(tmp_path, monkeypatch):
    monkeypatch.setattr(threads, "has_convolutions", lambda network: True)
    monkeypatch.setattr(threads, "usable_cores", lambda: 2)
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: 0)
    cfg = tiny_config(tmp_path / "run")
    cfg.max_env_step = 64
    train_sync(cfg, show_progress=False)
    monkeypatch.setattr(threads, "busy_elsewhere", lambda: 1)  # a new run would now take one
    assert threads.choose_threads(None, CONV).threads == 1
    cfg.max_env_step = 128
    train_sync(cfg, resume=True, show_progress=False)
    used = [e["learner_threads"] for e in events(tmp_path / "run") if e["event"] == "train"]
    assert len(used) >= 2 and set(used) == {2}
