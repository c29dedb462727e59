"""rush's runtime-quantile predictor: distributions, classes, features, walk-forward, bad input."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from rush.models.runtime_features import Clock
from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_features import (
    FEATURE_SETS,
    FEATURES,
    REQUEST_COLUMN,
    QuantileHistory,
    QuantileJobs,
    offline_features,
)
from rush.models.runtime_quantiles_walkforward import WEEK, predict_quantiles_walkforward
from tests.models.fixtures import (
    HEADER,
    SMALL_QUANTILE_MODEL,
    fitted_quantile_model,
    synthetic_quantile_matrix,
    synthetic_workload,
)


def test_quantiles_are_sorted_non_negative_and_within_the_request():
    model, X, _ = fitted_quantile_model()
    q = model.predict_quantiles(X)
    assert q.shape == (len(X), 5)
    assert np.all(np.diff(q, axis=1) >= 0)
    assert np.all(q >= 0) and np.all(np.isfinite(q))
    assert np.all(q <= np.expm1(X[:, REQUEST_COLUMN])[:, None] * (1 + 1e-9))


def test_distribution_separates_the_two_job_shapes_and_gives_class_probabilities():
    model, X, runtime = fitted_quantile_model()
    median = model.predict(X)
    short = runtime < 1000
    # The synthetic trace's short jobs run 10-300 s, the long ones 5,000-40,000 s.
    assert np.median(median[short]) < 1000 < np.median(median[~short])
    proba = model.predict_proba(X)
    assert np.allclose(proba.sum(axis=1), 1.0) and np.all((proba >= 0) & (proba <= 1))
    assert np.mean((proba[:, 0] >= 0.5) == short) > 0.9


def test_probability_below_grows_with_the_time():
    model, X, _ = fitted_quantile_model()
    below = np.column_stack([model.proba_below(X, t) for t in (1, 60, 600, 6000, 60000, 1e6)])
    assert np.all(np.diff(below, axis=1) >= -1e-12)
    assert np.all(below[:, -1] == 1.0)  # past every request


def test_a_row_with_nan_features_falls_back_to_its_request():
    model, X, _ = fitted_quantile_model()
    X = X[:3].copy()
    X[1, 5] = np.nan
    q = model.predict_quantiles(X)
    assert np.allclose(q[1], np.expm1(X[1, REQUEST_COLUMN]))
    assert np.all(np.isfinite(q))


@pytest.mark.parametrize("limit", [np.nan, -1.0, np.inf])
def test_a_nan_or_negative_request_is_refused(limit):
    model, X, _ = fitted_quantile_model()
    X = X[:2].copy()
    X[0, REQUEST_COLUMN] = limit
    with pytest.raises(ValueError, match="requested time"):
        model.predict_quantiles(X)


def test_bad_runtimes_in_the_history_are_left_out_or_clipped():
    X, y = synthetic_quantile_matrix(400)
    y = y.copy()
    y[::7] = np.nan
    y[1::7] = -5.0
    y[2::7] = 1e12  # longer than any request: clipped to it
    y[3::7] = 0.0
    q = RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL).fit(X, y).predict_quantiles(X)
    assert np.all(np.isfinite(q)) and np.all(q >= 0)
    with pytest.raises(ValueError, match="usable runtime"):
        RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL).fit(X, np.full(len(y), np.nan))


def test_one_runtime_for_every_job_predicts_it():
    X = np.column_stack([np.full(30, np.log1p(3600.0)), np.arange(30.0)])
    model = RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL).fit(X, np.full(30, 120.0))
    assert np.allclose(model.predict_quantiles(X), 120.0)


def _jobs_with_history(n_hist: int = 300, n_new: int = 40, seed: int = 5):
    rng = np.random.default_rng(seed)
    n = n_hist + n_new
    submit = 1.7e9 + np.sort(rng.uniform(0, 5 * 86400, n)).round()
    runtime = rng.choice([30.0, 400.0, 5000.0], n)
    user = rng.integers(1, 8, n)
    user[-1] = 99  # a user with one job (never seen)
    procs = rng.choice([1, 4, 16], n)
    request = np.where(runtime > 1000, 36000.0, 3600.0)
    app = rng.integers(0, 3, n)
    end = submit + runtime
    # The new jobs are submitted after every history job ended.
    shift = end[:n_hist].max() + 10 - submit[n_hist]
    submit[n_hist:] += shift
    end[n_hist:] = np.nan
    return QuantileJobs(user, procs, request, submit, app=app, runtime=runtime, end=end), n_hist


@pytest.mark.parametrize("feature_set", sorted(FEATURE_SETS))
def test_live_history_gives_the_offline_features(feature_set):
    jobs, n_hist = _jobs_with_history()
    clock = Clock.of("Europe/Stockholm")
    everything = QuantileJobs(**{**jobs.__dict__, "end": np.nan_to_num(jobs.end, nan=np.inf)})
    everything.runtime = np.where(np.isfinite(jobs.end), jobs.runtime, np.nan)  # unknown: not history
    offline = offline_features(everything, clock, feature_set=feature_set)[n_hist:]
    history = QuantileHistory(clock, feature_set)
    history.observe_submitted(jobs.user, jobs.submit)
    hist = jobs.subset(np.arange(n_hist))
    history.observe_finished(hist.subset(np.argsort(hist.end, kind="stable")))
    new = jobs.subset(np.arange(n_hist, len(jobs)))
    new.end = None
    live = history.features(new)
    assert live.shape == offline.shape == (len(new), len(FEATURE_SETS[feature_set]))
    assert np.allclose(live, offline, equal_nan=True)
    assert live[-1, FEATURES.index("log_count_user")] == 0.0  # the user with one job


def test_walkforward_uses_no_future_runtimes():
    w = synthetic_workload(900)
    first = predict_quantiles_walkforward(w, HEADER, RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL))
    last_week = w.submit >= w.submit[0] + 2 * WEEK
    changed = synthetic_workload(900)
    changed.runtime[last_week] = changed.requested_time[last_week]  # another future
    second = predict_quantiles_walkforward(changed, HEADER, RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL))
    past = ~last_week
    assert np.array_equal(first.quantiles[past], second.quantiles[past])
    assert np.array_equal(first.predicted_class[past], second.predicted_class[past])
    assert np.all(np.isnan(first.proba_small[first.week == 0]))  # week 0: no model
    assert np.all(first.predicted_class[first.week == 0] == 1)
    assert np.isfinite(first.proba_small[first.week > 0]).all()


def test_weeks_fitted_in_parallel_give_the_same_walkforward():
    w = synthetic_workload(700)
    one = predict_quantiles_walkforward(w, HEADER, RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL))
    two = predict_quantiles_walkforward(w, HEADER, RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL), n_jobs=2)
    assert np.array_equal(one.quantiles, two.quantiles)
    assert np.array_equal(one.proba_small, two.proba_small, equal_nan=True)
    assert np.array_equal(one.threshold, two.threshold)


def test_the_compiled_models_give_the_models_own_predictions():
    model, X, _ = fitted_quantile_model()
    assert model.compiled_ is not None
    own = np.column_stack([m.predict(X) for m in model.models_])
    assert np.array_equal(model.compiled_.raw(X), own)
    restored = pickle.loads(pickle.dumps(model))
    assert np.array_equal(restored.predict_quantiles(X), model.predict_quantiles(X))


def test_pair_search_gives_numpys_positions_with_nan_and_infinite_parts():
    from rush.models.runtime_quantiles_features import pair_searchsorted

    rng = np.random.default_rng(1)
    history = rng.integers(0, 5, 400) + 1j * rng.integers(0, 5, 400).astype(float)
    history[::17] = np.nan + 3j
    history[::23] = complex(2.0, np.nan)
    history[::29] = complex(np.inf, np.inf)
    history[::31] = complex(1.0, -np.inf)
    history = np.sort(history)
    keys = rng.integers(-1, 6, 3000) + 1j * rng.integers(-1, 6, 3000).astype(float)
    keys[::7] = np.nan
    keys[::11] = complex(1.0, np.nan)
    keys[::13] = complex(1.0, -np.inf)
    assert np.array_equal(pair_searchsorted(history, keys), np.searchsorted(history, keys))
    order = np.argsort(keys, kind="stable")  # a shared order gives the same
    assert np.array_equal(pair_searchsorted(history, keys, order), np.searchsorted(history, keys))
    assert pair_searchsorted(history[:0], keys).tolist() == [0] * len(keys)


def test_queue_state_of_pending_jobs_is_the_scans():
    # A live pass's jobs have neither started nor ended: the shortcut must give the scan's
    # figures (none running, each waiting behind its user's earlier submissions).
    from rush.models.runtime_quantiles_features import _queue_state, queue_state

    rng = np.random.default_rng(0)
    n = 2000
    jobs = QuantileJobs(
        rng.integers(0, 15, n),
        rng.integers(1, 9, n),
        rng.integers(60, 9000, n).astype(float),
        np.sort(rng.integers(0, 3000, n)).astype(float),  # equal submits: row order decides
    )
    order = np.lexsort((np.arange(n), jobs.submit, jobs.user))
    never = np.full(n, np.inf)
    scan = np.empty((n, 4))
    scan[order] = _queue_state(
        jobs.submit[order], never, never, jobs.user[order].astype(np.int64), jobs.requested_time[order]
    )
    assert np.array_equal(queue_state(jobs), scan)


def test_thresholds_are_chosen_from_ended_jobs_for_accuracy_or_a_kill_budget():
    from rush.models.runtime_quantiles_walkforward import THRESHOLDS, walkforward_thresholds

    rng = np.random.default_rng(2)
    n = 3000
    submit = np.sort(rng.uniform(0, 6 * WEEK, n))
    submit -= submit[0]  # weeks count from the first submission
    runtime = rng.exponential(600.0, n)
    end = submit + runtime
    divider = np.full(n, 500.0)
    small = runtime <= divider
    proba = np.clip(np.where(small, 0.7, 0.3) + rng.normal(0, 0.25, n), 0, 1)
    proba[submit < WEEK] = np.nan  # week 0: no model
    plain = walkforward_thresholds(proba, runtime, divider, end, submit)
    budget = walkforward_thresholds(proba, runtime, divider, end, submit, kill_budget=0.05)
    assert np.all(plain[submit < WEEK] == 0.5) and np.all(budget[submit < WEEK] == 0.5)
    assert np.all(budget >= plain - 1e-9) or budget.mean() > plain.mean()  # a tight budget calls fewer small
    week = (submit // WEEK).astype(int)
    for k in range(2, 6):  # the budget holds on the jobs known at the week's start
        at = np.flatnonzero(week == k)[0]
        known = np.flatnonzero((end < k * WEEK) & np.isfinite(proba))
        t = budget[at]
        assert np.sum((proba[known] >= t) & ~small[known]) <= 0.05 * len(known)
        lower = THRESHOLDS[THRESHOLDS < t]
        if len(lower):  # and it is the lowest candidate that holds it
            assert np.sum((proba[known] >= lower[-1]) & ~small[known]) > 0.05 * len(known)
    # Outcomes after a week's start do not move its threshold.
    late = end >= 4 * WEEK
    changed = runtime.copy()
    changed[late] = 1.0
    again = walkforward_thresholds(proba, changed, divider, end, submit, kill_budget=0.05)
    assert np.array_equal(again[week <= 4], budget[week <= 4])


def test_thresholds_hold_a_reference_decisions_false_smalls_on_the_same_jobs():
    """Round 12: the kill budget is a reference decision's false smalls so far (FCFS-CI's), counted
    on the jobs both decided; jobs the reference did not decide neither count nor spend."""
    from rush.models.runtime_quantiles_walkforward import THRESHOLDS, walkforward_thresholds

    rng = np.random.default_rng(3)
    n = 3000
    submit = np.sort(rng.uniform(0, 6 * WEEK, n))
    submit -= submit[0]
    runtime = rng.exponential(600.0, n)
    end = submit + runtime
    divider = np.full(n, 500.0)
    small = runtime <= divider
    proba = np.clip(np.where(small, 0.7, 0.3) + rng.normal(0, 0.25, n), 0, 1)
    proba[submit < WEEK] = np.nan
    # The reference: a noisier decision, no decision on a fifth of the jobs.
    reference = (np.clip(np.where(small, 0.6, 0.35) + rng.normal(0, 0.3, n), 0, 1) >= 0.4) & ~small
    reference = np.where(rng.uniform(size=n) < 0.2, np.nan, reference.astype(np.float64))
    matched = walkforward_thresholds(proba, runtime, divider, end, submit, reference_false_small=reference)
    assert np.all(matched[submit < WEEK] == 0.5)
    week = (submit // WEEK).astype(int)
    for k in range(2, 6):
        at = np.flatnonzero(week == k)[0]
        both = np.flatnonzero((end < k * WEEK) & np.isfinite(proba) & np.isfinite(reference))
        allowed = reference[both].sum()
        t = matched[at]
        assert np.sum((proba[both] >= t) & ~small[both]) <= allowed
        lower = THRESHOLDS[THRESHOLDS < t]
        if len(lower):  # the lowest candidate within the reference's false smalls
            assert np.sum((proba[both] >= lower[-1]) & ~small[both]) > allowed
    # A job the reference did not decide changes nothing, whatever its outcome.
    undecided = ~np.isfinite(reference)
    moved = runtime.copy()
    moved[undecided] = 1e6
    assert np.array_equal(
        walkforward_thresholds(proba, moved, divider, end, submit, reference_false_small=reference), matched
    )
    # A reference that never kills allows no false small: the highest candidate, or one that calls none.
    never = np.where(np.isfinite(reference), 0.0, np.nan)
    strict = walkforward_thresholds(proba, runtime, divider, end, submit, reference_false_small=never)
    assert np.all(strict[week >= 2] >= matched[week >= 2])


def test_a_reference_decision_is_checked():
    from rush.errors import ModelError
    from rush.models.runtime_quantiles_walkforward import walkforward_thresholds

    n = 10
    args = (np.full(n, 0.5), np.ones(n), np.ones(n), np.arange(n, dtype=float), np.arange(n, dtype=float))
    with pytest.raises(ModelError, match="not both"):
        walkforward_thresholds(*args, kill_budget=0.2, reference_false_small=np.zeros(n))
    with pytest.raises(ModelError, match="0, 1 or NaN"):
        walkforward_thresholds(*args, reference_false_small=np.full(n, 0.5))
    with pytest.raises(ModelError, match="0, 1 or NaN"):
        walkforward_thresholds(*args, reference_false_small=np.zeros(n - 1))
