"""`python -m benchmarks search-vs-lightzero --lightzero-python PATH`: ms per search of LightZero's
MuZero search beside zeropipe's, each with its CartPole network, in alternating rounds.

Runs in: its own process, which only schedules; each side searches in a long-lived child of its
own interpreter with one torch thread: zeropipe's (benchmarks/zeropipe_search_child.py, with this
interpreter) and LightZero's (benchmarks/lightzero_search_child.py, with the interpreter of a
separate environment holding LightZero 0.2.0 and its own torch: `pip install LightZero==0.2.0`
there). Each child builds its network (random init, eval mode) and fixed random roots once,
warms up, and then times N searches at a batch size B whenever asked: LightZero's
`MuZeroModelMLP` with the CartPole config's model settings (latent 128, 601-bin value and reward
supports) and its C++ tree, driven as its collector's `_forward_collect` drives it; zeropipe's
CartPole config's network and actor search, driven as its collector drives it (collect mode).

Per round and B, one side runs its N searches while the other waits on its stdin, then the
other; the side that goes first alternates by round, so neither always follows the other. This
machine's speed drifts by tens of percent within minutes, so only figures from one sitting are
compared: per B, each side's median ms per search over the rounds, their ratio (LightZero /
zeropipe), and the median and interquartile range of the per-round ratios. It then adds
zeropipe's per-simulation split at each B (benchmarks/search_timing.py's: eval searches of the
config's simulations, instrumented, so a little slower than the plain figure), and writes all of
it, with the machine header and every request's start and end, to `--out` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.machine import describe_run
from benchmarks.overrides import recorded_command
from benchmarks.search_child import Child, ChildError

ROOT = Path(__file__).resolve().parents[1]
NAME = "search-vs-lightzero"
SIDES = ("lightzero", "zeropipe")
INSTALL = (
    "search-vs-lightzero: LightZero is needed: install it in a separate virtual environment "
    "(`pip install LightZero==0.2.0`) and pass that environment's python as --lightzero-python"
)
STARTUP_TIMEOUT_S = 600.0  # LightZero's imports alone take tens of seconds on a busy machine
REQUEST_TIMEOUT_S = 600.0


def child_arguments(args: argparse.Namespace) -> list[str]:
    """The options both children take."""
    return ["--batches", ",".join(map(str, args.batches)), "--simulations", str(args.simulations)]


@dataclass(frozen=True)
class Launch:
    """How a side's child is started: its argv and environment (the working directory is the
    repository root)."""

    command: list[str]
    env: dict[str, str]


def _threads_env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def zeropipe_side(args: argparse.Namespace) -> Launch:
    """zeropipe's child: this interpreter and environment."""
    cmd = [sys.executable, "-m", "benchmarks.zeropipe_search_child", "--config", args.config]
    return Launch(cmd + child_arguments(args), _threads_env())


def lightzero_side(args: argparse.Namespace) -> Launch:
    """LightZero's child: the given interpreter running the script that lives in this
    repository, without PYTHONPATH (zeropipe's, which is not its business)."""
    script = ROOT / "benchmarks" / "lightzero_search_child.py"
    env = {k: v for k, v in _threads_env().items() if k != "PYTHONPATH"}
    return Launch([args.lightzero_python, str(script), *child_arguments(args)], env)


def alternate(
    children: dict[str, Child], batches: list[int], rounds: int, searches: int
) -> list[dict]:
    """Every request of `rounds` rounds: per round and B, both sides in turn, the first side
    alternating by round. Returns one record per request (round, B, side, ms, start, end)."""
    records = []
    for round_index in range(rounds):
        order = SIDES if round_index % 2 == 0 else SIDES[::-1]
        for batch in batches:
            for side in order:
                answer = children[side].request(
                    {"batch": batch, "searches": searches}, REQUEST_TIMEOUT_S
                )
                records.append({"round": round_index, "batch": batch, "side": side, **answer})
        line = "  ".join(
            f"B={r['batch']} {r['side']} {r['ms']:.2f}"
            for r in records
            if r["round"] == round_index
        )
        print(f"round {round_index + 1}: {line}", flush=True)
    return records


def summarize(records: list[dict], batches: list[int]) -> list[dict]:
    """Per B: each side's ms per search per round and median, the ratio of the medians and the
    per-round ratios' quartiles (LightZero / zeropipe: above 1, zeropipe is faster)."""
    rows = []
    for batch in batches:
        ms = {
            side: [r["ms"] for r in records if r["batch"] == batch and r["side"] == side]
            for side in SIDES
        }
        per_round = [a / b for a, b in zip(ms["lightzero"], ms["zeropipe"], strict=True)]
        q1, q2, q3 = _quartiles(per_round)
        rows.append(
            {
                "batch": batch,
                "lightzero_ms": statistics.median(ms["lightzero"]),
                "zeropipe_ms": statistics.median(ms["zeropipe"]),
                "ratio": statistics.median(ms["lightzero"]) / statistics.median(ms["zeropipe"]),
                "ratio_per_round": {"median": q2, "q1": q1, "q3": q3},
                "lightzero_ms_per_round": ms["lightzero"],
                "zeropipe_ms_per_round": ms["zeropipe"],
            }
        )
    return rows


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) == 1:
        return values[0], values[0], values[0]
    q1, q2, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q2, q3


def format_rows(rows: list[dict], split: dict[str, dict[str, float]] | None) -> str:
    """A Markdown table of the medians, then zeropipe's split (µs per simulation) if measured."""
    lines = [
        "| B | LightZero ms/search | zeropipe ms/search | ratio | per-round ratio [IQR] |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        rr = row["ratio_per_round"]
        lines.append(
            f"| {row['batch']} | {row['lightzero_ms']:.2f} | {row['zeropipe_ms']:.2f} "
            f"| {row['ratio']:.2f}x | {rr['median']:.2f}x [{rr['q1']:.2f}-{rr['q3']:.2f}] |"
        )
    if split:
        labels = search_labels(split)
        lines += ["", "zeropipe µs per simulation  B  " + " ".join(f"{k:>7}" for k in labels)]
        for batch, parts in split.items():
            row = " ".join(f"{parts.get(k, 0.0):7.1f}" for k in labels)
            lines.append(f"                          {batch:>3}  {row}")
    return "\n".join(lines)


def search_labels(split: dict[str, dict[str, float]]) -> list[str]:
    """The split's parts in the order they first appear, `total` last."""
    labels = [k for parts in split.values() for k in parts if k != "total"]
    return [*dict.fromkeys(labels), "total"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m benchmarks {NAME}", description=__doc__)
    parser.add_argument(
        "--lightzero-python", metavar="PATH", help="the python of an environment with LightZero"
    )
    parser.add_argument("--batches", type=_batches, default=[3, 8, 64], help="e.g. 3,8,64")
    parser.add_argument("--rounds", type=int, default=20, help="alternating rounds (R)")
    parser.add_argument("--searches", type=int, default=10, help="searches per side, B, round")
    parser.add_argument("--simulations", type=int, default=50)
    parser.add_argument("--config", default="configs/cartpole_muzero.yaml", help="zeropipe's")
    parser.add_argument("--no-split", action="store_true", help="skip zeropipe's split")
    parser.add_argument("--out", type=Path, help="write the header and results here as JSON")
    return parser


def _hide_path(arg: str, path: str) -> str:
    """`arg` as the recorded command shows it: LightZero's interpreter as PATH (a path outside
    the repository, which differs by machine)."""
    if arg == path:
        return "PATH"
    return "--lightzero-python=PATH" if arg.startswith("--lightzero-python=") else arg


def _batches(text: str) -> list[int]:
    return [int(b) for b in text.split(",")]


def _start(args: argparse.Namespace) -> dict[str, Child]:
    """Both children, started together; each warm and ready (or the install line, exit 2)."""
    launches = {"lightzero": lightzero_side(args), "zeropipe": zeropipe_side(args)}
    children = {}
    try:
        for side in SIDES:
            launch = launches[side]
            children[side] = Child(side, launch.command, launch.env, ROOT)
        for side in SIDES:
            children[side].info = children[side].ready(STARTUP_TIMEOUT_S)
    except BaseException:
        for child in children.values():
            child.close(kill=True)
        raise
    return children


def measure(args: argparse.Namespace) -> dict:
    """The two children's info, every request, the rows and zeropipe's split."""
    children = _start(args)
    try:
        records = alternate(children, args.batches, args.rounds, args.searches)
        split = None
        if not args.no_split:
            answer = children["zeropipe"].request({"split": args.batches}, REQUEST_TIMEOUT_S)
            split = answer["us_per_simulation"]
    finally:
        for child in children.values():
            child.close()
    info = {side: child.info for side, child in children.items()}
    return {"sides": info, "requests": records, "split": split}


def main(argv: list[str] | None = None) -> None:
    """Check LightZero is there, run the rounds, print the table, write the JSON."""
    argv = sys.argv[2:] if argv is None else argv
    args = _parser().parse_args(argv)
    if not args.lightzero_python or not Path(args.lightzero_python).exists():
        print(INSTALL, file=sys.stderr)
        raise SystemExit(2)
    header = describe_run({NAME: f"{args.config} and LightZero's CartPole MuZero MLP"})
    try:
        measured = measure(args)
    except ChildError as exc:
        if exc.missing:
            print(INSTALL, file=sys.stderr)
            raise SystemExit(2) from None
        raise SystemExit(f"{NAME}: {exc}") from None
    rows = summarize(measured["requests"], args.batches)
    print(format_rows(rows, measured["split"]))
    if args.out is not None:
        shown = [_hide_path(a, args.lightzero_python) for a in argv]
        result = {
            **header,
            "command": recorded_command(NAME, shown),
            "date": time.strftime("%Y-%m-%d"),
            "settings": {
                "batches": args.batches,
                "rounds": args.rounds,
                "searches_per_request": args.searches,
                "simulations": args.simulations,
                "threads_per_side": 1,
            },
            "sides": measured["sides"],
            "rows": rows,
            "zeropipe_us_per_simulation": measured["split"],
            "requests": measured["requests"],
        }
        args.out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {args.out}")
