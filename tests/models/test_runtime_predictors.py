"""Runtime predictors (issue 29): EASY++'s mean of the user's last two runtimes, Gaussier et
al.'s regression with an asymmetric loss, the walk-forward that feeds the simulator, and bad
history."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.errors import ModelError
from rush.models.runtime_predictors import (
    EasyPlusPlusPredictor,
    GaussierPredictor,
    RuntimeJobs,
    RuntimePredictor,
    make_predictor,
    predict_walkforward,
    usable_history,
)
from rush.models.runtime_predictors.asymmetric_regression import AsymmetricRidgeRegressor
from tests.core.helpers import workload


def _done(users, runtimes, requests=None, procs=None):
    n = len(users)
    return RuntimeJobs.of(
        users,
        np.zeros(n),
        np.ones(n, np.int64) if procs is None else procs,
        np.full(n, 10_000.0) if requests is None else requests,
        runtime=runtimes,
        end=np.arange(n, dtype=float),
    )


def _new(users, requests):
    n = len(users)
    return RuntimeJobs.of(
        users, np.full(n, 100.0), np.ones(n, np.int64), requests, job_id=np.arange(100, 100 + n)
    )


def test_easy_plus_plus_is_the_mean_of_the_last_two_capped_with_the_request_as_fallback() -> None:
    p = EasyPlusPlusPredictor()
    assert isinstance(p, RuntimePredictor)
    p.observe(_done([1, 1, 1, 2], [100.0, 200.0, 400.0, 50.0]))
    got = p.predict(_new([1, 1, 2, 3, -1], np.array([10_000.0, 250.0, 800.0, 900.0, 700.0])))
    # user 1: (200 + 400) / 2, then capped by a 250 s request; user 2 has one job, user 3
    # none, the unknown user (-1) no history: their requests.
    assert got.tolist() == [300.0, 250.0, 800.0, 900.0, 700.0]


def test_walkforward_uses_only_jobs_finished_before_the_submission() -> None:
    # (submit, procs, runtime, request); one user (-1 in a trace without users: set below).
    w = workload(
        4, [(0, 1, 10, 1000), (0, 1, 30, 1000), (20, 1, 50, 1000), (35, 1, 5, 1000), (200, 1, 5, 1000)]
    )
    w.user[:] = 7
    w.extra["wait"] = np.zeros(len(w))
    got = predict_walkforward(w, EasyPlusPlusPredictor())
    # Job 2 (t=20): only job 0 has ended (t=10): request. Job 3 (t=35): jobs 0 and 1 ended
    # (10, 30 s): 20. Job 4 (t=200): the last two to end were jobs 3 (5 s, ends 40) and 2 (50 s, ends 70).
    assert got.predicted.tolist() == [1000.0, 1000.0, 1000.0, 20.0, 27.5]


def test_bad_history_is_dropped_or_clipped_never_published() -> None:
    done = _done([1, 1, 1, 1, 1], np.array([np.nan, -5.0, 0.0, 5000.0, 100.0]), requests=np.full(5, 1000.0))
    kept, dropped, clipped = usable_history(done)
    assert (dropped, clipped) == (2, 1)
    assert kept.runtime.tolist() == [0.0, 1000.0, 100.0]
    for predictor in (EasyPlusPlusPredictor(), GaussierPredictor()):
        predictor.observe(kept)
        predictor.fit(kept)
        raw = predictor.predict(_new([1, 1, 4], np.array([1000.0, np.nan, 300.0])))
        assert not np.any(raw < 0)
    from rush.core.runtime_predictions import predicted_runtimes

    guarded = predicted_runtimes(np.array([np.nan, -1.0, 0.0, 5.0]), np.array([10.0, 10.0, 10.0, 10.0]))
    assert guarded.tolist() == [10.0, 10.0, 10.0, 5.0]


def test_walkforward_on_a_trace_with_zero_and_overlong_runtimes() -> None:
    # Zero runtimes and runtimes beyond the request (killed there), users with one job.
    rng = np.random.default_rng(2)
    jobs = [
        (float(t), 1, float(r), float(q))
        for t, r, q in zip(
            np.sort(rng.uniform(0, 5 * 86400 * 7, 400)),
            rng.choice([0, 5, 600, 90000], 400),
            rng.choice([60, 3600, 7200], 400),
            strict=True,
        )
    ]
    w = workload(8, jobs)
    w.user[:] = rng.integers(0, 30, len(w))
    for name in ("easy++", "gaussier"):
        got = predict_walkforward(w, make_predictor(name))
        assert np.isfinite(got.predicted).all()
        assert (got.predicted > 0).all() and (got.predicted <= w.requested_time).all()
        assert got.clipped_history > 0


def test_unknown_predictor_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="easy\\+\\+"):
        make_predictor("oracle")
    with pytest.raises(ModelError, match="shape"):
        RuntimeJobs.of([1, 2], [0.0], [1, 1], [10.0, 10.0])


def test_asymmetric_loss_makes_underprediction_rarer_and_is_minimised() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    y = X @ np.array([3.0, -2.0, 1.0]) + rng.exponential(2.0, 3000)
    symmetric = AsymmetricRidgeRegressor(underprediction_cost=1.0).fit(X, y)
    asymmetric = AsymmetricRidgeRegressor(underprediction_cost=10.0).fit(X, y)
    under_sym = np.mean(y > symmetric.predict(X))
    under_asym = np.mean(y > asymmetric.predict(X))
    assert under_asym < under_sym
    assert under_asym < 0.3
    # Underprediction costs more: the asymmetric fit has the lower asymmetric loss.
    costly = AsymmetricRidgeRegressor(underprediction_cost=10.0)
    costly.coef_, costly.intercept_, costly.n_features_in_ = symmetric.coef_, symmetric.intercept_, 3
    assert asymmetric.loss(X, y) < costly.loss(X, y)
    with pytest.raises(ValueError, match="underprediction_cost"):
        AsymmetricRidgeRegressor(underprediction_cost=-1.0).fit(X, y)


def test_gaussier_learns_a_users_runtimes_walk_forward() -> None:
    # Each user always runs the same length; requests are 10 times longer.
    rng = np.random.default_rng(4)
    n = 3000
    submit = np.sort(rng.uniform(0, 6 * 7 * 86400, n))
    user = rng.integers(0, 20, n)
    length = 60.0 * (1 + user)
    w = workload(64, [(float(s), 1, float(r), float(10 * r)) for s, r in zip(submit, length, strict=True)])
    w.user[:] = user
    got = predict_walkforward(w, GaussierPredictor())
    late = w.submit > 3 * 7 * 86400  # after a few weekly refits
    rel_error = np.abs(got.predicted[late] - w.runtime[late]) / w.runtime[late]
    assert np.median(rel_error) < 0.5
    assert np.median(got.predicted[late] / w.requested_time[late]) < 0.5  # well below the requests
    assert math.isfinite(got.seconds)


def test_asymmetric_regressor_passes_scikit_learns_estimator_checks() -> None:
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(AsymmetricRidgeRegressor(), on_fail=None)
    failed = [(r["check_name"], str(r["exception"])) for r in results if r["status"] == "failed"]
    assert not failed
