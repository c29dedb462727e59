"""Offline start estimates: the sweep projects the queue ahead of each job with each estimator."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.remaining_runtime import conditional_quantile_runtime, quantile_knots
from rush.studies.estimate_accuracy_offline import (
    REMAINING_LADDER,
    REMAINING_MEDIAN,
    REMAINING_Q40,
    REMAINING_Q75,
    RULE_EASY,
    error_rows,
    ladder,
    limits_ladder,
    make_queries,
    projection,
    quantile_ladder,
    sweep_estimates,
    sweep_projected,
    wait_class,
)


def _schedule():
    """4 processors. Job 0 runs [0, 100) on all of them (request 1000); job 1 (4 procs,
    request 500) waits for it and runs [100, 150); job 2 (1 proc) submitted at 200 starts at once."""
    submit = np.array([0.0, 10.0, 200.0])
    start = np.array([0.0, 100.0, 200.0])
    end = np.array([100.0, 150.0, 230.0])
    procs = np.array([4, 4, 1], dtype=np.int64)
    request = np.array([1000.0, 500.0, 60.0])
    runtime = end - start
    return submit, start, end, procs, request, runtime


def test_each_estimator_projects_the_running_job_to_its_own_end():
    submit, start, end, procs, request, runtime = _schedule()
    ladders = np.stack([limits_ladder(request), ladder(runtime, None, request)])
    queries, step = make_queries(submit, start, None)
    est = sweep_estimates(queries.time, queries.job, submit, start, end, procs, ladders, 4)
    at_submit = {int(j): k for k, j in enumerate(queries.job) if queries.moment[k] == 0}
    # Job 1 at its submit: job 0 ends at its limit (1000) for limits, at 100 for the truth.
    assert est[0, at_submit[1]] == 1000.0
    assert est[1, at_submit[1]] == 100.0
    # A job started at its submit gets "now" from every estimator.
    assert np.all(est[:, at_submit[2]] == 200.0)
    rows = error_rows("t", ["limits", "clairvoyant"], est, queries, submit, start)
    waited = {r["estimator"]: r for r in rows if r["moment"] == "submit" and r["wait_class"] == "waited"}
    assert waited["clairvoyant"]["mae_min"] == 0.0
    assert waited["limits"]["mae_min"] == (1000.0 - 100.0) / 60.0
    assert waited["limits"]["within_1min"] == 0.0


def test_a_running_job_past_its_median_is_expected_at_its_next_quantile():
    submit, start, end, procs, request, runtime = _schedule()
    quantiles = np.array([[20.0, 40.0, 60.0, 80.0, 95.0], [10, 20, 30, 40, 50], [5, 6, 7, 8, 9.0]])
    ladders = quantile_ladder(quantiles, np.array([0.1, 0.25, 0.5, 0.75, 0.9]), request)[None]
    # At t = 70, job 0 has outlived its median (60): next its 0.75 quantile, 80.
    est = sweep_estimates(np.array([70.0]), np.array([1]), submit, start, end, procs, ladders, 4)
    assert est[0, 0] == 80.0


def test_wait_classes():
    assert wait_class(np.array([0.0, 30.0, 600.0, 3600.0, 3601.0])).tolist() == [0, 1, 2, 2, 3]


def test_the_easy_sweep_with_exact_runtimes_and_no_arrivals_is_the_schedule():
    # A queue submitted at 0 under the simulator's EASY-FCFS on limits (runtimes well below the
    # requests). A job's query sees the jobs ahead of it only (those behind it are, to it, later
    # arrivals that may backfill ahead), so with exact runtimes the EASY sweep is exact for the
    # last job, which sees the whole queue, and closer than the conservative sweep overall.
    from rush.core.config import CoreConfig
    from rush.core.policies import parse_policy
    from rush.simulator.engine import simulate
    from rush.workload.model import Workload

    rng = np.random.default_rng(5)
    n = 40
    request = rng.integers(60, 5000, n).astype(float)
    w = Workload(
        job_id=np.arange(1, n + 1),
        submit=np.zeros(n),
        runtime=np.maximum(np.round(request * rng.uniform(0.01, 1.0, n)), 1.0),
        requested_time=request,
        procs=rng.choice([1, 2, 4, 8, 16, 32], n).astype(np.int64),
        user=np.full(n, -1),
        machine_procs=32,
    )
    result = simulate(w, CoreConfig(policy=parse_policy("FCFS"), backfill="easy", threshold=None))
    start = np.asarray(result.start, dtype=np.float64)
    end = start + w.runtime
    ladders = ladder(w.runtime, None, request)[None]
    jobs = np.arange(n)
    state = (w.submit, start, end, w.procs, 32)
    exact = sweep_projected(
        w.submit, jobs, state, ladders, projection(RULE_EASY, request, np.array([REMAINING_LADDER]))
    )
    assert exact[0, -1] == start[-1]
    conservative = sweep_estimates(w.submit, jobs, w.submit, start, end, w.procs, ladders, 32)
    assert np.abs(exact[0] - start).sum() < np.abs(conservative[0] - start).sum()
    assert np.all(np.isfinite(exact)) and np.all(exact >= 0.0)


def test_a_running_job_past_its_median_is_expected_at_its_conditional_median():
    submit, start, end, procs, request, runtime = _schedule()
    levels = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    quantiles = np.array([[20.0, 40.0, 60.0, 80.0, 95.0], [10, 20, 30, 40, 50], [5, 6, 7, 8, 9.0]])
    knots = quantile_knots(np.log1p(quantiles), levels, np.log1p(request))
    ladders = quantile_ladder(quantiles, levels, request)[None]
    how = projection(RULE_EASY, request, np.array([REMAINING_MEDIAN]), knots)
    est = sweep_projected(np.array([70.0]), np.array([1]), (submit, start, end, procs, 4), ladders, how)
    # Job 0 has run 70 s: it ends at its median given that, between 70 and its request.
    expected = conditional_quantile_runtime(knots[0][0], knots[1], 70.0, 0.5)
    assert 70.0 < expected < 1000.0
    assert est[0, 0] == expected


@pytest.mark.parametrize(
    ("code", "level"), [(REMAINING_MEDIAN, 0.5), (REMAINING_Q40, 0.4), (REMAINING_Q75, 0.75)]
)
def test_each_conditional_quantile_code_ends_a_running_job_at_its_level(code: int, level: float):
    submit, start, end, procs, request, runtime = _schedule()
    levels = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    quantiles = np.array([[20.0, 40.0, 60.0, 80.0, 95.0], [10, 20, 30, 40, 50], [5, 6, 7, 8, 9.0]])
    knots = quantile_knots(np.log1p(quantiles), levels, np.log1p(request))
    ladders = quantile_ladder(quantiles, levels, request)[None]
    how = projection(RULE_EASY, request, np.array([code]), knots)
    est = sweep_projected(np.array([70.0]), np.array([1]), (submit, start, end, procs, 4), ladders, how)
    assert est[0, 0] == conditional_quantile_runtime(knots[0][0], knots[1], 70.0, level)
