"""`zeropipe import LIGHTZERO_CONFIG.py [-o OUT.yaml]`: a LightZero config file as a zeropipe
config, with a report of every key on stderr.

Runs in: driver. The file is read as data, never run (config/lightzero_source.py). The YAML goes
to `-o` (an existing file is not overwritten) or to stdout; the report lists each LightZero key as
mapped (to which zeropipe key), dropped (and why zeropipe does not need it) or not supported.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from zeropipe.config.errors import ConfigError


def add_import_parser(sub: argparse._SubParsersAction) -> None:
    """The `import` subcommand's arguments."""
    imp = sub.add_parser(
        "import",
        help="write a LightZero config file (main_config / create_config) as a zeropipe YAML",
    )
    imp.add_argument(
        "lightzero_config",
        type=Path,
        metavar="LIGHTZERO_CONFIG",
        help="a LightZero config .py file; it is parsed, never run",
    )
    imp.add_argument(
        "-o",
        "--output",
        type=Path,
        help="the YAML file to write (default: stdout); an existing file is not overwritten",
    )


def run_import(args: argparse.Namespace) -> int:
    """Import, print the report (stderr) and write the YAML; nothing is written on an error.

    Raises:
        ConfigError: the file cannot be read as data, or its config does not map to a valid
            zeropipe config; an existing output file.
    """
    from zeropipe.config.lightzero_import import import_lightzero

    output = args.output
    if output is not None and output.exists():
        raise ConfigError(f"-o {output}: the file exists; remove it or name another")
    imported = import_lightzero(args.lightzero_config)
    counts = {kind: 0 for kind in ("mapped", "dropped", "unsupported")}
    for line in imported.report:
        counts[line.outcome.kind] += 1
        print(line, file=sys.stderr)
    text = imported.yaml_text(args.lightzero_config.name)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text)
    where = "stdout" if output is None else str(output)
    print(
        f"imported {args.lightzero_config.name}: {counts['mapped']} keys mapped, "
        f"{counts['dropped']} dropped, {counts['unsupported']} not supported; wrote {where}",
        file=sys.stderr,
    )
    return 0
