"""Rule M (issue 29, round 31): the median over sampled scenarios of a job's projected start, the
core's sampler (:mod:`rush.core.start_distribution`) and the offline sweep's candidate, against
oracles: one running job, two running jobs (the median of a maximum), degenerate distributions
(rule L2 exactly), and bounds on random schedules."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.remaining_runtime import conditional_quantile_runtime, quantile_knots
from rush.core.start_distribution import (
    SCENARIOS,
    median_of_starts,
    sampled_runtime,
    scenario_levels,
    scenario_seed,
)
from rush.studies.estimate_accuracy_offline import (
    REMAINING_MEDIAN,
    REMAINING_SAMPLED,
    RULE_EASY,
    ladder,
    projection,
    sweep_projected,
)

LEVELS = np.array([0.1, 0.25, 0.5, 0.75, 0.9])


def test_each_job_gets_one_level_in_each_stratum_and_a_seed_gives_the_same_levels():
    levels = scenario_levels(scenario_seed(1_000_000.7), SCENARIOS, 50)
    assert levels.shape == (SCENARIOS, 50)
    assert np.all((levels > 0.0) & (levels < 1.0))
    strata = np.sort(np.floor(levels * SCENARIOS).astype(int), axis=0)
    assert np.array_equal(strata, np.repeat(np.arange(SCENARIOS)[:, None], 50, axis=1))
    assert np.array_equal(levels, scenario_levels(scenario_seed(1_000_000.2), SCENARIOS, 50))
    assert not np.array_equal(levels, scenario_levels(scenario_seed(1_000_001.0), SCENARIOS, 50))
    # Jobs are drawn apart: two jobs' scenario orders are not the same.
    assert not np.array_equal(np.argsort(levels[:, 0]), np.argsort(levels[:, 1]))
    assert scenario_seed(float("nan")) == 0 and 0 <= scenario_seed(-5.5) < 2**31


def test_the_median_of_starts_is_numpys_and_inf_where_most_scenarios_never_start():
    rng = np.random.default_rng(3)
    for s in (1, 2, 7, 32):
        starts = rng.uniform(0, 1e4, (s, 9))
        assert np.allclose(median_of_starts(starts), np.median(starts, axis=0))
    starts = np.array([[1.0, np.inf, 1.0], [3.0, np.inf, np.inf], [2.0, 5.0, np.inf], [4.0, 6.0, 2.0]])
    assert median_of_starts(starts).tolist() == [2.5, np.inf, np.inf]


def test_a_draw_is_between_the_elapsed_time_and_the_request_never_nan():
    q = np.array([[20.0, 40.0, 60.0, 80.0, 95.0]])
    xs, ps = quantile_knots(np.log1p(q), LEVELS, np.log1p([1000.0]))
    for elapsed in (0.0, 30.0, 70.0, 999.0, 2000.0, float("nan"), -4.0):
        for u in (1e-12, 0.3, 0.5, 0.999999):
            v = sampled_runtime(xs[0], ps, elapsed, u, 500.0)
            assert np.isfinite(v) and v >= 0.0
            e = elapsed if np.isfinite(elapsed) and elapsed > 0 else 0.0
            assert e <= v <= max(500.0, e)
    # Monotone in the level, and the median level gives the conditional median.
    draws = [sampled_runtime(xs[0], ps, 70.0, u, np.inf) for u in np.linspace(0.01, 0.99, 30)]
    assert np.all(np.diff(draws) >= 0.0)
    assert sampled_runtime(xs[0], ps, 70.0, 0.5, np.inf) == conditional_quantile_runtime(xs[0], ps, 70.0, 0.5)


def _sweep(code, state, request, knots, scenarios=SCENARIOS, queries=None):
    query_time, query_job = queries if queries is not None else (np.array([70.0]), np.array([1]))
    ladders = ladder(request, None, request)[None]
    how = projection(RULE_EASY, request, np.array([code]), knots, scenarios)
    return sweep_projected(query_time, query_job, state, ladders, how)


def test_one_running_job_and_an_empty_queue_starts_at_its_conditional_median_end():
    # 4 processors: job 0 holds them all from 0 (request 1000), job 1 (all 4) waits for it.
    submit, start, end = np.array([0.0, 10.0]), np.array([0.0, 100.0]), np.array([100.0, 150.0])
    procs, request = np.array([4, 4], dtype=np.int64), np.array([1000.0, 500.0])
    q = np.array([[20.0, 40.0, 60.0, 80.0, 95.0], [10, 20, 30, 40, 50]])
    knots = quantile_knots(np.log1p(q), LEVELS, np.log1p(request))
    est = _sweep(REMAINING_SAMPLED, (submit, start, end, procs, 4), request, knots)[0, 0]
    # The median of 32 Latin-hypercube draws lies between the draws' 15/32 and 17/32 strata.
    low, high = (conditional_quantile_runtime(knots[0][0], knots[1], 70.0, u) for u in (15 / 32, 17 / 32))
    assert low <= est <= high
    median = conditional_quantile_runtime(knots[0][0], knots[1], 70.0, 0.5)
    assert abs(est - median) <= 0.05 * median


def test_a_job_waiting_for_two_ends_starts_at_the_median_of_their_maximum_not_the_maximum_of_medians():
    # Jobs 0 and 1 hold 2 of 4 processors each with the same distribution and elapsed time; job 2
    # needs all 4: its start is the later end, whose median is the sqrt(1/2) conditional level.
    submit = np.array([0.0, 0.0, 10.0])
    start, end = np.array([0.0, 0.0, 100.0]), np.array([100.0, 100.0, 150.0])
    procs, request = np.array([2, 2, 4], dtype=np.int64), np.array([1000.0, 1000.0, 500.0])
    q = np.repeat(np.array([[20.0, 40.0, 60.0, 80.0, 95.0]]), 3, axis=0)
    knots = quantile_knots(np.log1p(q), LEVELS, np.log1p(request))
    state = (submit, start, end, procs, 4)
    queries = (np.array([50.0]), np.array([2]))
    sampled = _sweep(REMAINING_SAMPLED, state, request, knots, 4001, queries)[0, 0]
    l2 = _sweep(REMAINING_MEDIAN, state, request, knots, queries=queries)[0, 0]
    cq = [conditional_quantile_runtime(knots[0][0], knots[1], 50.0, u) for u in (0.5, 0.68, 0.73)]
    assert l2 == cq[0] < cq[1] <= sampled <= cq[2]


@pytest.mark.parametrize("seed", range(4))
def test_with_every_distribution_degenerate_rule_m_is_rule_l2(seed: int):
    state, request, _ = _random_schedule(seed)
    assert np.sum(state[1] > state[0]) >= 5  # jobs that wait, so the projection decides something
    # Every quantile at the request: every draw is the request, every end and length L2's (to
    # the knots' rounding: the lower tail's knot sits 1e-10 below in log, under a microsecond).
    q = np.repeat(request[:, None], len(LEVELS), axis=1)
    knots = quantile_knots(np.log1p(q), LEVELS, np.log1p(request))
    queries = (state[0], np.arange(len(request)))
    sampled = _sweep(REMAINING_SAMPLED, state, request, knots, queries=queries)
    l2 = _sweep(REMAINING_MEDIAN, state, request, knots, queries=queries)
    assert np.all(np.isfinite(l2))
    assert np.allclose(sampled, l2, rtol=0.0, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_estimates_are_finite_not_before_the_query_and_within_the_request_bound(seed: int):
    state, request, q = _random_schedule(seed)
    submit, start, end, procs, _ = state
    knots = quantile_knots(np.log1p(q), LEVELS, np.log1p(request))
    jobs = np.arange(len(request))
    est = _sweep(REMAINING_SAMPLED, state, request, knots, queries=(submit, jobs))[0]
    assert np.all(np.isfinite(est)) and np.all(est >= submit)
    for j in jobs:  # each job ahead ends by its limit: all running ones, then each queued in turn
        t = submit[j]
        running = (start <= t) & (end > t)
        ahead = (start > t) & (jobs <= j)
        bound = t + max(np.max(start[running] + request[running] - t, initial=0.0), 1.0)
        assert est[j] <= bound + request[ahead & (jobs < j)].sum()
    # Reproducible: the same queries give the same estimates.
    assert np.array_equal(est, _sweep(REMAINING_SAMPLED, state, request, knots, queries=(submit, jobs))[0])


def _random_schedule(seed: int):
    """A random EASY-FCFS schedule on limits of 30 jobs on 16 processors, and quantiles below
    each request."""
    from rush.core.config import CoreConfig
    from rush.core.policies import parse_policy
    from rush.simulator.engine import simulate
    from rush.workload.model import Workload

    rng = np.random.default_rng(seed)
    n = 30
    request = rng.integers(60, 5000, n).astype(float)
    w = Workload(
        job_id=np.arange(1, n + 1),
        submit=np.sort(rng.uniform(0, 3000, n).round()),
        runtime=np.maximum(np.round(request * rng.uniform(0.01, 1.0, n)), 1.0),
        requested_time=request,
        procs=rng.choice([1, 2, 4, 8, 16], n).astype(np.int64),
        user=np.full(n, -1),
        machine_procs=16,
    )
    result = simulate(w, CoreConfig(policy=parse_policy("FCFS"), backfill="easy", threshold=None))
    start = np.asarray(result.start, dtype=np.float64)
    q = np.sort(request[:, None] * rng.uniform(0.01, 1.0, (n, len(LEVELS))), axis=1)
    state = (np.asarray(w.submit, dtype=np.float64), start, start + w.runtime, w.procs, 16)
    return state, request, q
