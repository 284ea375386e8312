"""`zeropipe compare RUN_A RUN_B`: are two runs the same run, up to the shorter one's end?

Runs in: the CLI's process; reads the two runs' `log/metrics.jsonl`, trains nothing. An async run
with a budget queue of one collects and trains in the sync run's order, so its `train` lines
(the env steps and every training value, each `train_log_interval` learner steps) must equal
the sync run's at the same learner step, and its evals of the same weights must score the same.
The same holds for a stopped-and-resumed sync run against the uninterrupted one. It compares
the learner steps both logged and prints how many lines are equal and, where they part, the
first difference.

Left out of the comparison: what measures the machine or the pipeline rather than the run
(`time_s`, rates, `learner_threads`, `budget_queue_len`, the phase seconds and learner busy
fraction of the time accounting). Where a resumed log repeats a learner
step, its last line counts (the resumed run's); a line whose window (`learner_steps`, the steps
it averages) differs between the runs, as the first one after a resume, is counted and not
compared. Exit status 0 when every compared line is equal, 1 when one differs, 2 on bad input
(no metrics, no common train line).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from zeropipe.cli.curves import complete_lines
from zeropipe.cli.errors import InputError

# keys of a train line that describe the machine or the pipeline, not the run's numbers
NOT_THE_RUN = frozenset(
    {
        "event",
        "time_s",
        "learner_threads",
        "budget_queue_len",
        "learner_busy_fraction",
        "overlap_bound_s",
        "goal_eval_s",
    }
)
RATE_SUFFIXES = ("_per_s", "_per_busy_s", "_s_total")  # rates and the phases' seconds
SHOWN_KEYS = 4  # of a differing line's keys, in name order (envstep comes early)


def read_records(run: Path) -> list[dict]:
    """The whole lines of a run's `log/metrics.jsonl`, parsed."""
    metrics = run / "log" / "metrics.jsonl"
    if not metrics.is_file():
        raise InputError(f"{run} has no log/metrics.jsonl (pass a run's exp_name directory)")
    try:
        return [json.loads(x) for x in complete_lines(metrics.read_text()) if x.strip()]
    except json.JSONDecodeError as exc:
        raise InputError(f"{metrics} has a line that is not JSON: {exc}") from None


def train_lines(records: list[dict]) -> dict[int, dict]:
    """The run's numbers per learner step: the train lines without machine and pipeline keys."""
    lines = {}
    for record in records:
        if record.get("event") == "train":
            lines[record["train_iter"]] = {
                key: value
                for key, value in record.items()
                if key not in NOT_THE_RUN and not key.endswith(RATE_SUFFIXES)
            }
    return lines


def evals(records: list[dict]) -> dict[int, tuple[int, float]]:
    """(env steps, reward_mean) per evaluated weights version (a stop's final eval left out)."""
    return {
        e["policy_version"]: (e["envstep"], e["reward_mean"])
        for e in records
        if e.get("event") == "eval" and e.get("reward_mean") is not None and not e.get("final")
    }


def first_difference(a: dict, b: dict) -> str:
    """The keys where two lines differ, as `key a / b` (a key only one has counts as differing)."""
    keys = [k for k in sorted(a.keys() | b.keys()) if a.get(k) != b.get(k)]
    shown = ", ".join(f"{k} {a.get(k, '-')} / {b.get(k, '-')}" for k in keys[:SHOWN_KEYS])
    return shown + (f" (and {len(keys) - SHOWN_KEYS} more)" if len(keys) > SHOWN_KEYS else "")


def compare(run_a: Path, run_b: Path) -> tuple[bool, list[str]]:
    """Whether the two runs are the same up to the shorter one's end, and the report's lines."""
    records_a, records_b = read_records(run_a), read_records(run_b)
    train_a, train_b = train_lines(records_a), train_lines(records_b)
    common = sorted(train_a.keys() & train_b.keys())
    if not common:
        raise InputError(f"{run_a} and {run_b} have no train line at the same learner step")
    train_same, report = _compare_train(train_a, train_b, common)
    evals_same, line = _compare_evals(evals(records_a), evals(records_b))
    same = train_same and evals_same
    report += [line, f"same run up to learner step {common[-1]}" if same else "not the same run"]
    return same, report


def _compare_train(train_a: dict, train_b: dict, common: list[int]) -> tuple[bool, list[str]]:
    # A train line is a mean over the learner steps since the previous line (`learner_steps`).
    # The first line after a resume covers only the steps since the resume, so it is not the
    # same quantity as the uninterrupted run's line: such lines are counted, not compared.
    window = [
        s for s in common if train_a[s].get("learner_steps") == train_b[s].get("learner_steps")
    ]
    differ = [step for step in window if train_a[step] != train_b[step]]
    other_windows = len(common) - len(window)
    report = [
        f"train lines at the same learner step: {len(common)} ({common[0]}-{common[-1]}), "
        f"equal: {len(window) - len(differ)}"
        + (f", over other windows (a resume): {other_windows}" if other_windows else "")
    ]
    if differ:
        step = differ[0]
        report.append(
            f"first difference at learner step {step}: "
            f"{first_difference(train_a[step], train_b[step])}"
        )
    return bool(window) and not differ, report


def _compare_evals(evals_a: dict, evals_b: dict) -> tuple[bool, str]:
    both = sorted(evals_a.keys() & evals_b.keys())
    if not both:
        return True, "evals of the same weights: none (each run scored other versions)"
    unequal = [v for v in both if evals_a[v] != evals_b[v]]
    line = f"evals of the same weights: {len(both)}, equal (env steps, reward): " + str(
        len(both) - len(unequal)
    )
    return not unequal, line + "".join(f"; v{v}: {evals_a[v]} / {evals_b[v]}" for v in unequal[:3])


def add_compare_parser(sub: argparse._SubParsersAction) -> None:
    """The `compare` subcommand's arguments."""
    parser = sub.add_parser(
        "compare",
        help="are two runs the same run? (train lines and evals, up to the shorter one's end)",
        description="Exit status 0: the same run; 1: they differ (the first difference is "
        "printed); 2: bad input.",
    )
    parser.add_argument("run_a", type=Path, help="a run's directory (exp_name), e.g. the sync run")
    parser.add_argument("run_b", type=Path, help="the run to compare it with, e.g. the async run")


def run_compare(args: argparse.Namespace) -> int:
    """Print the comparison; 0 when the runs are the same run, 1 when they differ.

    Raises:
        InputError: a directory is not a run, or the runs share no train line.
    """
    same, report = compare(args.run_a, args.run_b)
    print("\n".join(report))
    return 0 if same else 1
