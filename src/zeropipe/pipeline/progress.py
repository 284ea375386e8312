"""The live progress line on the console: env steps, train_iter, rates, last eval reward.

Runs in: driver. On a terminal the line is redrawn in place; otherwise (CI, a log file) a plain
line is printed at most every `interval_s` seconds, so long runs show progress without flooding.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressLine:
    """Renders training progress.

    Args:
        max_env_step: the env-step stop rule, shown as the denominator.
        stream: where to write (stderr by default).
        interval_s: minimum time between non-terminal updates.
        enabled: draw at all (`--quiet`: no).
    """

    def __init__(
        self,
        max_env_step: int,
        stream: TextIO | None = None,
        interval_s: float = 10.0,
        enabled: bool = True,
    ):
        self.enabled = enabled
        self.max_env_step = max_env_step
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.interval_s = interval_s if not self.tty else 0.2
        self.start = time.monotonic()
        self._last_draw = -1e9
        self.last_eval: float | None = None
        self.best_eval: float | None = None

    def eval_done(self, reward_mean: float) -> None:
        """Remember the latest and best eval reward."""
        self.last_eval = reward_mean
        self.best_eval = reward_mean if self.best_eval is None else max(self.best_eval, reward_mean)

    def update(self, envstep: int, train_iter: int, force: bool = False) -> None:
        """Redraw if enough time passed (or `force`)."""
        now = time.monotonic()
        if not self.enabled or (not force and now - self._last_draw < self.interval_s):
            return
        self._last_draw = now
        elapsed = max(now - self.start, 1e-9)
        ev = "-" if self.last_eval is None else f"{self.last_eval:.1f} (best {self.best_eval:.1f})"
        text = (
            f"env {envstep}/{self.max_env_step}  iter {train_iter}  "
            f"{envstep / elapsed:.1f} env/s  {train_iter / elapsed:.1f} it/s  "
            f"eval {ev}  {elapsed:.0f}s"
        )
        if self.tty:
            self.stream.write("\r\033[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the in-place line."""
        if self.tty and self.enabled:
            self.stream.write("\n")
            self.stream.flush()
