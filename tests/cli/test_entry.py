"""The console script's entry point: a Ctrl-C while the CLI is still being imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

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
