"""`python -m benchmarks search-networks`: both checkouts measured per config and round, the
side that goes first alternating; medians and ratio per B; a config a side cannot run is left
out; the file renders on the wall-clock page. The end-to-end run (real search_timing.py
subprocesses in two checkouts) is slow."""

from __future__ import annotations

import json

import pytest
from benchmarks.machine import ROOT

from benchmarks import render, search_networks


def _fake_timing(calls: list, ms: dict):
    def timing(checkout, config, batches, split=False):
        calls.append((checkout, config, split))
        if "missing" in config:
            return None
        side = "current" if checkout == ROOT else "before"
        base = ms[side] * (1 + 0.1 * sum(1 for c in calls if c[0] == checkout and not c[2]))
        out = {"ms_per_search": {b: base * int(b) for b in batches.split(",")}, "mode": "compiled"}
        if split:
            out["us_per_simulation"] = {
                b: {"compiled": 1.0, "total": 2.0} for b in batches.split(",")
            }
        return out

    return timing


def test_both_sides_alternate_and_the_medians_and_ratio_are_per_batch(
    monkeypatch, tmp_path, capsys
):
    calls: list = []
    monkeypatch.setattr(
        search_networks, "timing", _fake_timing(calls, {"before": 4.0, "current": 1.0})
    )
    out = tmp_path / "r.json"
    result = search_networks.main(
        ["--before", str(tmp_path), "--configs", "a.yaml", "missing.yaml", "--batches", "3,8",
         "--rounds", "3", "--out", str(out)]
    )  # fmt: skip
    timed = [(c[0] == ROOT, c[1]) for c in calls if not c[2]]
    assert timed[:6] == [(False, "a.yaml"), (True, "a.yaml"), (True, "a.yaml"),
                         (False, "a.yaml"), (False, "a.yaml"), (True, "a.yaml")]  # fmt: skip
    assert [r["config"] for r in result["rows"]] == ["a.yaml"]  # the missing one is left out
    row = result["rows"][0]["rows"][1]
    assert row["batch"] == 8
    assert row["before_ms_per_round"] == pytest.approx([4.4 * 8, 4.8 * 8, 5.2 * 8])
    assert row["before_ms"] == pytest.approx(4.8 * 8) and row["current_ms"] == pytest.approx(
        1.2 * 8
    )
    assert row["current_over_before"] == pytest.approx(1.2 / 4.8)
    assert result["rows"][0]["current_us_per_simulation"]["3"]["compiled"] == 1.0
    assert result["command"] == (
        "python -m benchmarks search-networks --before CHECKOUT --configs a.yaml missing.yaml "
        "--batches 3,8 --rounds 3"
    )
    assert json.loads(out.read_text())["rows"] == result["rows"]
    assert "| a | 8 | 38.40 | 9.60 | 0.25 |" in capsys.readouterr().out
    page = render._section("f", json.loads(out.read_text()))
    assert "| a | 8 | 38.40 | 9.60 | 0.25 |" in page and "actor_inference` compiled" in page


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_it_times_a_real_checkout_against_itself(tmp_path):
    result = search_networks.main(
        ["--before", str(ROOT), "--configs", "configs/cartpole_muzero.yaml", "--batches", "3",
         "--rounds", "2", "--out", str(tmp_path / "r.json")]
    )  # fmt: skip
    row = result["rows"][0]["rows"][0]
    assert len(row["before_ms_per_round"]) == len(row["current_ms_per_round"]) == 2
    assert 0.2 < row["current_over_before"] < 5.0  # the same code: the same order of time
    assert result["rows"][0]["current_actor_inference"] == "default"
