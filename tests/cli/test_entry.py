"""The console script's entry point: a Ctrl-C while the CLI is still being imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from zeropipe.cli.entry import EXIT_INTERRUPTED
from zeropipe.cli.main import EXIT_INTERRUPTED as CLI_EXIT_INTERRUPTED

# A Ctrl-C arriving while the CLI imports yaml (one of its first imports): a finder that raises
# KeyboardInterrupt there, as Python's SIGINT handler would, then the console script's main.
INTERRUPTED_IMPORT = textwrap.dedent(
    """
    import sys

    class CtrlC:
        def find_spec(self, name, path=None, target=None):
            if name == "yaml":
                raise KeyboardInterrupt
            return None

    sys.meta_path.insert(0, CtrlC())
    from zeropipe.cli.entry import main
    sys.exit(main())
    """
)


def test_a_ctrl_c_during_the_clis_import_is_the_interrupted_line_not_a_traceback():
    proc = subprocess.run(
        [sys.executable, "-c", INTERRUPTED_IMPORT, "train", "configs/cartpole_muzero.yaml"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == EXIT_INTERRUPTED == CLI_EXIT_INTERRUPTED
    assert proc.stderr.strip() == "zeropipe: interrupted"
    assert "Traceback" not in proc.stderr + proc.stdout


def test_the_entry_point_runs_the_cli():
    proc = subprocess.run(
        [sys.executable, "-m", "zeropipe", "config", "configs/cartpole_muzero.yaml"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "type: muzero" in proc.stdout


# A module whose import is interrupted half way (a Ctrl-C while torch's C++ runs Python), then
# goes on: `import_holding_ctrl_c` must let it finish and raise the interrupt only after.
HELD_IMPORT = textwrap.dedent(
    """
    import signal, sys
    sys.path.insert(0, sys.argv[2])
    # set either way: a child inherits an ignored SIGINT (a test run started in the background)
    if sys.argv[1] == "ignored":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    from zeropipe.cli.held_import import import_holding_ctrl_c
    try:
        import_holding_ctrl_c("half_way")
    except KeyboardInterrupt:
        print("interrupted after the import:", sys.modules["half_way"].finished)
    else:
        print("no interrupt:", sys.modules["half_way"].finished)
    restored = signal.default_int_handler if sys.argv[1] == "default" else signal.SIG_IGN
    print("handler restored:", signal.getsignal(signal.SIGINT) is restored)
    """
)


@pytest.mark.parametrize(
    ("sigint", "said"),
    [("default", "interrupted after the import: True"), ("ignored", "no interrupt: True")],
)
def test_a_ctrl_c_during_a_held_import_is_raised_once_the_import_is_done(tmp_path, sigint, said):
    (tmp_path / "half_way.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nfinished = True\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", HELD_IMPORT, sigint, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [said, "handler restored: True"]


def test_an_interrupted_cli_main_leaves_the_callers_signal_handlers(monkeypatch):
    # a test or an application calling the CLI in its own process keeps its handlers: only
    # the console script ignores late interrupts, for the interpreter's teardown
    import signal

    from zeropipe.cli import entry
    from zeropipe.cli import main as cli

    def interrupted(_args):
        raise KeyboardInterrupt

    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    monkeypatch.setattr(cli, "_command", interrupted)
    assert cli.main(["config", "configs/cartpole_muzero.yaml"]) == CLI_EXIT_INTERRUPTED
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
    try:
        monkeypatch.setattr(sys, "argv", ["zeropipe", "config", "configs/cartpole_muzero.yaml"])
        assert entry.main() == EXIT_INTERRUPTED
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # the console script's exit
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])
