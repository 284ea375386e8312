"""`python -m benchmarks main-job`: the README's quick-start figure comes from its newest file."""

from __future__ import annotations

import json

import pytest

from benchmarks import main_job


def _file(path, date: str, wall: float, line: str) -> None:
    data = {
        "machine": {"cpu_model": "AMD EPYC Processor", "cores": 2},
        "sections": {main_job.SECTION: [main_job.CONFIG]},
        "date": date,
        "main_job": {"process_wall_s": wall, "last_line": line, "returncode": 0},
    }
    path.write_text(json.dumps(data))


def test_the_readme_shows_the_newest_main_job_file(tmp_path):
    _file(tmp_path / "main_job_b.json", "2026-12-01", 50.0, "stopped: old")
    _file(tmp_path / "main_job_a.json", "2026-12-07", 41.4, "stopped: new")
    (tmp_path / "learning_x.json").write_text(json.dumps({"sections": {"learning": []}}))
    data = main_job.newest(tmp_path)
    lines = main_job.readme_lines(data, "AMD EPYC")
    assert lines[0] == (
        "A first run (numba's compiled search kernels not yet cached, as in a fresh clone) on a "
        "2-core AMD EPYC (2026-12-07) exited after 41 s with:"
    )
    assert lines[2:5] == ["```text", "stopped: new", "```"]
    assert main_job.newest(tmp_path / "none") is None


@pytest.mark.timeout(120)
def test_a_run_that_does_not_stop_by_a_rule_is_an_error_with_its_output(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("policy:\n  type: muzero\n  num_simulations: -1\n")
    with pytest.raises(RuntimeError, match=r"without a 'stopped:' line \(status 2\)") as err:
        main_job.run_main_job(str(bad))
    assert "num_simulations" in str(err.value)
