"""`python -m benchmarks`: search, learner and transport figures in one run.

Sections in `OPTIONAL` (the Pong pipeline, about 20 minutes) run only when named:
``python -m benchmarks pong``.
"""

from __future__ import annotations

import argparse
import sys

from benchmarks import (
    bench_embed,
    bench_learner,
    bench_pipeline,
    bench_pong,
    bench_search,
    bench_transport,
    learning,
)

SECTIONS = {
    "search": bench_search.main,
    "learner": bench_learner.main,
    "transport": bench_transport.main,
    "pipeline": bench_pipeline.main,
}
OPTIONAL = {"pong": bench_pong.main}


# Long sections, run only when named: `python -m benchmarks learning --help`, `... embed`.
ON_REQUEST = {"learning": learning.main, "embed": bench_embed.main}


def main() -> None:
    """Run the selected sections (all by default) and print their tables."""
    if sys.argv[1:2] and sys.argv[1] in ON_REQUEST:
        ON_REQUEST[sys.argv[1]](sys.argv[2:])
        return
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    names = ", ".join([*SECTIONS, *OPTIONAL])
    parser.add_argument(
        "sections", nargs="*", help=f"any of {names} (default: all but {', '.join(OPTIONAL)})"
    )
    args = parser.parse_args()
    known = {**SECTIONS, **OPTIONAL}
    unknown = set(args.sections) - set(known)
    if unknown:
        parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    for name in args.sections or SECTIONS:
        print(f"\n== {name} ==", flush=True)
        known[name]()


if __name__ == "__main__":
    main()
