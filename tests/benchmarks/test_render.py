"""The wall-clock results page, the rendered section of the results page, the README's headline
table, the rendered results of each policy type's page and every plot the pages show are what
`python -m benchmarks render` makes of the committed JSON files: a figure there cannot be typed by
hand or go stale, and no image without committed data behind it stays under docs/."""

from __future__ import annotations

import io
import json
import re

import pytest
from benchmarks.learning_rows import Row as LearningRow

from benchmarks import (
    main_job,
    render,
    render_minatar,
    render_plots,
    render_policies,
    render_search,
)


def test_the_committed_page_is_the_rendered_one():
    assert render.PAGE.read_text() == render.render()


def test_the_committed_results_page_is_the_rendered_one():
    page = render.RESULTS_PAGE.read_text()
    assert page == render.render_results(page)


def test_the_committed_readme_headline_is_the_rendered_one():
    page = render.README.read_text()
    assert page == render.render_readme(page)


def test_the_readme_headline_is_the_headline_files_wall_time_side_by_side():
    job = f"{main_job.README_BEGIN}\nstale\n{main_job.README_END}\n"
    search = f"{render_search.README_BEGIN}\nstale\n{render_search.README_END}\n"
    page = "# zeropipe\n" + render.README_BEGIN + "\nstale\n" + render.README_END + "\nrest\n"
    out = render.render_readme(job + page + search)
    # the newest search-vs-lightzero file's medians, LightZero / zeropipe per B
    assert "| 8 | 19.3 | 1.78 | 10.9x [10.6-11.1] |" in out
    assert "`actor_inference: compiled`" in out and "torch 2.13.0+cpu" in out
    out = out[: out.index(render_search.README_BEGIN)]
    assert out.startswith(job.split("stale")[0] + "\nA first run ")
    assert "```text\nstopped: stop_value at env step 2040, " in out  # the main job's last line
    out = out[out.index("# zeropipe") :]
    assert out.startswith("# zeropipe\n" + render.README_BEGIN + "\n\nMedian wall seconds ")
    assert out.endswith("\n\n" + render.README_END + "\nrest\n")
    assert "stale" not in out and "commit" not in out  # the README names no commit
    # each config's current row, as the wall-clock page tables it, with its goal and where and
    # when it was measured: muzero's from its sixteen-seed file, muzero_context's from the
    # compiled search's sixteen-seed file (the three configs its default changed),
    # efficientzero's from the two-types file, sampled_muzero's from the three types' file
    amd = "| 195 | AMD EPYC, 2 cores, 2026-12-07 | 8/8, 8/8 "
    amd16 = "| 195 | AMD EPYC, 2 cores, 2026-12-07 | 16/16, 16/16 "
    assert f"| cartpole_muzero {amd16}| 19.4 | 14.0 | 0.72 [0.55, 1.02] |" in out
    assert f"| cartpole_muzero_context {amd16}| 21.9 | 15.8 | 0.72 [0.43, 1.28] |" in out
    assert f"| cartpole_gumbel_muzero {amd16}| 30.6 | 26.5 | 0.87 [0.39, 1.52] |" in out
    assert f"| cartpole_efficientzero {amd}| 23.5 | 18.4 | 0.78 [0.43, 1.02] |" in out
    assert f"| cartpole_sampled_muzero {amd16}| 17.5 | 14.4 | 0.82 [0.58, 1.24] |" in out
    with pytest.raises(ValueError, match="needs the lines"):
        render.render_readme("# zeropipe without markers\n")


def test_the_check_passes_on_the_committed_pages():
    render.main(["--check"])  # exits 1 when a page is stale


def test_the_results_page_keeps_its_hand_written_text_and_renders_between_the_markers():
    page = (
        "# Results\n\nby hand\n"
        + render.RESULTS_BEGIN
        + "\nstale\n"
        + render.RESULTS_END
        + "\ntail\n"
    )
    out = render.render_results(page)
    assert out.startswith("# Results\n\nby hand\n" + render.RESULTS_BEGIN + "\n")
    assert out.endswith(render.RESULTS_END + "\ntail\n")
    assert "stale" not in out
    assert "| cartpole_muzero | sync | 195 | 8/8 |" in out
    with pytest.raises(ValueError, match="needs the lines"):
        render.render_results("# Results without markers\n")


def test_each_results_file_names_its_machine_commit_and_command():
    files = sorted(render.RESULTS.glob("*.json"))
    assert files
    for path in files:
        data = json.loads(path.read_text())
        assert data["machine"]["cores"] and data["zeropipe"]["commit"] and data["date"]
        assert data["command"].startswith("python -m benchmarks ")
        if main_job.SECTION in data["sections"]:  # the README's quick start, not this page
            assert data["main_job"]["last_line"] in render.README.read_text()
            continue
        if data.get("wall_clock", True):  # else its env steps only: the results page
            assert f"## {path.stem}" in render.render()
        if "learning" in data["sections"]:
            assert f"### {path.stem}" in render.RESULTS_PAGE.read_text()


def test_a_pong_window_file_is_tabled_with_its_rates_ratio_and_phases():
    phases = {"collect": 30.0, "train": 50.0, "driver": 2.0, "eval": 10.0, "wait": 0.0}
    run = {"envstep_per_s": 10.0, "learner_steps_per_s": 2.0, "phase_s": phases}
    row = {
        "config": "configs/pong_muzero.yaml",
        "window_s": 90.0,
        "sync": {**run, "learner_busy_fraction": 0.5},
        "async": {"envstep_per_s": 15.0, "learner_steps_per_s": 2.5},  # no learner step yet
        "ratio": {"envstep_per_s": 1.5, "learner_steps_per_s": 1.25},
    }
    lines = render._window_table([row])
    phases_text = "30.0 / 50.0 / 2.0 / 10.0 / 0.0"
    assert lines[2] == f"| pong_muzero | 90 | sync | 10.00 | 2.00 | 0.50 | {phases_text} |"
    assert lines[3] == "| pong_muzero | 90 | async | 15.00 | 2.50 | - | - |"
    assert lines[4] == "| pong_muzero | | async / sync | 1.50× | 1.25× | | |"


def test_a_config_current_in_two_files_is_an_error(tmp_path, monkeypatch):
    row = json.loads(
        (render.RESULTS / "learning_cartpole_three_types_16_seeds_2026-12-07.json").read_text()
    )
    for name in ("a", "b"):
        (tmp_path / f"{name}.json").write_text(json.dumps(row))
    monkeypatch.setattr(render, "RESULTS", tmp_path)
    with pytest.raises(ValueError, match="cartpole_sampled_muzero is current in a and b"):
        render.current_rows()


def test_a_file_without_wall_clock_figures_shows_none(tmp_path, monkeypatch):
    data = json.loads((render.RESULTS / "learning_cartpole_two_types_2026-12-07.json").read_text())
    (tmp_path / "timed.json").write_text(json.dumps({**data, "current": []}))
    (tmp_path / "untimed.json").write_text(json.dumps({**data, "current": [], "wall_clock": False}))
    monkeypatch.setattr(render, "RESULTS", tmp_path)
    page = render.render()
    assert "## timed" in page and "## untimed" not in page  # off the wall-clock page
    entries = render_policies.type_rows(tmp_path)["efficientzero"]
    rows = [line for line in render_policies.section(entries) if line.startswith("| [")]
    assert rows[1].endswith(" | not timed |") and not rows[0].endswith(" | not timed |")
    (tmp_path / "untimed.json").write_text(json.dumps({**data, "wall_clock": False}))
    with pytest.raises(ValueError, match="untimed has no wall-clock figures"):
        render.current_rows()


def test_the_minatar_matrix_has_every_config_and_pipeline_and_says_which_are_not_run(tmp_path):
    for stem in ("minatar_breakout_muzero", "minatar_space_invaders_unizero", "cartpole_muzero"):
        (tmp_path / f"{stem}.yaml").write_text("")
    row = LearningRow(
        config="configs/minatar_breakout_muzero.yaml",
        pipeline="sync",
        threshold=1.23,
        seeds=3,
        successes=2,
        envsteps_to_threshold=[4000, 5000],
        wall_s_to_threshold=[70.0, 80.0],
        best=[2.0, 3.0, 1.0],
        final=[1.5, 2.5, 0.5],
        largest_drop_after_success=[0.0, 0.0],
        failed_runs=0,
        process_wall_s_to_goal=[75.0, 85.0],
    )
    lines = render_minatar.section([row], sorted(tmp_path.glob("*.yaml")))
    assert lines[2:] == [  # the seed that never got there counts as slower than both
        "| Breakout | muzero | sync | 2/3 | 5,000 | 85.0 | 2.00 | 1.50 |",
        "| Breakout | muzero | async | not run | - | - | - | - |",
        "| SpaceInvaders | unizero | sync | not run | - | - | - | - |",
        "| SpaceInvaders | unizero | async | not run | - | - | - | - |",
    ]


def test_each_committed_policy_page_has_its_rendered_results():
    pages = render.pages()
    policy_pages = [p for p in pages if p.parent == render_policies.PAGES]
    assert len(policy_pages) == 10  # every type's page, not the index
    for page in policy_pages:
        assert page.read_text() == pages[page], f"{page} is stale: python -m benchmarks render"


def test_a_policy_page_tables_every_file_with_a_config_of_its_type(tmp_path):
    for name, stem in (
        ("learning_cartpole_five_types_2026-12-06", "2026-12-06"),
        ("learning_cartpole_two_types_2026-12-07", "2026-12-07"),
        ("learning_cartpole_compiled_search_16_seeds_2026-12-07", "2026-12-07-compiled"),
    ):
        (tmp_path / f"{stem}.json").write_text((render.RESULTS / f"{name}.json").read_text())
    by_type = render_policies.type_rows(tmp_path)
    assert set(by_type) == {
        "muzero",
        "unizero",
        "efficientzero",
        "muzero_context",
        "sampled_efficientzero",
        "gumbel_muzero",
    }
    lines = render_policies.section(by_type["muzero_context"])
    rows = [line for line in lines if line.startswith("| [2026-12-0")]
    # the newest file's config as shipped (its `current`), the older ones' not; medians over all
    # seeds, sync / async
    assert rows == [
        "| [2026-12-06](../results.md#2026-12-06) | cartpole_muzero_context | no | 8/8, 8/8 "
        "| 5,108 / 3,020 | 31.5 / 16.8 |",
        "| [2026-12-07-compiled](../results.md#2026-12-07-compiled) | cartpole_muzero_context "
        "| yes | 16/16, 16/16 | 4,592 / 3,464 | 21.9 / 15.8 |",
        "| [2026-12-07](../results.md#2026-12-07) | cartpole_muzero_context | no | 8/8, 8/8 "
        "| 3,660 / 2,932 | 15.1 / 11.5 |",
    ]
    assert render_policies.section([]) == ["No run of this type is committed as JSON yet.", ""]


def test_the_committed_plots_are_what_the_files_draw():
    drawn = render.plots()
    assert drawn, "the shipped-configs plot has no data"
    for path, data in drawn.items():
        assert render_plots.is_current(path, data), f"{path} is stale: python -m benchmarks render"


def test_a_plot_is_drawn_to_the_same_bytes_every_time_and_names_its_data():
    from PIL import Image

    data = render_plots.shipped_data(render.current_rows()[0])
    first = render_plots.draw_shipped(data)
    assert render_plots.draw_shipped(data) == first
    image = Image.open(io.BytesIO(first))
    assert image.size == (1000, 550)
    assert image.text["Description"].startswith(f"data sha256 {render_plots.digest(data)}; ")
    assert "Software" not in image.text and "Creation Time" not in image.text


def test_a_plot_drawn_from_other_data_is_stale(tmp_path):
    data = render_plots.shipped_data(render.current_rows()[0])
    path = tmp_path / render_plots.SHIPPED.name
    render_plots.DRAW[path] = render_plots.draw_shipped
    try:
        path.write_bytes(render_plots.draw(path, data))
        assert render_plots.is_current(path, data)
        changed = json.loads(json.dumps(data))
        changed["configs"]["cartpole_muzero"]["sync"]["seeds"] += 1
        assert not render_plots.is_current(path, changed)
    finally:
        del render_plots.DRAW[path]
    assert not render_plots.is_current(tmp_path / "missing.png", data)


IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def test_every_image_the_pages_show_is_a_rendered_plot_and_no_other_image_is_kept():
    drawn = set(render.plots())
    shown = set()
    for page in [render.README, *sorted((render.ROOT / "docs").rglob("*.md"))]:
        for target in IMAGE.findall(page.read_text()):
            shown.add((page.parent / target).resolve())
    assert shown and shown <= drawn, f"images not drawn from committed JSON: {shown - drawn}"
    kept = {
        p.resolve()
        for p in (render.ROOT / "docs").rglob("*")
        if p.suffix.lower() in {".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"}
    }
    assert kept == drawn, f"images under docs/ that render does not draw: {kept - drawn}"
