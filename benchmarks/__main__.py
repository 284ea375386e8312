"""`python -m benchmarks`: search, learner, transport and pipeline figures in one run.

Long sections run only when named, each with its own options (`python -m benchmarks NAME --help`):
`pong` (the Pong pipeline, about 20 minutes), `embed` (event-loop stalls beside the driver),
`learning` (configs x seeds judged by their eval curves), `resume` (stopped-and-resumed runs
against uninterrupted ones) and `neighbours` (the main job alone, beside a busy process, and two
at once).
"""

from __future__ import annotations

import argparse
import sys

from benchmarks import (
    bench_embed,
    bench_learner,
    bench_neighbours,
    bench_pipeline,
    bench_pong,
    bench_resume,
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
ON_REQUEST = {
    "pong": bench_pong.main,
    "embed": bench_embed.main,
    "learning": learning.main,
    "resume": bench_resume.main,
    "neighbours": bench_neighbours.main,
}


def main() -> None:
    """Run the selected sections (all by default) and print their tables."""
    if sys.argv[1:2] and sys.argv[1] in ON_REQUEST:
        ON_REQUEST[sys.argv[1]](sys.argv[2:])
        return
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument(
        "sections",
        nargs="*",
        help=f"any of {', '.join(SECTIONS)} (default: all); or one of {', '.join(ON_REQUEST)} "
        "with its own options",
    )
    args = parser.parse_args()
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    for name in args.sections or SECTIONS:
        print(f"\n== {name} ==", flush=True)
        SECTIONS[name]()


if __name__ == "__main__":
    main()
