"""The live progress line on the console: a bar over env steps with its ETA, the env and learner
rates over the last 10 seconds, train_iter, the main losses, and the last and best eval reward;
during a long eval, the eval's own progress.

Runs in: driver. On a terminal it is a tqdm bar redrawn in place (tqdm: the rate, the ETA and the
terminal width are its business, not ours); otherwise (CI, a log file) a plain line is printed at
most every `interval_s` seconds, so long runs show progress without flooding. A resumed run's line
starts at its resumed env step and its rates count only this process's steps: the bar is made at
the first update, starting there (tqdm's rate and ETA then count from it), and nothing enters the
rate window before the first update's counters.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Mapping
from typing import TextIO

from tqdm import tqdm

RATE_WINDOW_S = 10.0  # the learner rate shown is over this many recent seconds
# (console name, train-line field) of the losses shown, where the type has them
SHOWN_LOSSES = (("loss", "total_loss"), ("v", "value_loss"), ("p", "policy_loss"))


class ProgressLine:
    """Renders training progress.

    Args:
        max_env_step: the env-step stop rule: the bar's total (an overshoot extends it).
        stream: where to write (stderr by default).
        interval_s: minimum time between non-terminal updates.
        enabled: draw at all (`--quiet`: no).
        best_eval: the best eval so far (a resumed run's, from its checkpoint).
    """

    def __init__(
        self,
        max_env_step: int,
        stream: TextIO | None = None,
        interval_s: float = 10.0,
        enabled: bool = True,
        best_eval: float | None = None,
    ):
        self.enabled = enabled
        self.max_env_step = max_env_step
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval_s = interval_s if not self.tty else 0.2
        self.start = time.monotonic()
        self._last_draw = -1e9
        self.last_eval: float | None = None
        self.best_eval = best_eval  # a resumed run's best so far, as its stop line counts it
        self.eval_status: str | None = None  # "eval 2/3 episodes, 350 steps" during an eval
        # (time, envstep, train_iter) over the rate window
        self._iters: deque[tuple[float, int, int]] = deque()
        self._counters: tuple[int, int] | None = None  # (envstep, train_iter) of the last update
        self._losses: Mapping[str, float] = {}
        self.bar: tqdm | None = None  # made at the first update (its start: that env step)

    def _bar(self, envstep: int) -> tqdm:
        return tqdm(
            total=max(self.max_env_step, envstep),
            initial=envstep,
            unit="env",
            file=self.stream,
            dynamic_ncols=True,
            mininterval=self.interval_s,
            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} env [{elapsed}<{remaining}] {postfix}",
        )

    def eval_done(self, reward_mean: float) -> None:
        """Remember the latest and best eval reward."""
        self.last_eval = reward_mean
        self.best_eval = reward_mean if self.best_eval is None else max(self.best_eval, reward_mean)
        self.eval_status = None

    def eval_progress(self, episodes_done: int, episodes: int, env_steps: int) -> None:
        """An eval in this process is under way (redrawn at the usual pace; shown from the first
        update on, whose counters the line starts from)."""
        self.eval_status = f"eval {episodes_done}/{episodes} episodes, {env_steps} steps"
        if self._counters is not None:
            self.update(*self._counters)

    def update(
        self,
        envstep: int,
        train_iter: int,
        force: bool = False,
        losses: Mapping[str, float] | None = None,
    ) -> None:
        """Redraw if enough time passed (or `force`); `losses`: the learner's recent loss means."""
        now = time.monotonic()
        self._counters = (envstep, train_iter)
        if losses:
            self._losses = losses
        self._iters.append((now, envstep, train_iter))
        while len(self._iters) > 2 and now - self._iters[1][0] >= RATE_WINDOW_S:
            self._iters.popleft()
        if not self.enabled or (not force and now - self._last_draw < self.interval_s):
            return
        self._last_draw = now
        if self.tty and self.bar is None:
            self.bar = self._bar(envstep)
        if self.bar is not None:
            self.bar.total = max(self.max_env_step, envstep)
            self.bar.n = envstep
            self.bar.set_postfix_str(self._postfix(train_iter), refresh=False)
            self.bar.refresh()
        else:
            elapsed = now - self.start
            text = f"env {envstep}/{self.max_env_step}  {self._postfix(train_iter)}  {elapsed:.0f}s"
            self.stream.write(text + "\n")
            self.stream.flush()

    def _postfix(self, train_iter: int) -> str:
        env_rate, learner_rate = self.rates()
        parts = [f"{env_rate:.1f} env/s  iter {train_iter} ({learner_rate:.1f} it/s)"]
        shown = [
            f"{name} {self._losses[key]:.3g}" for name, key in SHOWN_LOSSES if key in self._losses
        ]
        if shown:
            parts.append(" ".join(shown))
        if self.eval_status is not None:
            parts.append(self.eval_status)
        elif self.last_eval is not None:
            parts.append(f"eval {self.last_eval:.1f} (best {self.best_eval:.1f})")
        return "  ".join(parts)

    def rates(self) -> tuple[float, float]:
        """Env steps and learner steps per second over the last RATE_WINDOW_S seconds (the
        status endpoint's `_10s` rates are the same window)."""
        (t0, e0, i0), (t1, e1, i1) = self._iters[0], self._iters[-1]
        if t1 <= t0:
            return 0.0, 0.0
        return (e1 - e0) / (t1 - t0), (i1 - i0) / (t1 - t0)

    def close(self) -> None:
        """End the in-place line."""
        if self.bar is not None:
            self.bar.close()
