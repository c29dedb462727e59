"""sim/runtime_predictions/live_same_moment.py (protocol S1): the moments it recomputes rush's
estimate at, and the per-class table that sets rush's estimate at the RJMS's first estimate's
moment beside the RJMS's (the recomputation itself needs each window's model: its figures are
the committed table's, written by the script)."""

from __future__ import annotations

import math
from pathlib import Path

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
script = load_script(ROOT / "sim" / "runtime_predictions" / "live_same_moment.py", "live_same_moment_study")


def _row(job: int, estimator: str, error, at, halfway=None, wait: float = 7200.0) -> dict:
    return {
        "trace_job_id": str(job),
        "estimator": estimator,
        "submit": "1000.0",
        "start": "1120.0",
        "wait": wait,
        "wait_class": ">1h",
        "error": error,
        "estimated_at": "" if at is None else str(at),
        "halfway_error": halfway,
    }


ROWS = [
    _row(1, "rush", 600.0, 1000.5, halfway=300.0),
    _row(1, "fluxion", 1200.0, 1100.0),
    _row(2, "rush", -900.0, 1000.5, halfway=-60.0),
    _row(2, "fluxion", None, None),  # Fluxion never estimated job 2
    _row(3, "rush", 60.0, 1000.5),
    _row(3, "fluxion", 30.0, 1119.0),  # but job 3 had started in the recomputed state
]


def test_moments_are_the_rjms_first_estimates_and_rushs_own_first_and_halfway():
    at, rjms = script.moments(ROWS)
    assert sorted(rjms) == [1, 3]
    assert (1100.0, 1, "rjms") in at and (1119.0, 3, "rjms") in at
    assert (1000.5, 1, "first") in at and (1060.0, 1, "halfway") in at  # submit + wait / 2
    assert not any(job == 2 and tag == "rjms" for _, job, tag in at)
    assert not any(job == 3 and tag == "halfway" for _, job, tag in at)


def test_same_moment_table_compares_on_the_rjms_jobs_and_counts_the_left_out():
    _, rjms = script.moments(ROWS)
    recomputed = [
        {"job": 1, "tag": "rjms", "deployed": -120.0, "queue: L2": 60.0},
        {"job": 3, "tag": "rjms", "deployed": None, "queue: L2": None},
        {"job": 1, "tag": "first", "deployed": 660.0, "queue: L2": 700.0},
        {"job": 2, "tag": "first", "deployed": -900.0, "queue: L2": -800.0},
        {"job": 1, "tag": "halfway", "deployed": 300.0, "queue: L2": 300.0},
    ]
    (t,) = script.same_moment("W", "fluxion", ROWS, recomputed, rjms, "rep2")
    assert (t["jobs"], t["rjms_estimated"], t["left_out"]) == (3, 2, 1)
    assert math.isclose(t["coverage"], 2 / 3)
    assert math.isclose(t["moment_share"], 100 / 120)
    assert math.isclose(t["RJMS mae"], 20.0) and math.isclose(t["rush mae"], 2.0)
    assert math.isclose(t["rush signed"], -2.0) and math.isclose(t["rush, L2 signed"], 1.0)
    assert t["RJMS within_10pct"] == 0.0 and t["rush within_10pct"] == 1.0
    assert math.isclose(t["fidelity first"], 30 / 60)  # |660 - 600| and |-900 - -900|, mean
    assert math.isclose(t["fidelity halfway"], 0.0)
    assert t["source"] == "rep2"
    assert "| W | fluxion | rep2 | >1h | 3 | 2 (67 %) | 1 |" in script.markdown([t])
