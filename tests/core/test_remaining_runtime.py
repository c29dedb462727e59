"""A running job's expected runtime given how long it has run (rush.core.remaining_runtime):
never below the elapsed time, never above the request (or the elapsed time past it), never NaN
or negative, not decreasing as the job runs on, and the distribution's mean at the start."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.remaining_runtime import (
    conditional_mean_runtime,
    conditional_mean_runtimes,
    conditional_quantile_runtime,
    quantile_knots,
)

LEVELS = np.array([0.1, 0.25, 0.5, 0.75, 0.9])


def _knots(seed: int, n: int = 200):
    rng = np.random.default_rng(seed)
    q = np.sort(np.exp(rng.uniform(0.0, 11.0, (n, len(LEVELS)))), axis=1)
    q[rng.random(n) < 0.1] = q[0, 0]  # collapsed distributions (every quantile equal)
    request = q[:, -1] * rng.choice([1.0, 1.5, 20.0], n)
    xs, ps = quantile_knots(np.log1p(q), LEVELS, np.log1p(request))
    return xs, ps, request


@pytest.mark.parametrize("seed", range(5))
def test_between_the_elapsed_time_and_the_request_and_never_nan(seed: int) -> None:
    xs, ps, request = _knots(seed)
    rng = np.random.default_rng(seed + 10)
    for elapsed in (0.0, 1.0, 100.0, 1e4, 1e6, 1e8):
        got = conditional_mean_runtimes(xs, ps, np.full(len(xs), elapsed))
        assert np.all(np.isfinite(got)) and np.all(got >= 0.0)
        assert np.all(got >= elapsed)
        assert np.all(got <= np.maximum(request, elapsed) * (1 + 1e-9))
    bad = rng.choice([np.nan, -5.0, np.inf, -np.inf], len(xs))
    got = conditional_mean_runtimes(xs, ps, bad)
    assert np.all(np.isfinite(got)) and np.all(got >= 0.0)


@pytest.mark.parametrize("seed", range(3))
def test_does_not_fall_as_the_job_runs_on(seed: int) -> None:
    xs, ps, _ = _knots(seed, n=50)
    elapsed = np.concatenate([[0.0], np.exp(np.linspace(0.0, 14.0, 300))])
    for r in range(len(xs)):
        got = np.array([conditional_mean_runtime(xs[r], ps, e) for e in elapsed])
        assert np.all(np.diff(got) >= -1e-6 * got[1:]), r


def test_at_the_start_the_mean_of_the_distribution() -> None:
    # The midpoint rule over many levels of the same quantile function.
    xs, ps, _ = _knots(7, n=20)
    grid = (np.arange(20000) + 0.5) / 20000
    for r in range(len(xs)):
        midpoint = np.expm1(np.interp(grid, ps, xs[r])).mean()
        assert conditional_mean_runtime(xs[r], ps, 0.0) == pytest.approx(midpoint, rel=1e-4)


def test_past_the_median_the_expected_runtime_is_the_upper_half_mean() -> None:
    # Uniform in log between two points: above the median, the mean of the upper half.
    xs = np.log1p(np.array([0.0, 99.0, 9999.0]))
    ps = np.array([0.0, 0.5, 1.0])
    upper = (np.exp(xs[2]) - np.exp(xs[1])) / ((xs[2] - xs[1]) / 0.5) / 0.5 - 1.0
    assert conditional_mean_runtime(xs, ps, 99.0) == pytest.approx(upper)
    assert conditional_mean_runtime(xs, ps, 20000.0) == 20000.0  # past the request: what it has run


@pytest.mark.parametrize("seed", range(3))
def test_the_conditional_median_is_bounded_and_does_not_fall(seed: int) -> None:
    xs, ps, request = _knots(seed, n=50)
    elapsed = np.concatenate([[0.0], np.exp(np.linspace(0.0, 14.0, 200))])
    for r in range(len(xs)):
        got = np.array([conditional_quantile_runtime(xs[r], ps, e, 0.5) for e in elapsed])
        assert np.all(np.isfinite(got)) and np.all(got >= elapsed)
        assert np.all(got <= np.maximum(request[r], elapsed) * (1 + 1e-9))
        assert np.all(np.diff(got) >= -1e-6 * got[1:]), r
        # at the start, the predicted median itself; never above the conditional mean's top
        assert got[0] == pytest.approx(np.expm1(np.interp(0.5, ps, xs[r])))
    for bad in (np.nan, -3.0, np.inf):
        value = conditional_quantile_runtime(xs[0], ps, bad, 0.5)
        assert np.isfinite(value) and value >= 0.0
