"""The plots of the results pages, drawn from the committed JSON by `python -m benchmarks render`.

Every image the pages show is one of `PLOTS`; nothing else under docs/ is a plot (a test checks
it), so no image can outlive the data it was drawn from.

A plot is drawn the same way every time: the Agg backend, matplotlib's default style with a fixed
size, dpi and font size, and no creation time or software tag in the PNG. Its `Description` text
chunk holds the SHA-256 of the data it was drawn from and the matplotlib version that drew it.
`is_current` compares the committed file's bytes with a fresh drawing when the installed
matplotlib is the one that drew it (a new matplotlib may move a pixel), and otherwise the data
digest alone.
"""

from __future__ import annotations

import hashlib
import io
import json
import statistics
from pathlib import Path

import matplotlib

from benchmarks.learning_time import STEPS, WALL

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SHIPPED = DOCS / "results_shipped.png"
SIZE_IN = (10.0, 5.5)
DPI = 100
COLOURS = {"sync": "tab:blue", "async": "tab:orange"}
PANELS = ((STEPS, "env steps to the threshold (log)"), (WALL, "wall s to the goal (log)"))


def shipped_data(rows) -> dict:
    """What the shipped-configs plot draws: per config (in `rows`' order) and pipeline, the seed
    count and the sorted env steps and wall seconds of the seeds that reached the threshold.

    `rows` are `benchmarks.learning.Row`s, as `benchmarks.render.current_rows` gives them.
    """
    data: dict = {"configs": {}}
    for row in rows:
        config = data["configs"].setdefault(Path(row.config).stem, {"threshold": row.threshold})
        config[row.pipeline] = {
            "seeds": row.seeds,
            STEPS: sorted(getattr(row, STEPS)),
            WALL: sorted(round(s, 3) for s in getattr(row, WALL)),
        }
    return data


def digest(data: dict) -> str:
    """SHA-256 of the data's canonical JSON."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _description(data: dict) -> str:
    return f"data sha256 {digest(data)}; matplotlib {matplotlib.__version__}"


def draw_shipped(data: dict) -> bytes:
    """The PNG: one row per config, each seed that reached the threshold a dot (sync above,
    async below), each pipeline's median over those seeds a bar; the label counts the seeds."""
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    configs = list(data["configs"])
    with plt.style.context("default"), plt.rc_context({"font.size": 9, "svg.hashsalt": "0"}):
        fig, axes = plt.subplots(1, 2, figsize=SIZE_IN, dpi=DPI, sharey=True)
        for ax, (field, title) in zip(axes, PANELS, strict=True):
            for y, config in enumerate(configs):
                for offset, pipeline in ((-0.17, "sync"), (0.17, "async")):
                    values = data["configs"][config].get(pipeline, {}).get(field, [])
                    colour = COLOURS[pipeline]
                    ax.plot(values, [y + offset] * len(values), "o", ms=4, color=colour, alpha=0.7)
                    if values:
                        mid = statistics.median(values)
                        ax.plot([mid], [y + offset], "|", ms=14, mew=2, color=colour)
            ax.set_xscale("log")
            ax.set_xlabel(title)
            ax.grid(True, axis="x", alpha=0.3)
        labels = [_label(config, data["configs"][config]) for config in configs]
        axes[0].set_yticks(range(len(configs)), labels)
        axes[0].invert_yaxis()
        for pipeline, colour in COLOURS.items():
            axes[1].plot([], [], "o", color=colour, label=pipeline)
        # above the panel, where no row of dots lies
        axes[1].legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
        thresholds = {run["threshold"] for run in data["configs"].values()}
        goal = f"{thresholds.pop():g}" if len(thresholds) == 1 else "its threshold"
        fig.suptitle(f"Each config as shipped: the seeds that reached {goal}")
        fig.tight_layout()
        out = io.BytesIO()
        metadata = {"Software": None, "Description": _description(data)}
        fig.savefig(out, format="png", metadata=metadata)
        plt.close(fig)
    return out.getvalue()


def _label(config: str, pipelines: dict) -> str:
    counts = ", ".join(
        f"{len(run[STEPS])}/{run['seeds']}" for name in COLOURS if (run := pipelines.get(name))
    )
    return f"{config}\n({counts})"


def plots(rows) -> dict[Path, dict]:
    """Each plot the pages show -> the data it is drawn from."""
    return {SHIPPED: shipped_data(rows)} if rows else {}


DRAW = {SHIPPED: draw_shipped}


def draw(path: Path, data: dict) -> bytes:
    """The PNG bytes of plot `path` drawn from `data`."""
    return DRAW[path](data)


def is_current(path: Path, data: dict) -> bool:
    """Whether the committed plot at `path` is what `data` draws (the module docstring: bytes
    under the matplotlib that drew it, else the data digest)."""
    if not path.is_file():
        return False
    from PIL import Image

    with Image.open(path) as image:
        description = image.text.get("Description", "")
    if description == _description(data):
        return path.read_bytes() == draw(path, data)
    return description.startswith(f"data sha256 {digest(data)}; ")
