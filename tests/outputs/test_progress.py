"""The console's progress line: windowed learner rate, losses, eval progress, tty bar, overshoot."""

from __future__ import annotations

import io

from zeropipe.outputs import progress as progress_module
from zeropipe.outputs.progress import ProgressLine


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_learner_rate_is_over_the_last_seconds_not_the_run(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress_module.time, "monotonic", clock)
    line = ProgressLine(1000, stream=io.StringIO(), interval_s=0.0)
    for t, env, it in [(0.0, 0, 0), (10.0, 400, 100), (15.0, 420, 105), (20.0, 440, 110)]:
        clock.now = t
        line.update(env, it)
    # the last 10 s: 400 -> 440 env steps and 100 -> 110 iterations in 10 s (the run's averages
    # would be 22 and 5.5)
    assert line.rates() == (4.0, 1.0)


def test_a_plain_line_has_counters_losses_rate_and_eval(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress_module.time, "monotonic", clock)
    out = io.StringIO()
    line = ProgressLine(600, stream=out, interval_s=0.0)
    line.update(0, 0)
    clock.now = 4.0
    line.eval_done(26.333333)
    line.update(96, 8, losses={"total_loss": 1.23456, "value_loss": 0.5, "policy_loss": 0.25})
    last = out.getvalue().splitlines()[-1]
    assert last.startswith("env 96/600  24.0 env/s  iter 8 (2.0 it/s)  loss 1.23 v 0.5 p 0.25")
    assert "eval 26.3 (best 26.3)" in last


def test_a_long_eval_shows_its_own_progress():
    out = io.StringIO()
    line = ProgressLine(600, stream=out, interval_s=0.0)
    line.update(96, 8)
    line.eval_progress(1, 3, 350)
    assert "eval 1/3 episodes, 350 steps" in out.getvalue().splitlines()[-1]
    line.eval_done(40.0)
    line.update(96, 8, force=True)
    assert "eval 40.0 (best 40.0)" in out.getvalue().splitlines()[-1]


def test_on_a_terminal_it_is_a_bar_and_an_overshoot_extends_it():
    term = Terminal()
    line = ProgressLine(600, stream=term, interval_s=0.0)
    line.update(300, 10, force=True)
    assert "300/600 env" in term.getvalue() and "%|" in term.getvalue()
    line.update(1056, 20, force=True)  # a collect past max_env_step
    line.close()
    assert "1056/1056 env" in term.getvalue() and "1056/600" not in term.getvalue()


def test_quiet_draws_nothing():
    out = Terminal()
    line = ProgressLine(600, stream=out, enabled=False)
    line.update(300, 10, force=True)
    line.eval_progress(1, 3, 10)
    line.close()
    assert out.getvalue() == ""


def test_an_eval_before_the_first_update_adds_no_zero_to_the_rates(monkeypatch):
    """A resumed run may evaluate first: the line starts at the resumed counters, not at 0."""
    clock = Clock()
    monkeypatch.setattr(progress_module.time, "monotonic", clock)
    out = io.StringIO()
    line = ProgressLine(1000, stream=out, interval_s=0.0)
    line.eval_progress(1, 3, 10)
    assert out.getvalue() == ""
    clock.now = 2.0
    line.update(500, 50)  # the resumed run's counters
    assert out.getvalue().startswith("env 500/1000  0.0 env/s")
    assert "eval 1/3 episodes, 10 steps" in out.getvalue()
    clock.now = 4.0
    line.update(540, 60)
    assert line.rates() == (20.0, 5.0)  # 40 env steps and 10 iterations in 2 s, not 540 in 4
