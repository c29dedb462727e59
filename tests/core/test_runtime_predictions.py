"""The core's runtime-prediction rules: the guard on predictions and the correction rule
(issue 29), in the live pass and in the simulator's event loop."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.runtime_predictions import (
    CORRECTION_NONE,
    CORRECTION_REQUEST,
    CORRECTION_STEPWISE,
    STEPWISE_INCREMENTS,
    correction_code,
    predicted_runtime,
    predicted_runtimes,
    running_estimate,
    running_estimates,
)
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, Snapshot
from rush.errors import PolicyError


@pytest.mark.parametrize(
    ("prediction", "requested", "expected"),
    [
        (300.0, 1000.0, 300.0),
        (5000.0, 1000.0, 1000.0),  # capped by the request
        (math.nan, 1000.0, 1000.0),  # fallback: the request
        (-5.0, 1000.0, 1000.0),
        (0.0, 1000.0, 1000.0),
        (math.inf, 1000.0, 1000.0),
        (0.25, 1000.0, 1.0),  # at least one second
        (0.25, 0.5, 0.5),  # ... but never beyond the request
    ],
)
def test_predicted_runtime_guard(prediction: float, requested: float, expected: float) -> None:
    assert predicted_runtime(prediction, requested) == expected


def test_guard_never_publishes_nan_or_negative() -> None:
    rng = np.random.default_rng(3)
    raw = rng.normal(0, 1e5, 5000)
    raw[::7] = np.nan
    raw[::11] = -np.inf
    request = rng.uniform(1, 1e5, 5000)
    out = predicted_runtimes(raw, request)
    assert np.isfinite(out).all()
    assert (out > 0).all() and (out <= request).all()


def test_stepwise_correction_follows_tsafrirs_amounts() -> None:
    predicted, limit = 100.0, 20_000.0
    # Before it expires the prediction stands.
    assert running_estimate(CORRECTION_STEPWISE, predicted, 99.0, limit) == predicted
    # At expiry: +1 min; then +5 min, +15 min... added to the original prediction.
    assert running_estimate(CORRECTION_STEPWISE, predicted, 100.0, limit) == 160.0
    assert running_estimate(CORRECTION_STEPWISE, predicted, 160.0, limit) == 400.0
    assert running_estimate(CORRECTION_STEPWISE, predicted, 400.0, limit) == 1000.0
    # Never beyond the limit (the request), where the job is killed.
    assert running_estimate(CORRECTION_STEPWISE, predicted, 7300.0, limit) == 18_100.0  # 100 s + 5 h
    assert running_estimate(CORRECTION_STEPWISE, predicted, 18_100.0, limit) == limit
    assert running_estimate(CORRECTION_STEPWISE, predicted, 1e9, 1e12) == 1e12  # past the last amount


def test_request_and_none_corrections() -> None:
    assert running_estimate(CORRECTION_REQUEST, 100.0, 50.0, 900.0) == 100.0
    assert running_estimate(CORRECTION_REQUEST, 100.0, 100.0, 900.0) == 900.0
    assert running_estimate(CORRECTION_NONE, 100.0, 500.0, 900.0) == 100.0


def test_a_corrected_estimate_is_always_ahead_of_the_run_or_at_its_limit() -> None:
    rng = np.random.default_rng(5)
    predicted = rng.uniform(1, 1e4, 3000)
    limit = predicted + rng.uniform(0, 1e6, 3000)
    elapsed = rng.uniform(0, 1.2, 3000) * limit
    for code in (CORRECTION_REQUEST, CORRECTION_STEPWISE):
        out = running_estimates(code, predicted, elapsed, limit)
        assert ((out > elapsed) | (out == limit)).all()
        assert (out >= predicted).all() and (out <= limit).all()
    assert len(STEPWISE_INCREMENTS) == 11 and np.all(np.diff(STEPWISE_INCREMENTS) > 0)


def test_unknown_correction_is_a_policy_error() -> None:
    with pytest.raises(PolicyError, match="prediction correction"):
        correction_code("doubling")
    with pytest.raises(PolicyError, match="prediction_correction"):
        CoreConfig(prediction_correction="doubling")


def _head_reservation(correction: str) -> float:
    """A full machine: one running job predicted 100 s (request 10,000 s) has run 150 s; the
    head needs the whole machine. Its reservation is the running job's estimated end."""
    snapshot = Snapshot(
        now=150.0,
        total_procs=2,
        free_procs=0,
        running=(RunningJob(1, start=0.0, procs=2, requested_time=10_000.0, estimate=100.0),),
        pending=(PendingJob(2, submit=10.0, procs=2, requested_time=50.0),),
    )
    decided = schedule(
        snapshot, CoreConfig.from_names("FCFS", "easy", None, prediction_correction=correction)
    )
    (reserve,) = decided.of("reserve")
    return float(reserve.value)


def test_live_pass_corrects_expired_predictions() -> None:
    assert _head_reservation("none") == 150.0  # an expired estimate counts as ending now
    assert _head_reservation("stepwise") == 160.0  # 100 s + 1 min
    assert _head_reservation("request") == 10_000.0


def test_request_first_keys_order_by_request_then_prediction() -> None:
    """H15: SPF-CI's order between different requests is kept; equal requests go by prediction."""
    from rush.core.runtime_predictions import ranking_runtimes, request_first_runtimes

    rng = np.random.default_rng(3)
    requested = rng.choice([1.0, 2.0, 60.0, 61.0, 3600.0, 3600.5, 86_400.0], size=500)
    predictions = requested * rng.uniform(0.0, 1.5, size=500)
    predictions[::7] = np.nan
    keys = request_first_runtimes(predictions, requested)
    guarded = predicted_runtimes(predictions, requested)
    lexicographic = np.lexsort((guarded, requested))
    assert np.all(np.diff(keys[lexicographic]) >= 0)
    # Different requests never swap; equal requests (above the guard's floor) with different guarded
    # predictions never tie; a 1 s request keeps its request.
    assert np.all(keys <= requested) and np.all(keys >= 1.0)
    assert np.all(keys[requested == 1.0] == 1.0)
    same = (requested[:, None] == requested[None, :]) & (requested[:, None] >= 2.0)
    differ = guarded[:, None] < guarded[None, :]
    assert np.all((keys[:, None] < keys[None, :])[same & differ])
    # Through the ranking guard the keys are unchanged (every key is a valid runtime).
    np.testing.assert_array_equal(ranking_runtimes(keys, requested, requested), keys)


def test_request_first_keys_keep_a_request_that_is_not_finite_and_refuse_bad_shapes() -> None:
    from rush.core.runtime_predictions import request_first_runtimes

    keys = request_first_runtimes(np.array([5.0, 5.0, 1.0]), np.array([np.inf, np.nan, 10.0]))
    assert keys[0] == np.inf and np.isnan(keys[1]) and 9.5 <= keys[2] < 10.0
    with pytest.raises(PolicyError, match="predictions for"):
        request_first_runtimes(np.ones(2), np.ones(3))


def test_confident_keys_use_the_upper_quantile_only_at_most_half_the_request() -> None:
    """H17: a job ranks on its q0.9 only where q0.9 <= request / 2; every other job, and every bad
    row, on its request (so equal requests keep tying, i.e. keep their arrival order)."""
    from rush.core.runtime_predictions import confident_ranking_runtimes, ranking_runtimes

    levels = np.array([0.1, 0.5, 0.9])
    quantiles = np.array(
        [
            [10.0, 100.0, 400.0],  # q0.9 400 <= 1000 / 2: confident, ranks on 400
            [10.0, 100.0, 600.0],  # 600 > 500: the request
            [10.0, 100.0, 500.0],  # exactly half: confident
            [0.0, 0.0, 0.2],  # confident, floored at one second
            [np.nan, 1.0, 2.0],  # a NaN elsewhere in the row does not matter
            [1.0, 2.0, np.nan],  # no upper quantile: the request
            [1.0, 2.0, -3.0],  # a negative one: the request
            [1.0, 2.0, 3.0],  # no finite request: kept as it is
        ]
    )
    requested = np.array([1000.0, 1000.0, 1000.0, 1000.0, 1000.0, 1000.0, 1000.0, np.inf])
    keys = confident_ranking_runtimes(quantiles, levels, requested)
    np.testing.assert_array_equal(keys, [400.0, 1000.0, 500.0, 1.0, 2.0, 1000.0, 1000.0, np.inf])
    # Through the ranking guard the keys are unchanged.
    np.testing.assert_array_equal(ranking_runtimes(keys, requested, requested), keys)
    # The level and the margin are the rule's: q0.5 at margin 10 makes rows 0-4 confident.
    np.testing.assert_array_equal(
        confident_ranking_runtimes(quantiles, levels, requested, level=0.5, margin=10.0)[:5],
        [100.0, 100.0, 100.0, 1.0, 1.0],
    )


def test_confident_step_keys_move_a_confident_job_one_request_step_and_no_further() -> None:
    """H18: H17's gate, but a confident job ranks on half its request whatever its q0.9, so it
    passes only jobs whose request lies in (request / 2, request], and confident jobs keep their
    requests' order (equal requests tie, i.e. keep arrival order) among themselves."""
    from rush.core.runtime_predictions import (
        confident_ranking_runtimes,
        confident_step_ranking_runtimes,
        ranking_runtimes,
    )

    levels = np.array([0.1, 0.5, 0.9])
    quantiles = np.array(
        [
            [10.0, 100.0, 400.0],  # confident: 1000 / 2, not 400
            [1.0, 5.0, 20.0],  # confident with a far smaller q0.9: still 1000 / 2 (ties row 0)
            [10.0, 100.0, 600.0],  # 600 > 500: the request
            [10.0, 100.0, 500.0],  # exactly half: confident
            [1.0, 2.0, np.nan],  # no upper quantile: the request
            [0.0, 0.0, 0.1],  # confident with a 1.5 s request: floored at one second
            [1.0, 2.0, 3.0],  # no finite request: kept as it is
        ]
    )
    requested = np.array([1000.0, 1000.0, 1000.0, 1000.0, 1000.0, 1.5, np.inf])
    keys = confident_step_ranking_runtimes(quantiles, levels, requested)
    np.testing.assert_array_equal(keys, [500.0, 500.0, 1000.0, 500.0, 1000.0, 1.0, np.inf])
    np.testing.assert_array_equal(ranking_runtimes(keys, requested, requested), keys)
    # The same jobs move as under H17, never further than H17 moves them.
    h17 = confident_ranking_runtimes(quantiles, levels, requested)
    np.testing.assert_array_equal(keys < requested, h17 < requested)
    assert np.all(keys[np.isfinite(requested)] >= h17[np.isfinite(requested)])
    # A confident job does not pass a job requesting half its request or less.
    assert not np.any(keys[[0, 1, 3]] > 500.0)
    # Its errors are H17's.
    with pytest.raises(PolicyError, match="margin"):
        confident_step_ranking_runtimes(quantiles, levels, requested, margin=0.5)
    with pytest.raises(PolicyError, match="level"):
        confident_step_ranking_runtimes(quantiles, levels, requested, level=0.75)


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"level": 0.75}, "level"),
        ({"margin": 0.5}, "margin"),
        ({"margin": float("nan")}, "margin"),
        ({"requested_time": np.ones(3)}, "confident_ranking_runtimes"),
    ],
)
def test_confident_keys_refuse_a_level_the_model_lacks_a_margin_below_one_and_bad_shapes(
    kwargs: dict, where: str
) -> None:
    from rush.core.runtime_predictions import confident_ranking_runtimes

    args = {"quantiles": np.ones((2, 3)), "levels": np.array([0.1, 0.5, 0.9]), "requested_time": np.ones(2)}
    with pytest.raises(PolicyError, match=where) as error:
        confident_ranking_runtimes(**(args | kwargs))
    assert error.value.fix


def test_random_tie_breaks_keep_distinct_keys_and_order_ties_by_one_permutation() -> None:
    """D15: equal keys go by the seed's permutation of the jobs (the same for every rule), distinct
    keys keep their order, and the keys stay valid runtimes (the ranking guard leaves them)."""
    from rush.core.runtime_predictions import random_tie_breaks, ranking_runtimes

    rng = np.random.default_rng(5)
    requested = rng.choice([60.0, 61.0, 3600.0, 86_400.0], size=400)
    keys = np.where(rng.random(400) < 0.5, requested, requested * rng.uniform(0.01, 1.0, size=400))
    keys[:3] = 1.0  # at the guard's floor: left alone
    keys[3] = np.nan
    broken = random_tie_breaks(keys, 7)
    permutation = np.random.default_rng(7).permutation(400)
    fine = np.isfinite(keys) & (keys > 1.0)
    intended = np.lexsort((permutation[fine], keys[fine]))
    assert np.all(np.diff(broken[fine][intended]) > 0)  # ties spread, in the permutation's order
    assert np.all(broken[:3] == 1.0) and np.isnan(broken[3])
    assert np.all(broken[fine] <= keys[fine]) and np.all(broken[fine] > 1.0)
    guarded = ranking_runtimes(broken, requested, requested)
    np.testing.assert_array_equal(guarded[fine], broken[fine])
    # Another seed reorders the ties only: distinct keys never swap, a key without ties stays.
    other = random_tie_breaks(keys, 8)
    below = keys[fine][:, None] < keys[fine][None, :]
    assert np.all((other[fine][:, None] < other[fine][None, :])[below])
    values, counts = np.unique(keys[fine], return_counts=True)
    alone = np.isin(keys, values[counts == 1])
    np.testing.assert_array_equal(other[alone], keys[alone])
    assert not np.array_equal(np.argsort(other[fine]), np.argsort(broken[fine]))
    with pytest.raises(PolicyError, match="keys of shape"):
        random_tie_breaks(np.ones((2, 2)), 1)
    with pytest.raises(PolicyError, match="too close"):  # 1e15's spacing is 0.125 s
        random_tie_breaks(np.array([1e15 - 0.125, 1e15, 1e15, 1e15]), 1)


def test_last_two_prediction_is_the_mean_of_the_users_last_two_finished_runs() -> None:
    from rush.core.runtime_predictions import last_two_prediction, record_finished_run

    history = np.full((3, 2), np.nan)
    assert last_two_prediction(history, 0, 1000.0) == 1000.0  # nothing finished: the request
    record_finished_run(history, 0, 100.0)
    assert last_two_prediction(history, 0, 1000.0) == 1000.0  # one run: still the request
    record_finished_run(history, 0, 300.0)
    assert last_two_prediction(history, 0, 1000.0) == 200.0
    record_finished_run(history, 0, 900.0)  # the oldest (100) drops out
    assert last_two_prediction(history, 0, 1000.0) == 600.0
    assert last_two_prediction(history, 0, 500.0) == 500.0  # capped by the request
    assert last_two_prediction(history, 1, 1000.0) == 1000.0  # another user's runs do not count
    assert last_two_prediction(history, -1, 1000.0) == 1000.0  # unknown user: the request
    # A runtime that says nothing is not recorded; an unknown user records nothing.
    for bad in (np.nan, -1.0, np.inf):
        record_finished_run(history, 0, bad)
    record_finished_run(history, -1, 5.0)
    assert history[0].tolist() == [900.0, 300.0]
    # The core's guard: a mean of 0 s falls back to the request, one under 1 s is 1 s.
    record_finished_run(history, 2, 0.0)
    record_finished_run(history, 2, 0.0)
    assert last_two_prediction(history, 2, 1000.0) == 1000.0
    record_finished_run(history, 2, 1.0)
    assert last_two_prediction(history, 2, 1000.0) == 1.0
