"""`python -m benchmarks main-job`: the README's quick start, timed as a user meets it.

Runs in: its own process; the run is the real console command in a subprocess. `make train`
runs `zeropipe train configs/cartpole_muzero.yaml`; this runs the same command, in a fresh
working directory (so the run directory is the config's own `runs/cartpole_muzero/` and the last
line reads as the user's does) and with an empty cache of numba's compiled search kernels (the
first run of a fresh clone compiles them), and writes a JSON file with the machine header: the
command, its exit status, its wall seconds, and the line it ended with. `python -m benchmarks
render` puts the newest such file into the README's quick start.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import ROOT, describe_run, format_header
from benchmarks.overrides import recorded_command

CONFIG = "configs/cartpole_muzero.yaml"  # the Makefile's CONFIG
STOPPED = "stopped:"  # the CLI's last line of a run that met a stop rule
SECTION = "main-job"  # its name in a results file's `sections`
README_BEGIN = "<!-- main job rendered by `python -m benchmarks render`: do not edit -->"
README_END = "<!-- end of the main job -->"


def newest(results: Path, section: str = SECTION) -> dict | None:
    """The newest results file of `section` (main-job files by default) in `results`, by date
    then name, or None."""
    found = []
    for path in sorted(results.glob("*.json")):
        data = json.loads(path.read_text())
        if section in data["sections"]:
            found.append((data["date"], path.name, data))
    return max(found, key=lambda f: f[:2])[2] if found else None


def readme_lines(data: dict, cpu: str) -> list[str]:
    """The README's quick-start figure: where and when, the wall seconds and the last line
    (`cpu`: the CPU's name as the README's tables give it)."""
    job = data["main_job"]
    cores = data["machine"]["cores"]
    return [
        f"A first run (numba's compiled search kernels not yet cached, as in a fresh clone) on a "
        f"{cores}-core {cpu} ({data['date']}) exited after {job['process_wall_s']:.0f} s with:",
        "",
        "```text",
        job["last_line"],
        "```",
        "",
    ]


def run_main_job(config: str = CONFIG) -> dict:
    """Run `zeropipe train CONFIG` as `make train` does, in a fresh working directory.

    Returns:
        The command, its exit status, its wall seconds and its last line.

    Raises:
        RuntimeError: the run did not end with a `stopped:` line (its output is in the message).
    """
    command = [sys.executable, "-m", "zeropipe", "train", str(ROOT / config)]
    with tempfile.TemporaryDirectory() as cwd:
        caches = {"NUMBA_CACHE_DIR": f"{cwd}/numba"}  # empty: compiled as a fresh clone does
        start = time.monotonic()
        done = subprocess.run(
            command,
            cwd=cwd,
            env={**os.environ, **caches},
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.monotonic() - start
    lines = [line for line in done.stdout.splitlines() + done.stderr.splitlines() if line]
    last = next((line for line in reversed(lines) if line.startswith(STOPPED)), None)
    if last is None:
        tail = "\n".join(lines[-10:])
        status = done.returncode
        raise RuntimeError(f"the run ended without a '{STOPPED}' line (status {status}):\n{tail}")
    return {
        "command": f"zeropipe train {config}",
        "returncode": done.returncode,
        "process_wall_s": round(wall, 1),
        "numba_cache": "empty, as in a fresh clone's first run",
        "last_line": last,
    }


def main(argv: list[str] | None = None) -> None:
    """Time the main job once and write its JSON."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks main-job", description=__doc__)
    parser.add_argument("--config", default=CONFIG)
    parser.add_argument("--json", type=Path, help="where to write the result (default: print)")
    args = parser.parse_args(argv)
    header = describe_run({"main-job": [args.config]})
    print(format_header(header), flush=True)
    result = run_main_job(args.config)
    print(f"{result['last_line']}  (process wall {result['process_wall_s']} s)")
    data = {
        **header,
        "command": recorded_command(SECTION, argv if argv is not None else sys.argv[2:]),
        "date": time.strftime("%Y-%m-%d"),
        "main_job": result,
    }
    if args.json is not None:
        args.json.write_text(json.dumps(data, indent=2) + "\n")
        print(f"written: {args.json}")


if __name__ == "__main__":
    main()
