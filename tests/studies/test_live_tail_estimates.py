"""sim/runtime_predictions/live_tail_estimates.py (round 30, part c): the comparison on the jobs
both estimated, the validity check against the live figure, and the pre-set reading."""

from __future__ import annotations

import math
from pathlib import Path

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
script = load_script(
    ROOT / "sim" / "runtime_predictions" / "live_tail_estimates.py", "live_tail_estimates_study"
)
TAIL = "queue: T"


def _rows(l2: list[float], t: list[float], live: float = -1200.0) -> list[dict]:
    waits = [">1h", ">1h", "10min-1h"]
    return [
        {"job": j, "wait_class": c, "live": live, "queue: L2": a, TAIL: b}
        for j, (c, a, b) in enumerate(zip(waits, l2, t, strict=True), start=1)
    ]


CSV = [
    {"trace_job_id": "1", "estimator": "sched-backfill", "wait_class": ">1h", "error": 120.0},
    {"trace_job_id": "2", "estimator": "sched-backfill", "wait_class": ">1h", "error": None},  # not estimated
    {"trace_job_id": "3", "estimator": "sched-backfill", "wait_class": "10min-1h", "error": 60.0},
    {"trace_job_id": "1", "estimator": "rush", "wait_class": ">1h", "error": -1200.0},
]


def test_compare_reads_the_jobs_both_estimated_over_an_hour():
    row = script.compare(_rows([-1200.0, -300.0, 0.0], [-600.0, 60.0, 0.0]), CSV, TAIL)
    assert row["wait"] == ">1h" and row["jobs"] == 1  # job 2 has no RJMS estimate, job 3 another class
    assert math.isclose(row["L2"], 20.0) and math.isclose(row["T"], 10.0) and math.isclose(row["rjms"], 2.0)
    assert math.isclose(row["L2_signed"], -20.0) and math.isclose(row["T_signed"], -10.0)
    assert row["valid"] and row["T_below_L2"] and not row["T_below_rjms"] and row["T_late"] == 0


def test_a_recomputation_far_from_the_live_figure_is_invalid():
    row = script.compare(_rows([-1200.0, 0.0, 0.0], [-600.0, 0.0, 0.0], live=-1600.0), CSV, TAIL)
    assert not row["valid"]  # 20 minutes recomputed against 26.7 live: more than 5 apart


def _table(t: list[float]) -> list[dict]:
    return [{"L2": 30.0, "T": v, "valid": True, "T_below_L2": v < 30.0} for v in t]


def test_reading_needs_t_below_l2_on_every_valid_run():
    assert script.reading(_table([29.0, 28.0, 20.0, 29.9])) == "met"
    assert script.reading(_table([29.0, 28.0, 20.0, 30.0])) == "not met"
    assert script.reading(_table([29.0, 28.0, 20.0])).startswith("not met (a run is missing)")
    table = _table([29.0, 28.0, 20.0, 29.9])
    table[1]["valid"] = False
    assert script.reading(table) == "not met (a run is invalid)"
