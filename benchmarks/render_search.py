"""The README's search table, rendered from the newest `search-vs-lightzero` results file.

Runs in: `python -m benchmarks render`. The file's whole record (every round, zeropipe's split
per simulation) is on the wall-clock page (docs/async_time.md); the README shows its medians per
batch size, the ratio with its spread over rounds, and what each side ran.
"""

from __future__ import annotations

from benchmarks.search_networks import format_table

SECTION = "search-vs-lightzero"
README_BEGIN = "<!-- search rendered by `python -m benchmarks render`: do not edit -->"
README_END = "<!-- end of the search table -->"


def readme_lines(data: dict, cpu: str) -> list[str]:
    """The README's lines for the file `data`, measured on a CPU named `cpu`."""
    settings, sides = data["settings"], data["sides"]
    lightzero, ours = sides["lightzero"], sides["zeropipe"]
    lines = [
        f"ms per search of LightZero {lightzero['lightzero']}'s MuZero search (its C++ tree) and "
        f"of zeropipe's, each with its own CartPole MuZero network, {settings['simulations']} "
        f"simulations, one thread each, {settings['rounds']} alternating rounds in one sitting on "
        f"a {data['machine']['cores']}-core {cpu} ({data['date']}); medians over the rounds:",
        "",
        "| B | LightZero | zeropipe | LightZero / zeropipe [IQR over rounds] |",
        "|---|---|---|---|",
    ]
    for row in data["rows"]:
        spread = row["ratio_per_round"]
        lines.append(
            f"| {row['batch']} | {row['lightzero_ms']:.1f} | {row['zeropipe_ms']:.2f} "
            f"| {spread['median']:.1f}x [{spread['q1']:.1f}-{spread['q3']:.1f}] |"
        )
    lines += [
        "",
        f"LightZero: torch {lightzero['torch']}, {lightzero['parameters']:,} parameters, "
        f"{lightzero['value_support_size']}-bin supports; zeropipe: torch {ours['torch']}, "
        f"{ours['parameters']:,} parameters, `{ours['config']}` with `actor_inference: "
        f"{ours['actor_inference']}`. The command, with LightZero installed in a separate "
        "environment: `python -m benchmarks search-vs-lightzero --lightzero-python PATH`; every "
        "round and the split per simulation: [Async against sync: wall-clock]"
        "(docs/async_time.md).",
        "",
    ]
    return lines


def networks_table(data: dict) -> list[str]:
    """A `search-networks` file's lines: what the two sides are, then the table."""
    settings, before = data["settings"], data["before"]
    modes = sorted({str(row.get("current_actor_inference")) for row in data["rows"]})
    return [
        f"Eval searches of each config's untrained network, one thread, batch sizes "
        f"{settings['batches']}, {settings['rounds']} alternating rounds (medians); before: "
        f"{before['commit']}; current: the file's commit, `actor_inference` "
        f"{', '.join(modes)}.",
        "",
        format_table(data["rows"]),
    ]
