"""The slowdown index of a predicted runtime distribution (rule H14, ``rush.core.slowdown_rank``)."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.runtime_predictions import ranking_runtimes
from rush.core.slowdown_rank import equivalent_runtime, slowdown_ranking_runtimes
from rush.errors import PolicyError

LEVELS = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
TAU = 10.0


def test_a_one_point_distribution_ranks_at_its_point() -> None:
    points = np.array([0.0, 3.0, 10.0, 500.0, 36_000.0])
    quantiles = np.repeat(points[:, None], len(LEVELS), axis=1)
    np.testing.assert_allclose(
        slowdown_ranking_runtimes(quantiles, LEVELS, points, TAU), points, rtol=1e-9, atol=1e-9
    )


def test_the_equivalent_runtime_inverts_r_times_max_r_tau() -> None:
    r = np.array([0.0, 1.0, 9.5, 10.0, 11.0, 1e5])
    np.testing.assert_allclose(equivalent_runtime(r * np.maximum(r, TAU), TAU), r, rtol=1e-12)


def test_a_job_that_may_be_tiny_ranks_before_a_certain_shorter_mean() -> None:
    """D12's case: an 8 s KTH-SP2 job whose distribution spans 43 s to its 52,500 s request has a
    long mean (the predicted mean ranks it behind a certain 2 h job), but delaying it risks a
    bounded slowdown of thousands, so its slowdown index ranks it first."""
    from rush.models.runtime_quantiles import mean_of_quantiles

    wide = np.array([43.0, 1_799.0, 36_413.0, 50_345.0, 52_500.0])
    certain = np.full(5, 7_200.0)
    quantiles, request = np.vstack([wide, certain]), np.array([52_500.0, 7_200.0])
    mean = mean_of_quantiles(np.log1p(quantiles), LEVELS, np.log1p(request))
    assert mean[0] > mean[1]
    risk = slowdown_ranking_runtimes(quantiles, LEVELS, request, TAU)
    assert risk[0] < risk[1]


def test_never_above_the_request_and_larger_distributions_rank_later() -> None:
    rng = np.random.default_rng(7)
    n = 2_000
    request = np.exp(rng.uniform(0, 12, n))
    quantiles = np.sort(request[:, None] * np.exp(-rng.uniform(0, 10, (n, len(LEVELS)))), axis=1)
    risk = slowdown_ranking_runtimes(quantiles, LEVELS, request, TAU)
    assert np.all(np.isfinite(risk)) and np.all(risk >= 0) and np.all(risk <= request * (1 + 1e-12))
    later = slowdown_ranking_runtimes(np.minimum(quantiles * 2.0, request[:, None]), LEVELS, request, TAU)
    assert np.all(later >= risk * (1 - 1e-9))


def test_quantiles_above_the_request_are_the_request() -> None:
    """A job is killed at its request: a predicted quantile above it reads as the request."""
    request = np.array([3_600.0])
    over = np.array([[100.0, 200.0, 400.0, 5_000.0, 9_000.0]])
    capped = np.minimum(over, request[:, None])
    risk = slowdown_ranking_runtimes(over, LEVELS, request, TAU)
    np.testing.assert_allclose(risk, slowdown_ranking_runtimes(capped, LEVELS, request, TAU), rtol=1e-12)
    assert risk[0] < 3_600.0


def test_a_job_without_usable_quantiles_ranks_on_its_request() -> None:
    quantiles = np.array([[np.nan] * 5, [1.0, 2.0, -3.0, 4.0, 5.0], [np.inf] * 5, [5.0] * 5, [5.0] * 5])
    request = np.array([100.0, 200.0, 300.0, np.nan, 5.0])
    risk = slowdown_ranking_runtimes(quantiles, LEVELS, request, TAU)
    assert np.isnan(risk[:4]).all() and risk[4] == pytest.approx(5.0)
    ranked = ranking_runtimes(risk, request, np.array([100.0, 200.0, 300.0, 400.0, 50.0]))
    np.testing.assert_allclose(ranked, [100.0, 200.0, 300.0, 400.0, 5.0])


@pytest.mark.parametrize("tau", [0.0, -1.0, np.nan, np.inf])
def test_a_bad_tau_is_refused(tau: float) -> None:
    with pytest.raises(PolicyError, match="tau"):
        slowdown_ranking_runtimes(np.ones((1, 5)), LEVELS, np.ones(1), tau)


@pytest.mark.parametrize(
    ("quantiles", "levels", "requests"),
    [
        (np.ones((2, 4)), LEVELS, np.ones(2)),
        (np.ones((2, 5)), LEVELS, np.ones(3)),
        (np.ones(5), LEVELS, np.ones(1)),
        (np.ones((1, 5)), np.array([0.1, 0.5, 0.25, 0.75, 0.9]), np.ones(1)),
        (np.ones((1, 5)), np.array([0.0, 0.25, 0.5, 0.75, 1.0]), np.ones(1)),
    ],
)
def test_bad_shapes_and_levels_are_refused(
    quantiles: np.ndarray, levels: np.ndarray, requests: np.ndarray
) -> None:
    with pytest.raises(PolicyError):
        slowdown_ranking_runtimes(quantiles, levels, requests, TAU)
