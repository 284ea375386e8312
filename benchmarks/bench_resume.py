"""`python -m benchmarks resume`: a run stopped and resumed against the same run never stopped.

For each seed and pipeline: one run to `--to` env steps, and one stopped at `--stop` env steps and
resumed (`zeropipe train RUN --resume --set max_env_step=TO`). Sync runs are deterministic per
seed, so their scheduled evals must be identical (`same`); async runs are not, so the table gives
both curves' evals side by side and their means after the stop, and `--plot` draws them.
The stop value is lifted (`env.stop_value=1e5`) so that both runs go the whole way. Each row also
gives the learner steps each run ended with and one collect's train budget: an async resume that
drops a collector's unfinished segments trains less by up to about a budget.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

ZEROPIPE = [sys.executable, "-m", "zeropipe", "train"]


def _train(*args: str) -> None:
    done = subprocess.run([*ZEROPIPE, *args, "--quiet"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"zeropipe train {' '.join(args)} failed:\n{done.stderr[-2000:]}")


def _events(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "log" / "metrics.jsonl").read_text().splitlines()]


def scheduled_evals(run: Path) -> list[tuple[int, float]]:
    """(envstep, reward_mean) of the evals the schedule ran (a stop's final eval left out)."""
    return [
        (e["envstep"], e["reward_mean"])
        for e in _events(run)
        if e["event"] == "eval" and not e.get("final")
    ]


def pair(config: str, seed: int, pipeline: str, stop: int, to: int, out: Path) -> tuple[Path, Path]:
    """Train the uninterrupted run and the stopped-and-resumed one; their directories."""
    flag = ["--async-pipeline"] if pipeline == "async" else []
    base = [*flag, "--set", f"seed={seed}", "--set", "env.stop_value=100000"]
    whole, parts = out / f"{pipeline}_s{seed}_whole", out / f"{pipeline}_s{seed}_resumed"
    _train(config, *base, "--set", f"exp_name={whole}", "--set", f"max_env_step={to}")
    _train(config, *base, "--set", f"exp_name={parts}", "--set", f"max_env_step={stop}")
    _train(str(parts), "--resume", *flag, "--set", f"max_env_step={to}")
    return whole, parts


def learner_steps(run: Path) -> int:
    """The run's learner steps at its end (its last `stop` line)."""
    return max(e["train_iter"] for e in _events(run) if e["event"] == "stop")


def one_budget(run: Path) -> int:
    """The learner steps of the largest collect's train budget: `update_per_collect`, else the
    collect's env steps × `replay_ratio` (schedule.train_budget)."""
    policy = yaml.safe_load((run / "config.yaml").read_text())["policy"]
    if policy.get("update_per_collect") is not None:
        return int(policy["update_per_collect"])
    deltas = [e["envstep_delta"] for e in _events(run) if e["event"] == "collect"]
    return int(max(deltas, default=0) * float(policy["replay_ratio"]))


def row(seed: int, pipeline: str, whole: Path, parts: Path, stop: int) -> str:
    """One table row: identical or not, the mean eval after the stop of each run, and the
    learner steps each ended with against one collect's budget."""
    w, p = scheduled_evals(whole), scheduled_evals(parts)
    after_w = [r for s, r in w if s > stop]
    after_p = [r for s, r in p if s > stop]
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
    same = "same" if w == p else "differ"
    steps_w, steps_p = learner_steps(whole), learner_steps(parts)
    return (
        f"| {pipeline} | {seed} | {same} | {len(w)} / {len(p)} | {mean(after_w):.1f} | "
        f"{mean(after_p):.1f} | {w[-1][1] if w else float('nan'):.1f} | "
        f"{p[-1][1] if p else float('nan'):.1f} | {steps_w} / {steps_p} | "
        f"{steps_p - steps_w:+d} | {one_budget(whole)} |"
    )


def main(argv: list[str]) -> None:
    """Run the pairs and print the table (markdown)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks resume")
    parser.add_argument("--config", default="configs/cartpole_muzero.yaml")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--pipelines", nargs="+", default=["sync", "async"])
    parser.add_argument("--stop", type=int, default=2000, help="env steps of the first part")
    parser.add_argument("--to", type=int, default=6000, help="env steps of both runs")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_resume"))
    parser.add_argument("--plot", type=Path, help="also draw every run's curve to this PNG")
    args = parser.parse_args(argv)
    print(f"config {args.config}, stop at {args.stop}, resume to {args.to} env steps")
    print("| pipeline | seed | evals | count (whole / resumed) | mean after stop, whole | "
          "resumed | last eval, whole | resumed | learner steps (whole / resumed) | "
          "resumed - whole | one budget |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    runs = []
    for pipeline in args.pipelines:
        for seed in args.seeds:
            whole, parts = pair(args.config, seed, pipeline, args.stop, args.to, args.out)
            print(row(seed, pipeline, whole, parts, args.stop), flush=True)
            runs += [whole, parts]
    if args.plot is not None:
        plot_pairs(runs[0::2], runs[1::2], args.stop, args.plot)


def plot_pairs(wholes: list[Path], resumed: list[Path], stop: int, output: Path) -> None:
    """The uninterrupted runs and the resumed ones as two groups (seed bands) in one PNG.

    `zeropipe plot` groups runs by config, which puts both kinds in one group; here each kind is
    its own group."""
    from zeropipe.cli.curves import RunGroup, draw_curves, read_run

    groups = [
        RunGroup(f"uninterrupted ({len(wholes)} seeds)", [read_run(p) for p in wholes]),
        RunGroup(
            f"stopped at {stop} env steps, resumed ({len(resumed)} seeds)",
            [read_run(p) for p in resumed],
        ),
    ]
    fig = draw_curves(groups, "envstep")
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=100)
