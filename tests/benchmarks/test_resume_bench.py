"""The resume benchmark's judgement: scheduled evals equal or not, a stop's final eval ignored."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.bench_resume import row, scheduled_evals


def _run(root: Path, evals: list[tuple[int, float, bool]], train_iter: int = 50) -> Path:
    (root / "log").mkdir(parents=True)
    (root / "config.yaml").write_text("policy:\n  replay_ratio: 0.25\n")
    lines = [{"event": "collect", "envstep": 80, "envstep_delta": 80},
             {"event": "collect", "envstep": 200, "envstep_delta": 120}]  # fmt: skip
    lines += [{"event": "eval", "envstep": s, "reward_mean": r, **({"final": True} if f else {})}
              for s, r, f in evals]  # fmt: skip
    lines.append({"event": "stop", "envstep": evals[-1][0], "train_iter": train_iter})
    (root / "log" / "metrics.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n")
    return root


def test_a_stops_final_eval_is_not_a_difference(tmp_path):
    whole = _run(tmp_path / "w", [(100, 10.0, False), (300, 30.0, False), (400, 40.0, True)])
    parts = _run(
        tmp_path / "p",
        [(100, 10.0, False), (200, 20.0, True), (300, 30.0, False), (400, 40.0, True)],
        train_iter=42,
    )
    assert scheduled_evals(parts) == [(100, 10.0), (300, 30.0)]
    # learner steps 50 / 42, the resumed run 8 short; one budget: the largest collect, 120 x 0.25
    assert row(0, "sync", whole, parts, stop=200) == (
        "| sync | 0 | same | 2 / 2 | 30.0 | 30.0 | 30.0 | 30.0 | 50 / 42 | -8 | 30 |"
    )


def test_another_eval_is_a_difference(tmp_path):
    whole = _run(tmp_path / "w", [(100, 10.0, False), (300, 30.0, False)])
    parts = _run(tmp_path / "p", [(100, 10.0, False), (300, 31.0, False)])
    assert "| differ |" in row(1, "async", whole, parts, stop=200)
