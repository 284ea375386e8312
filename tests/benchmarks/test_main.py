"""`python -m benchmarks`: the header names the machine, build and configs, and `--json PATH`
writes the same header and each section's results (a stand-in section: the mechanics of
`__main__` are under test here, not a benchmark's speed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import benchmarks.__main__ as bench_main
import torch

ROOT = Path(__file__).resolve().parents[2]


def test_the_header_and_json_name_the_machine_build_configs_and_results(
    tmp_path, monkeypatch, capsys
):
    rows = [{"name": "snapshot publish 10 MB", "value": 0.5, "unit": "ms/MB"}]

    def fake_learner() -> dict:
        print("learner table")
        return {"learner": {"configs/cartpole_muzero.yaml": {"steps_per_s": 64.0}}}

    monkeypatch.setitem(bench_main.SECTIONS, "transport", lambda: rows)
    monkeypatch.setitem(bench_main.SECTIONS, "learner", fake_learner)
    out = tmp_path / "bench.json"
    monkeypatch.setattr(
        sys, "argv", ["python -m benchmarks", "learner", "transport", "--json", str(out)]
    )
    bench_main.main()
    printed = capsys.readouterr().out
    commit = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    header = printed.split("\n== learner ==")[0]
    assert f"{os.cpu_count()} cores" in header and f"torch {torch.__version__}" in header
    assert f"commit {commit}" in header
    assert "learner: configs/cartpole_muzero.yaml, configs/cartpole_unizero.yaml" in header
    assert "learner table" in printed and f"wrote {out}" in printed
    written = json.loads(out.read_text())
    assert written["machine"]["cores"] == os.cpu_count()
    assert written["torch"]["version"] == torch.__version__
    assert written["torch"]["threads"] == torch.get_num_threads()
    assert written["zeropipe"]["commit"].startswith(commit)
    assert written["sections"]["learner"][0] == "configs/cartpole_muzero.yaml"
    assert written["results"] == {
        "learner": {"learner": {"configs/cartpole_muzero.yaml": {"steps_per_s": 64.0}}},
        "transport": rows,
    }
