"""sim/runtime_predictions/live_decompose.py (round 17): the core's EASY with the real future
from a run's state, the overtaking count, and the split of rush's error at submit into parts
that add up to it (the recomputation itself needs each window's model: its figures are the
committed table's, written by the script)."""

from __future__ import annotations

import math
from pathlib import Path

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
script = load_script(ROOT / "sim" / "runtime_predictions" / "live_decompose.py", "live_decompose_study")


def _job(submit: float, start: float, runtime: float, procs: int, limit: float) -> dict:
    return {
        "submit": submit,
        "start": start,
        "end": start + runtime,
        "procs": procs,
        "limit": limit,
        "tags": {},
    }


# 31 of the 32 processors busy until 100 (limit 1000); job 2, the whole machine, waits from 0;
# job 3 (1 processor, 5 s, limit 20) arrives at 10 and job 4 (1 processor, limit 2000) at 20.
JOBS = {
    1: _job(-50.0, -50.0, 150.0, 31, 1000.0),
    2: _job(0.0, 400.0, 10.0, 32, 1000.0),  # really (the RJMS) it started at 400
    3: _job(10.0, 10.0, 5.0, 1, 20.0),
    4: _job(20.0, 410.0, 30.0, 1, 2000.0),
}


def test_easy_with_the_real_future_ends_running_jobs_at_their_real_ends_and_backfills_arrivals():
    starts = script.easy_with_arrivals(JOBS, 2, 0.0)
    # the head reserves at the running job's limit (950), but it really ends at 100: the head
    # starts then; the later short job is backfilled on the free processor at its arrival; the
    # one whose limit would pass the reservation is not
    assert starts[2] == 100.0 and starts[3] == 10.0 and 4 not in starts
    assert script.overtaking(JOBS, 2, starts) == (1, 5.0 / 60)
    assert script.overtaking(JOBS, 2, {i: j["start"] for i, j in JOBS.items()}) == (1, 5.0 / 60)
    # after the head: job 4 starts when the head ends (100 + 10)
    assert script.easy_with_arrivals(JOBS, 4, 0.0)[4] == 110.0


def test_a_job_wider_than_the_machine_never_starts():
    jobs = {**JOBS, 5: _job(1.0, 500.0, 10.0, 33, 100.0)}
    assert math.isinf(script.easy_with_arrivals(jobs, 5, 0.0)[5])


def test_the_parts_add_up_to_the_recomputed_error_and_the_lag_is_the_rjms_first_estimate(monkeypatch):
    k = 60.0

    class W:
        name, speedup = "BLUE", "60"

    rows = [
        {
            "trace_job_id": "2",
            "estimator": "rush",
            "wait_class": ">1h",
            "error": -3000.0,
            "estimated_at": "0.0",
            "halfway_error": None,
        },
        {
            "trace_job_id": "2",
            "estimator": "flux",
            "wait_class": ">1h",
            "error": 600.0,
            "estimated_at": "300.0",
        },
        {
            "trace_job_id": "4",
            "estimator": "rush",
            "wait_class": ">1h",
            "error": 60.0,
            "estimated_at": "20.0",
            "halfway_error": None,
        },
        {"trace_job_id": "4", "estimator": "flux", "wait_class": ">1h", "error": None, "estimated_at": ""},
    ]
    stages = {"queue: L2": -4000.0, script.live_bias.L2_RUNNING_REAL: -3000.0, "all real": -18000.0}
    asked = []

    def reconstructed(models, w, rjms, path, moments, variants):
        # at submit: every live estimate's moment (live_bias.py's); then: live_same_moment.py's
        asked.append((moments, variants))
        if moments is None:
            return [{"job": 2, "tag": "", **stages, script.live_bias.ALL_LIMITS: 36000.0}]
        return [{"job": 2, "tag": "first", "queue: L2": 0.0}, {"job": 2, "tag": "rjms", "queue: L2": 120.0}]

    monkeypatch.setattr(script.live_windows, "read_rows", lambda path: rows)
    monkeypatch.setattr(script.live_bias, "reconstructed", reconstructed)
    monkeypatch.setattr(script.live_bias, "real_jobs", lambda *a: JOBS)
    (r,) = script.decompose(W, "flux", Path("run.csv"), Path("models"), "rep1")  # job 4: no RJMS estimate
    assert asked == [
        (None, script.VARIANTS),
        (script.live_same_moment.moments(rows)[0], ("deployed", "queue: L2")),
    ]
    parts = [r[f"{p}_min"] for p in script.PARTS]
    assert math.isclose(sum(parts), r["L2_min"]) and math.isclose(r["L2_min"], -4000.0 / 60)
    assert math.isclose(r["running_min"], -1000.0 / 60) and math.isclose(r["queued_min"], 15000.0 / 60)
    # the core's EASY with the real future starts job 2 at 100, the RJMS at 400
    assert math.isclose(r["RJMS order_min"], (100.0 - 400.0) * k / 60)
    assert math.isclose(r["arrivals_min"], -18000.0 / 60 - r["RJMS order_min"])
    assert math.isclose(r["lag_min"], 300.0 * k / 60) and math.isclose(r["lag_share"], 300.0 / 400.0)
    assert (r["later_first_real"], r["later_first_easy"]) == (1, 1)
    assert r["rjms_error_min"] == 10.0 and r["rush_at_rjms_min"] == 2.0 and r["limits_min"] == 600.0
    (m,) = script.means([r])
    assert math.isclose(m["MAE L2"], 4000.0 / 60) and math.isclose(m["MAE without arrivals"], 300.0)
    assert math.isclose(m["MAE without RJMS order only"], abs(-4000.0 / 60 - r["RJMS order_min"]))


def test_sched_backfills_replica_lacks_easys_second_clause_and_sees_only_its_queue_depth():
    # 16 of 32 processors busy until 100 (limit 1000); the head (20 processors) reserves at 950,
    # when 12 processors will be left over; a 1-processor job with a long limit arrives at 10
    jobs = {
        1: _job(-50.0, -50.0, 150.0, 16, 1000.0),
        2: _job(0.0, 100.0, 10.0, 20, 1000.0),
        3: _job(10.0, 100.0, 5.0, 1, 2000.0),
    }
    # the core's EASY backfills it at once on those processors; sched-backfill only if its limit
    # ended by the shadow time, so it starts behind the head, when the running job really ends
    assert script.easy_with_arrivals(jobs, 3, 0.0)[3] == 10.0
    replica = script.flux_backfill_with_arrivals(jobs, 3, 0.0)
    assert replica[2] == 100.0 and replica[3] == 100.0
    short = {**jobs, 3: _job(10.0, 10.0, 5.0, 1, 20.0)}  # a limit that ends by the shadow time
    assert script.flux_backfill_with_arrivals(short, 3, 0.0)[3] == 10.0
    # beyond the queue depth a job is not seen, even if it would fit
    assert script.flux_backfill_with_arrivals(short, 3, 0.0, depth=1)[3] == 100.0
    assert math.isinf(
        script.flux_backfill_with_arrivals({**jobs, 5: _job(1.0, 1.0, 1.0, 33, 9.0)}, 5, 0.0)[5]
    )
