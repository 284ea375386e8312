"""A benchmark's long-lived child process that answers one JSON line per JSON request line, with a
deadline on every answer (the children of `search-vs-lightzero`).

Runs in: the benchmark's process. The child's stderr goes to a temporary file, whose tail is in
the error when the child dies or misses a deadline; closing stdin asks it to exit, and one that
does not within CLOSE_TIMEOUT_S is killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import tempfile
import time
from pathlib import Path

CLOSE_TIMEOUT_S = 30.0
STDERR_TAIL_BYTES = 3000


class ChildError(RuntimeError):
    """A child died, missed a deadline or answered an error; `missing`: it could not import
    what it measures."""

    def __init__(self, message: str, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


class Child:
    """One child process and its line protocol.

    Args:
        name: the side it measures, for messages.
        command: its argv.
        env: its environment.
        cwd: its working directory.
    """

    def __init__(self, name: str, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.name = name
        self.info: dict = {}
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self._buffer = b""
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=cwd,
        )

    def ready(self, timeout_s: float) -> dict:
        """Wait for its `ready` answer and return what it built.

        Raises:
            ChildError: it died, took longer than `timeout_s`, or cannot import its library
                (`missing`).
        """
        answer = self._receive(timeout_s)
        if "missing" in answer:
            raise ChildError(f"{self.name}: {answer['missing']}", missing=True)
        if "ready" not in answer:
            raise ChildError(f"{self.name}: expected ready, got {answer}")
        return answer["ready"]

    def request(self, message: dict, timeout_s: float) -> dict:
        """Send one request and return its answer (within `timeout_s`)."""
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            code = self.proc.wait()
            raise ChildError(f"{self.name}: exited with code {code}{self._tail()}") from None
        return self._receive(timeout_s)

    def _receive(self, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChildError(f"{self.name}: no answer within {timeout_s:.0f} s{self._tail()}")
            readable, _, _ = select.select([fd], [], [], left)
            if not readable:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                code = self.proc.wait()
                raise ChildError(f"{self.name}: exited with code {code}{self._tail()}")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def _tail(self) -> str:
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - STDERR_TAIL_BYTES))
        text = self._stderr.read().decode(errors="replace").strip()
        return f"; its stderr ends:\n{text}" if text else ""

    def close(self, kill: bool = False) -> None:
        """Close its stdin (it exits), kill it if it has not within CLOSE_TIMEOUT_S (at once with
        `kill`: after a failure its answers are not wanted), reap it."""
        if kill:
            self.proc.kill()
        with contextlib.suppress(OSError):  # it is gone already: the pipe is broken
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self._stderr.close()
