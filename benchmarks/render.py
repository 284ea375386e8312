"""`python -m benchmarks render`: the results pages' figures, rendered from committed JSON.

Runs in: its own process; trains nothing. Reads every `benchmarks/results/*.json` that a
`pace`, `pong` or `learning` run wrote (`--json`, or the learning run's `learning.json`, copied
here) and writes

- `docs/async_time.md`, the whole page: per file, its date, machine, commit and command, its
  `note` (what the command does not show, such as the settings the configs had then), then its
  table as the benchmark prints it (`pace`, `pong`, `learning`, `search-vs-lightzero` and
  `search-networks` files); but a learning file marked `"wall_clock": false` (runs made two at
  a time or beside other work: its env steps are the figure, its wall seconds are not) is left
  off this page, and can be no config's `current` file;
- the marked section of `docs/results.md` (between `RESULTS_BEGIN` and `RESULTS_END`; the rest
  of that page is written by hand): per learning file the same header, then success and env
  steps to the threshold per config and pipeline; and its MinAtar matrix (`render_minatar`);
- the README's headline table (between `README_BEGIN` and `README_END`): the current rows
  (`current_rows`: each config as shipped), their dates, machine and run count, then success and
  wall seconds to the goal, sync against async. No commit there (the README names none); the
  wall-clock page gives it. And its quick start's figure, from the newest `main-job` file
  (`main_job.readme_lines`), and its search table, from the newest `search-vs-lightzero` file
  (`render_search.readme_lines`);
- the marked results section of each policy type's page (`render_policies`);
- every plot the pages show (`render_plots`), drawn from the same files.

`--check` writes nothing and exits 1 when a committed page differs from what the files render
(the test suite checks the same).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from benchmarks import main_job, render_minatar, render_plots, render_policies, render_search
from benchmarks.learning_pace import is_paced, paced_note, paced_rows
from benchmarks.learning_rows import Row as LearningRow
from benchmarks.learning_time import (
    WALL,
    format_censored,
    format_pace,
    format_phases,
    format_time_table,
    wall_ratios,
)
from benchmarks.pace import Row as PaceRow
from benchmarks.pace import format_rows
from benchmarks.search_networks import NAME as NETWORKS_NAME

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "async_time.md"
RESULTS_PAGE = ROOT / "docs" / "results.md"
RESULTS_BEGIN = (
    "<!-- rendered by `python -m benchmarks render` from benchmarks/results/: do not edit -->"
)
RESULTS_END = "<!-- end of the rendered section -->"
README = ROOT / "README.md"
README_BEGIN = "<!-- headline rendered by `python -m benchmarks render`: do not edit -->"
README_END = "<!-- end of the headline -->"
INTRO = """# Async against sync: wall-clock time

Rendered by `python -m benchmarks render` from the JSON files in `benchmarks/results/`; do not
edit by hand. Every figure comes from runs made one at a time on the machine named with it.
"Wall s" is a process's wall time, start to exit. The perfect-overlap bound of a sync run is its
wall time less the shorter side of max(train + driver, collect + eval - goal eval): what an async
run of the same work could take at best ([where the time goes](async.md#where-the-time-goes)). The
goal eval, the eval whose result reached the goal, cannot be hidden; runs whose `stop` line has no
`goal_eval_s` (the files before it existed) count it as hideable, a bound lower than it should be.
Medians of wall seconds and env steps are over every seed run: a seed that never reached the goal
counts as slower than every seed that did ("not reached" when that is half of them or more).
A row marked "(computed)" was too costly to run to the goal one run at a time: its wall seconds
are each seed's env steps to the threshold, from learning runs that shared the cores, over the
median env steps per second of runs made one at a time to a fixed budget (a `pace` file); its
interval resamples both, and its overlap bound and phases are the pace runs'.
"""


def render() -> str:
    """The page's text."""
    parts = [INTRO, *_current_table()]
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text())
        if main_job.SECTION in data["sections"]:  # the README's quick start shows it
            continue
        if data.get("wall_clock", True):  # a file whose wall seconds are no measurement: not here
            parts.append(_section(path.stem, data))
    return "\n".join(parts)


def current_rows() -> tuple[list[LearningRow], dict[str, str], list[dict]]:
    """The rows each learning file names `current` (the configs as shipped, at the code of their
    file): the rows, the file each config's rows came from, and those files' data.

    Raises:
        ValueError: two files name the same config current, or a file without wall-clock
            figures names one.
    """
    rows, sources, files = [], {}, []
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text())
        current = data.get("current", []) if "learning" in data["sections"] else []
        if current and not data.get("wall_clock", True):
            raise ValueError(f"{path.stem} has no wall-clock figures; it cannot be current")
        files += [data] if current else []
        for row in learning_rows(data) if current else []:
            stem = Path(row.config).stem
            if stem not in current:
                continue
            if sources.setdefault(stem, path.stem) != path.stem:
                raise ValueError(f"{stem} is current in {sources[stem]} and {path.stem}")
            rows.append(row)
    return rows, sources, files


def learning_rows(data: dict) -> list[LearningRow]:
    """A learning file's rows; where the file names a pace file (`"pace": stem`), with their
    wall-clock fields computed from it (`benchmarks.learning_pace`)."""
    rows = [LearningRow(**row) for row in data["rows"]]
    if not data.get("pace"):
        return rows
    pace = json.loads((RESULTS / f"{data['pace']}.json").read_text())
    return paced_rows(rows, pace["rows"])


def _paced_notes(rows: list[LearningRow], files: dict[str, str]) -> list[str]:
    """A line per config whose walls were computed, naming the pace file (`files`: config stem
    -> that pace file's stem)."""
    stems = dict.fromkeys(Path(r.config).stem for r in rows if is_paced(r))
    return [f"- {paced_note(stem, files[stem])}" for stem in stems]


def _current_table() -> list[str]:
    """One table of the current rows (`current_rows`), with the file each came from."""
    rows, sources, _files = current_rows()
    if not rows:
        return []
    where = [f"- {stem}: [{name}](#{name})" for stem, name in sources.items()]
    paces = {
        s: json.loads((RESULTS / f"{n}.json").read_text()).get("pace") for s, n in sources.items()
    }
    where += _paced_notes(rows, paces)
    return [
        "## Each config as shipped",
        "",
        "The newest measurement of each shipped config; each row's file (below) gives its date, "
        "commit, command and what changed since.",
        "",
        format_time_table(rows),
        "",
        *where,
        "",
        f"![Each shipped config, sync and async, per seed]({render_plots.SHIPPED.name})",
        "",
        "Each dot is a seed that reached the threshold, each bar its pipeline's median over "
        "those seeds; the label counts them, sync then async.",
        "",
    ]


def _header(title: str, data: dict) -> list[str]:
    """A file's title, then its date, machine, torch, commit, command and note."""
    machine = data["machine"]
    return [
        title,
        "",
        f"{data.get('date', 'undated')}; {machine['cpu_model']}, {machine['cores']} cores; "
        f"torch {data['torch']['version']}; commit {data['zeropipe']['commit']}.",
        "",
        "```text",
        data["command"],
        "```",
        "",
        *([data["note"], ""] if data.get("note") else []),
    ]


def _section(name: str, data: dict) -> str:
    head = _header(f"## {name}", data)
    if "pace" in data["sections"]:
        table = format_rows([PaceRow(**row) for row in data["rows"]])
        return "\n".join([*head, table, ""])
    if "pong" in data["sections"]:
        return "\n".join([*head, *_window_table(data["rows"]), ""])
    if "search-vs-lightzero" in data["sections"]:
        return "\n".join([*head, *_search_table(data), ""])
    if NETWORKS_NAME in data["sections"]:
        return "\n".join([*head, *render_search.networks_table(data), ""])
    rows = learning_rows(data)
    pace = format_pace(rows)
    notes = _paced_notes(rows, dict.fromkeys((Path(r.config).stem for r in rows), data.get("pace")))
    tail = [format_phases(rows), *([pace] if pace else []), ""]
    return "\n".join([*head, format_time_table(rows), "", *notes, *([""] if notes else []), *tail])


def _search_table(data: dict) -> list[str]:
    """`python -m benchmarks search-vs-lightzero` rows: ms per search of each side (medians over
    alternating rounds, one thread each), their ratio with its interquartile range over rounds,
    and what each side's network is."""
    sides = data["sides"]
    lines = [
        f"{data['settings']['simulations']} simulations, {data['settings']['rounds']} rounds; "
        f"LightZero {sides['lightzero']['lightzero']} (torch {sides['lightzero']['torch']}, "
        f"{sides['lightzero']['parameters']:,} parameters, supports of "
        f"{sides['lightzero']['value_support_size']} bins), zeropipe "
        f"{sides['zeropipe']['config']} (torch {sides['zeropipe']['torch']}, "
        f"actor_inference {sides['zeropipe']['actor_inference']}).",
        "",
        "| B | LightZero ms/search | zeropipe ms/search | LightZero / zeropipe | per round [IQR] |",
        "|---|---|---|---|---|",
    ]
    for row in data["rows"]:
        spread = row["ratio_per_round"]
        lines.append(
            f"| {row['batch']} | {row['lightzero_ms']:.1f} | {row['zeropipe_ms']:.1f} "
            f"| {row['ratio']:.2f}x | {spread['median']:.2f}x [{spread['q1']:.2f}-"
            f"{spread['q3']:.2f}] |"
        )
    return lines


def _window_table(rows: list[dict]) -> list[str]:
    """`python -m benchmarks pong` rows: per config, sync and async over the same wall window,
    their rates, async / sync, and the seconds by phase that explain the ratio."""
    lines = [
        "| config | window s | pipeline | env steps/s | learner steps/s | learner busy "
        "| collect / train / driver / eval / wait s |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for name in ("sync", "async"):
            run = row[name]
            phases = " / ".join(f"{s:.1f}" for s in run.get("phase_s", {}).values()) or "-"
            busy = run.get("learner_busy_fraction")
            lines.append(
                f"| {Path(row['config']).stem} | {row['window_s']:.0f} | {name} "
                f"| {run['envstep_per_s']:.2f} | {run['learner_steps_per_s']:.2f} "
                f"| {'-' if busy is None else f'{busy:.2f}'} | {phases} |"
            )
        env, learner = (row["ratio"][k] for k in ("envstep_per_s", "learner_steps_per_s"))
        lines.append(
            f"| {Path(row['config']).stem} | | async / sync | {_ratio(env)} | {_ratio(learner)} "
            "| | |"
        )
    return lines


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}×"


def render_results(page: str) -> str:
    """`page` (docs/results.md's text) with its marked section rendered from the learning files.

    Raises:
        ValueError: the page lacks either marker line, or has them out of order.
    """
    section = []
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text())
        if "learning" in data["sections"]:
            section += _learning_summary(path.stem, data)
    return _between(page, RESULTS_BEGIN, RESULTS_END, section, RESULTS_PAGE)


def render_readme(page: str) -> str:
    """`page` (README.md's text) with its headline table rendered from the current rows.

    Raises:
        ValueError: the page lacks either marker line, or has them out of order.
    """
    rows, sources, _files = current_rows()
    walls = wall_ratios(rows)
    pairs: dict[str, dict[str, LearningRow]] = {}
    for row in rows:
        pairs.setdefault(row.config, {})[row.pipeline] = row
    table = [
        "Median wall seconds from start to the goal (an eval's mean at the threshold), each config "
        "as shipped, one run at a time on a quiet machine; async / sync below 1: async got there "
        'sooner. "computed": env steps to the goal over env steps per second, each measured on '
        "its own ([how](docs/async_time.md)).",
        "",
        "| config | goal | measured on | reached sync / async | wall s, sync | async "
        "| async / sync [95%] |",
        "|---|---|---|---|---|---|---|",
    ]
    for config, pair in pairs.items():
        if {"sync", "async"} - pair.keys():
            continue
        s, a = pair["sync"], pair["async"]
        data = json.loads((RESULTS / f"{sources[Path(config).stem]}.json").read_text())
        where = f"{_cpu_name(data['machine'])}, {data['machine']['cores']} cores, {data['date']}"
        ratio = walls.get(config)
        spread = "-" if ratio is None else f"{ratio.ratio:.2f} [{ratio.low:.2f}, {ratio.high:.2f}]"
        table.append(
            f"| {Path(config).stem}{' (computed)' if is_paced(s) else ''} | {s.threshold:g} "
            f"| {where} | {len(getattr(s, WALL))}/{s.seeds}, {len(getattr(a, WALL))}/{a.seeds} "
            f"| {format_censored(s, WALL)} | {format_censored(a, WALL)} | {spread} |"
        )
    page = _between(page, README_BEGIN, README_END, [*table, ""], README)
    search = main_job.newest(RESULTS, render_search.SECTION)
    if search is not None:
        lines = render_search.readme_lines(search, _cpu_name(search["machine"]))
        page = _between(page, render_search.README_BEGIN, render_search.README_END, lines, README)
    job = main_job.newest(RESULTS)
    if job is None:
        return page
    lines = main_job.readme_lines(job, _cpu_name(job["machine"]))
    return _between(page, main_job.README_BEGIN, main_job.README_END, lines, README)


def _cpu_name(machine: dict) -> str:
    """The CPU's model without its trademarks (Intel(R) Xeon(R) Processor -> Intel Xeon)."""
    words = machine["cpu_model"].replace("(R)", "").replace("(TM)", "").split()
    return " ".join(w for w in words if w.lower() not in ("processor", "cpu"))


def _between(page: str, begin: str, end: str, section: list[str], where: Path) -> str:
    """`page` with the lines between its `begin` and `end` marker lines replaced by `section`.

    Raises:
        ValueError: the page lacks either marker line, or has them out of order.
    """
    lines = page.split("\n")
    if begin not in lines or end not in lines:
        raise ValueError(f"{where} needs the lines {begin!r} and {end!r}")
    first, last = lines.index(begin), lines.index(end)
    if last < first:
        raise ValueError(f"{where}: {end!r} comes before {begin!r}")
    return "\n".join([*lines[: first + 1], "", *section, *lines[last:]])


def _learning_summary(name: str, data: dict) -> list[str]:
    """A learning file's header and one row per config and pipeline: success, env steps."""
    rows = [LearningRow(**row) for row in data["rows"]]
    table = [
        "| config | pipeline | threshold | success | env steps to threshold, median [min–max] |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        steps = row.envsteps_to_threshold
        spread = (
            f"{statistics.median(steps):,.0f} [{min(steps):,}–{max(steps):,}]" if steps else "-"
        )
        table.append(
            f"| {Path(row.config).stem} | {row.pipeline} | {row.threshold:g} "
            f"| {row.successes}/{row.seeds} | {spread} |"
        )
    return [*_header(f"### {name}", data), *table, ""]


def pages() -> dict[Path, str]:
    """Each rendered page -> the text it should have."""
    results = RESULTS_PAGE.read_text() if RESULTS_PAGE.is_file() else ""
    return {
        PAGE: render(),
        RESULTS_PAGE: render_minatar.render(
            render_results(results),
            current_rows()[0],
            ROOT / "configs",
            lambda *marked: _between(*marked, RESULTS_PAGE),
        ),
        README: render_readme(README.read_text()),
        **render_policies.pages(RESULTS, _between),
    }


def plots() -> dict[Path, dict]:
    """Each plot the pages show -> the data it is drawn from."""
    return render_plots.plots(current_rows()[0])


def main(argv: list[str] | None = None) -> None:
    """Write the pages, or with --check compare them."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks render", description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    rendered, drawn = pages(), plots()
    if args.check:
        stale = [p for p, text in rendered.items() if not p.is_file() or p.read_text() != text]
        stale += [p for p, data in drawn.items() if not render_plots.is_current(p, data)]
        for path in stale:
            print(f"{path} is not what `python -m benchmarks render` makes of {RESULTS}")
        if stale:
            sys.exit(1)
        return
    for path, text in rendered.items():
        path.write_text(text)
        print(f"wrote {path}")
    for path, data in drawn.items():
        if not render_plots.is_current(path, data):
            path.write_bytes(render_plots.draw(path, data))
        print(f"drew {path}")


if __name__ == "__main__":
    main()
