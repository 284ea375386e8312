"""`python -m benchmarks`: search, learner, transport and pipeline figures in one run.

The run starts with a header naming the machine, the zeropipe version and commit, and the configs
(machine.py); `--json PATH` also writes that header and every section's results there.

Long sections run only when named, each with its own options (`python -m benchmarks NAME --help`):
`pong` (the Pong pipeline, about 20 minutes), `embed` (event-loop stalls beside the driver),
`learning` (configs x seeds judged by their eval curves), `main-job` (the README's quick start
as a user runs it), `resume` (stopped-and-resumed runs against
uninterrupted ones), `neighbours` (the main job alone, beside a busy process, and two at once),
`precision` (the Pong learner under float32 and its defaults) and `search-vs-lightzero` (ms per
search of LightZero's and zeropipe's CartPole searches in alternating rounds), `search-networks`
(ms per search of the CartPole, Pong and MinAtar networks in this checkout and another, in
alternating rounds). They print the same header; their results are their own tables. Whether two
runs are the same run (an async run with a budget queue of one and its sync run, a resumed run
and the uninterrupted one) is `zeropipe compare RUN_A RUN_B`.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path

from benchmarks import (
    bench_embed,
    bench_learner,
    bench_neighbours,
    bench_pipeline,
    bench_pong,
    bench_precision,
    bench_resume,
    bench_search,
    bench_transport,
    learning,
    main_job,
    pace,
    render,
    search_networks,
    search_vs_lightzero,
)
from benchmarks.machine import describe_run, format_header

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
    "main-job": main_job.main,
    "resume": bench_resume.main,
    "neighbours": bench_neighbours.main,
    "precision": bench_precision.main,
    "pace": pace.main,
    "render": render.main,
    "search-vs-lightzero": search_vs_lightzero.main,
    "search-networks": search_networks.main,
}


def section_configs(name: str) -> object:
    """What a section runs on, for the header: its config files, or its synthetic setting."""
    if name == "search":
        return (
            f"zero-cost model, B in {bench_search.BATCH_SIZES}, A in {bench_search.NUM_ACTIONS}, "
            f"{bench_search.NUM_SIMULATIONS} simulations"
        )
    if name == "learner":
        return list(bench_learner.CONFIGS)
    if name == "pipeline":  # main() runs bench_pipeline with its defaults
        return [inspect.signature(bench_pipeline.bench_pipeline).parameters["config"].default]
    if name == "transport":
        return "synthetic weights and segments"
    return "see its own options (--help)"


def _plain(value: object) -> object:
    """A numpy scalar in a result as its Python number (json cannot write it otherwise)."""
    item = getattr(value, "item", None)
    if item is None:
        raise TypeError(f"not JSON serializable: {type(value).__name__}")
    return item()


def main() -> None:
    """Print the header, run the selected sections (all by default) and print their tables."""
    if sys.argv[1:2] and sys.argv[1] in ON_REQUEST:
        name = sys.argv[1]
        print(format_header(describe_run({name: section_configs(name)})), flush=True)
        ON_REQUEST[name](sys.argv[2:])
        return
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument(
        "sections",
        nargs="*",
        help=f"any of {', '.join(SECTIONS)} (default: all); or one of {', '.join(ON_REQUEST)} "
        "with its own options",
    )
    parser.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help="also write the header and every section's results to PATH as JSON",
    )
    args = parser.parse_args()
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s): {', '.join(sorted(unknown))}")
    names = args.sections or list(SECTIONS)
    run = describe_run({name: section_configs(name) for name in names})
    print(format_header(run), flush=True)
    results = {}
    for name in names:
        print(f"\n== {name} ==", flush=True)
        results[name] = SECTIONS[name]()
    if args.json is not None:
        text = json.dumps({**run, "results": results}, indent=2, default=_plain)
        args.json.write_text(text + "\n")
        print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
