"""After `train --resume` on a terminal, the progress bar starts at the resumed env step and its
ETA counts only the steps this process made (through the real CLI, in a pseudo-terminal)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from tests.cli.test_cli import TINY, cli_env, run_cli

BAR = re.compile(r"\| (\d+)/(\d+) env \[[^<\]]*<([^\]]*)\]")


def on_a_terminal(*args: str, cwd: Path) -> str:
    """The CLI's output when its stdout and stderr are a terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))  # rows, columns
    proc = subprocess.Popen(
        [sys.executable, "-m", "zeropipe", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=cli_env(),
    )
    os.close(slave)
    chunks = []
    try:
        while chunk := os.read(master, 65536):
            chunks.append(chunk)
    except OSError:  # EIO: the child closed the terminal
        pass
    finally:
        os.close(master)
    assert proc.wait(timeout=200) == 0, b"".join(chunks).decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.timeout(400)
def test_a_resumed_bar_starts_at_the_resumed_env_step(tmp_path: Path):
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY.format(exp="run").replace("max_env_step: 240", "max_env_step: 120"))
    proc = run_cli("train", str(config), "--quiet", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = on_a_terminal("train", "run", "--resume", "--set", "max_env_step=240", cwd=tmp_path)
    draws = BAR.findall(text)
    assert draws, text
    first_n, total, first_eta = draws[0]
    assert int(first_n) >= 120 and total == "240", draws[:3]
    # no steps made by this process yet: no rate, so no ETA (the resumed 120 are not its own)
    assert first_eta.startswith("?"), draws[:3]
