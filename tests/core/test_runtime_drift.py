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
    drift_projection_length,
    drift_residual,
    drift_shift,
    drift_shifts_walkforward,
    drifted_quantiles,
    quantile_median,
    seeded_records,
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


# -- rule D2 (round 15, post hoc; off by default) ------------------------------------------


def test_the_seed_keeps_each_users_last_residuals_of_jobs_ended_by_the_moment():
    user = np.array([1, 1, 2, 1, 1, 3, 2])
    end = np.array([10.0, 30.0, 20.0, 40.0, 500.0, np.nan, 25.0])
    residual = np.array([0.1, 0.3, 0.2, 0.4, 9.0, 1.0, np.nan])
    record = seeded_records(user, end, residual, before=100.0)
    # End order, not input order; a job that ends after the moment, a NaN end or residual: left out.
    assert record == {1: [0.1, 0.3, 0.4], 2: [0.2]}
    many = seeded_records(np.zeros(20, dtype=int), np.arange(20.0), np.arange(20.0), before=np.inf)
    assert many == {0: [float(v) for v in range(20 - DRIFT_JOBS, 20)]}
    assert seeded_records(np.array([], dtype=int), np.array([]), np.array([]), 0.0) == {}
    with pytest.raises(ValueError, match="one length"):
        seeded_records(np.array([1]), np.array([1.0, 2.0]), np.array([0.0]), 5.0)


def test_the_length_is_scaled_both_ways_within_one_second_and_the_request():
    length = np.array([1000.0, 1000.0, 1000.0, 1000.0, np.nan, 0.5, 1000.0])
    shift = np.array([math.log(2.0), -math.log(2.0), 10.0, np.nan, 0.3, -1.0, -10.0])
    request = np.array([3600.0, 3600.0, 3600.0, 3600.0, 3600.0, 3600.0, np.nan])
    out = drift_projection_length(length, shift, request)
    # Downward too: D2 is not floored by the reservation estimate as D under L2 was.
    assert out[:2] == pytest.approx([2000.0, 500.0])
    assert out[2] == pytest.approx(min(1000.0 * math.exp(DRIFT_CAP), 3600.0))  # capped, then the request
    assert out[3] == 1000.0  # no usable shift: the length as it was
    assert math.isnan(out[4])  # no length: the caller's fallback
    assert out[5] == 1.0  # never below a second
    assert out[6] == pytest.approx(1000.0 / 4.0)  # no finite request: only the cap bounds it
    assert np.all(out[np.isfinite(out)] > 0.0)


def test_the_projection_scales_a_queued_jobs_l2_length_only_when_asked():
    from dataclasses import replace

    from rush.core.remaining_runtime import queued_projection_runtimes
    from rush.core.snapshot import PendingJob

    q = RuntimeQuantiles(LEVELS, (100.0, 200.0, 400.0, 800.0, 1600.0))
    plain = PendingJob(1, 0.0, 1, 3600.0, 300.0, runtime_quantiles=q)
    down = replace(plain, job_id=2, runtime_quantiles=replace(q, projection_shift=-math.log(2.0)))
    up = replace(plain, job_id=3, runtime_quantiles=replace(q, projection_shift=math.log(2.0)))
    out, refused = queued_projection_runtimes([plain, down, up], np.array([300.0, 300.0, 300.0]))
    assert not refused
    assert out[0] == pytest.approx(800.0)  # L2: max(estimate, Q0.75)
    assert out[1] == pytest.approx(400.0)  # below the estimate: the shift is on the length itself
    assert out[2] == pytest.approx(1600.0)
