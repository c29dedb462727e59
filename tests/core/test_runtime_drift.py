"""Rule D (rush.core.runtime_drift): a user's predicted quantiles shifted by the model's recent
errors for them, from completed jobs only; bad history never gives NaN or a negative runtime."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.remaining_runtime import REFUSED_NOT_FINITE, quantiles_refused
from rush.core.runtime_drift import (
    DRIFT_CAP,
    DRIFT_JOBS,
    DRIFT_PRIOR_JOBS,
    drift_residual,
    drift_shift,
    drift_shifts_walkforward,
    drifted_quantiles,
    quantile_median,
)
from rush.core.snapshot import RuntimeQuantiles

LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)


def test_a_residual_is_the_log_ratio_of_runtime_to_predicted_median():
    assert drift_residual(400.0, 100.0, 3600.0) == pytest.approx(math.log(4.0))
    assert drift_residual(25.0, 100.0, 3600.0) == pytest.approx(math.log(0.25))


@pytest.mark.parametrize(
    ("runtime", "median", "limit", "expected"),
    [
        (0.0, 100.0, 3600.0, math.log(1 / 100)),  # a zero runtime counts as 1 s
        (1e12, 100.0, 3600.0, math.log(36.0)),  # past its request: the request
        (100.0, 0.0, 3600.0, math.log(100.0)),  # a zero median counts as 1 s
    ],
)
def test_zero_and_absurd_runtimes_are_clipped_not_dropped(runtime, median, limit, expected):
    assert drift_residual(runtime, median, limit) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("runtime", "median", "limit"),
    [
        (math.nan, 100.0, 3600.0),
        (math.inf, 100.0, 3600.0),
        (-5.0, 100.0, 3600.0),
        (100.0, math.nan, 3600.0),
        (100.0, -1.0, 3600.0),
        (100.0, 100.0, 0.0),
        (100.0, 100.0, math.inf),
    ],
)
def test_unusable_history_gives_no_residual(runtime, median, limit):
    assert math.isnan(drift_residual(runtime, median, limit))


def test_no_history_is_the_models_own_quantiles_and_one_job_counts_a_fifth():
    assert drift_shift([]) == 0.0
    assert drift_shift([math.nan, math.inf, -math.inf]) == 0.0  # nothing usable: the fallback
    r = math.log(3.0)
    assert drift_shift([r]) == pytest.approx(r / (1 + DRIFT_PRIOR_JOBS))
    assert drift_shift([math.nan, r]) == pytest.approx(r / (1 + DRIFT_PRIOR_JOBS))


def test_the_shift_reads_the_median_of_the_last_jobs_only_and_is_capped():
    old = [-3.0] * 20
    recent = [0.5] * DRIFT_JOBS
    n = DRIFT_JOBS
    assert drift_shift(old + recent) == pytest.approx(n / (n + DRIFT_PRIOR_JOBS) * 0.5)
    # One failed run among the last jobs does not swing it (the median, not the mean).
    assert drift_shift([0.5] * (DRIFT_JOBS - 1) + [-9.0]) == pytest.approx(n / (n + DRIFT_PRIOR_JOBS) * 0.5)
    assert drift_shift([50.0] * 20) == pytest.approx(DRIFT_CAP)
    assert drift_shift([-50.0] * 20) == pytest.approx(-DRIFT_CAP)


def test_shifted_quantiles_are_scaled_and_never_nan_or_negative():
    q = RuntimeQuantiles(LEVELS, (10.0, 20.0, 40.0, 80.0, 160.0))
    up = drifted_quantiles(q, math.log(2.0))
    assert up.levels == q.levels and up.seconds == pytest.approx((20.0, 40.0, 80.0, 160.0, 320.0))
    assert drifted_quantiles(q, 0.0) is q and drifted_quantiles(q, math.nan) is q
    huge = drifted_quantiles(q, 1e9)  # capped at the rule's factor
    assert huge.seconds[0] == pytest.approx(10.0 * math.exp(DRIFT_CAP))
    # Quantiles the core refuses stay refused (never made finite by the shift).
    bad = RuntimeQuantiles(LEVELS, (math.nan, 20.0, 40.0, 80.0, 160.0))
    assert quantiles_refused(bad.levels, drifted_quantiles(bad, 1.0).seconds, 3600.0) == REFUSED_NOT_FINITE


def test_the_median_of_quantiles_interpolates_in_log_runtime():
    assert quantile_median(LEVELS, (1.0, 2.0, 3.0, 4.0, 5.0)) == pytest.approx(3.0)
    assert quantile_median((0.25, 0.75), (0.0, 99.0)) == pytest.approx(9.0)  # sqrt(1 * 100) - 1
    assert math.isnan(quantile_median(LEVELS, (1.0, math.nan, 3.0, 4.0, 5.0)))
    assert math.isnan(quantile_median((), ()))
    assert math.isnan(quantile_median(LEVELS, (1.0, 2.0)))


def test_the_walk_forward_reads_a_residual_only_from_its_jobs_end():
    user = np.array([7, 7, 8, 7])
    submit = np.array([0.0, 10.0, 10.0, 30.0])
    end = np.array([20.0, 40.0, 15.0, np.inf])  # job 0 ends after job 1's submission
    residual = np.array([1.0, 1.0, 2.0, np.nan])
    shift = drift_shifts_walkforward(user, submit, end, residual)
    one = 1 / (1 + DRIFT_PRIOR_JOBS)
    assert shift.tolist() == pytest.approx([0.0, 0.0, 0.0, one])  # only job 0 had ended by 30
    with pytest.raises(ValueError, match="one length"):
        drift_shifts_walkforward(user, submit[:2], end, residual)
