"""`python -m benchmarks search-vs-lightzero`: the rounds alternate one side at a time, the
results file holds what was measured, the children are gone at the end, and without LightZero it
exits 2 with the install line. Both children run zeropipe's side here (LightZero is not a test
dependency); the figures are not judged, only their bookkeeping."""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import sys

import benchmarks.search_vs_lightzero as svl
import pytest

from tests.leaks import shm_blocks


def _live_children() -> set[int]:
    """Pids of this process's children that are not zombies."""
    me, pids = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # state, ppid, ...
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[1]) == me:
            pids.add(int(entry))
    return pids


@pytest.fixture
def no_children_left():
    before_children, before_shm = _live_children(), shm_blocks()
    yield
    assert _live_children() <= before_children, "a benchmark child is still running"
    assert shm_blocks() <= before_shm


@pytest.mark.timeout(300)
def test_rounds_alternate_one_side_at_a_time_and_the_file_holds_them(
    tmp_path, monkeypatch, capsys, no_children_left
):
    monkeypatch.setattr(svl, "lightzero_side", svl.zeropipe_side)
    out = tmp_path / "search.json"
    argv = ["--lightzero-python", sys.executable, "--batches", "3,5", "--rounds", "2"]
    argv += ["--searches", "2", "--simulations", "4", "--out", str(out)]
    svl.main(argv)
    printed = capsys.readouterr().out
    result = json.loads(out.read_text())

    assert result["command"] == (
        "python -m benchmarks search-vs-lightzero --lightzero-python PATH --batches 3,5 "
        "--rounds 2 --searches 2 --simulations 4"
    )
    assert result["machine"]["cores"] == os.cpu_count() and "zeropipe" in result
    assert result["settings"]["searches_per_request"] == 2
    for side in ("lightzero", "zeropipe"):
        assert result["sides"][side]["threads"] == 1
        assert result["sides"][side]["simulations"] == 4

    requests = result["requests"]
    order = [(r["round"], r["batch"], r["side"]) for r in requests]
    assert order == [
        (0, 3, "lightzero"), (0, 3, "zeropipe"), (0, 5, "lightzero"), (0, 5, "zeropipe"),
        (1, 3, "zeropipe"), (1, 3, "lightzero"), (1, 5, "zeropipe"), (1, 5, "lightzero"),
    ]  # fmt: skip
    for earlier, later in itertools.pairwise(requests):
        assert earlier["start"] < earlier["end"] <= later["start"]  # never two at once
    for r in requests:  # ms per search: the request's span over its 2 searches
        assert r["ms"] == pytest.approx(1000 * (r["end"] - r["start"]) / 2, rel=1e-6)

    rows = {row["batch"]: row for row in result["rows"]}
    assert sorted(rows) == [3, 5]
    for batch, row in rows.items():
        ms = {
            side: [r["ms"] for r in requests if r["batch"] == batch and r["side"] == side]
            for side in ("lightzero", "zeropipe")
        }
        assert row["lightzero_ms_per_round"] == ms["lightzero"]
        lz, zp = sum(ms["lightzero"]) / 2, sum(ms["zeropipe"]) / 2  # median of two
        assert row["lightzero_ms"] == pytest.approx(lz) and row["zeropipe_ms"] == pytest.approx(zp)
        assert row["ratio"] == pytest.approx(lz / zp)
        per_round = sorted(a / b for a, b in zip(ms["lightzero"], ms["zeropipe"], strict=True))
        assert row["ratio_per_round"]["q1"] <= row["ratio_per_round"]["median"]
        assert row["ratio_per_round"]["median"] == pytest.approx(sum(per_round) / 2)
        assert f"| {batch} | {lz:.2f} | {zp:.2f} |" in printed

    split = result["zeropipe_us_per_simulation"]
    assert sorted(split) == ["3", "5"]
    # the shipped CartPole config's search runs compiled: its simulations are one call
    assert all(parts["total"] > parts["compiled"] > 0 for parts in split.values())
    assert f"wrote {out}" in printed


def test_without_lightzero_it_exits_2_with_the_install_line(capsys, no_children_left):
    with pytest.raises(SystemExit) as exited:
        svl.main(["--rounds", "1"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install LightZero==0.2.0" in err[0]


@pytest.mark.timeout(180)
def test_an_interpreter_without_lightzero_exits_2_with_the_install_line(capsys, no_children_left):
    if importlib.util.find_spec("lzero") is not None:
        pytest.skip("LightZero is importable here")
    with pytest.raises(SystemExit) as exited:
        svl.main(["--lightzero-python", sys.executable, "--rounds", "1", "--batches", "3"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install LightZero==0.2.0" in err[0]
