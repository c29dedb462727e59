"""sim/runtime_predictions/live_keyed_estimates.py (D32): the comparison on the jobs both
estimated and the pre-set reading."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
script = load_script(
    ROOT / "sim" / "runtime_predictions" / "live_keyed_estimates.py", "live_keyed_estimates_study"
)


def _rows(l2: list[float]) -> list[dict]:
    waits = [">1h", ">1h", "10min-1h"]
    return [
        {"job": j, "wait_class": c, "live": -600.0, "queue: L2": v}
        for j, (c, v) in enumerate(zip(waits, l2, strict=True), start=1)
    ]


CSV = [
    {"trace_job_id": "1", "estimator": "sched-backfill", "wait_class": ">1h", "error": 120.0},
    {"trace_job_id": "2", "estimator": "sched-backfill", "wait_class": ">1h", "error": None},  # not estimated
    {"trace_job_id": "3", "estimator": "sched-backfill", "wait_class": "10min-1h", "error": 60.0},
    {"trace_job_id": "1", "estimator": "rush", "wait_class": ">1h", "error": -600.0},
]


def test_compare_reads_the_jobs_both_estimated_over_an_hour():
    row = script.compare(_rows([-1200.0, -300.0, 0.0]), _rows([-240.0, 60.0, 0.0]), CSV)
    assert row["wait"] == ">1h" and row["jobs"] == 1  # job 2 has no RJMS estimate, job 3 another class
    assert (
        math.isclose(row["L2"], 20.0)
        and math.isclose(row["L2_keyed"], 4.0)
        and math.isclose(row["rjms"], 2.0)
    )
    assert math.isclose(row["L2_signed"], -20.0) and math.isclose(row["L2_keyed_signed"], -4.0)
    assert math.isclose(row["rush_live"], 10.0) and math.isclose(row["L2_vs_live"], 10.0)


def test_compare_refuses_passes_at_different_moments():
    keyed = _rows([0.0, 0.0, 0.0])
    keyed[0]["job"] = 9
    with pytest.raises(ValueError):
        script.compare(_rows([0.0, 0.0, 0.0]), keyed, CSV)


def test_reading_needs_every_run_since_l2_below_the_rjms():
    table = [
        {"source": "before L2", "L2_keyed": 90.0, "rjms": 10.0},  # not in the reading
        {"source": "rep1", "L2_keyed": 9.0, "rjms": 10.0},
        {"source": "rep2", "L2_keyed": 11.0, "rjms": 12.0},
    ]
    assert script.reading(table) == "would close the gap"
    table[2]["L2_keyed"] = 12.0
    assert script.reading(table) == "would not close the gap"
    assert script.reading(table[:1]) == "no run since L2"
