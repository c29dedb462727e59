"""Runtime classification walk-forward on a real trace: no future leakage, weekly retraining,
the divider, the live history agreeing with the offline features, the compiled forest."""

from __future__ import annotations

import numpy as np
import pytest

from rush.models.history import JobColumns, RuntimeHistory
from rush.models.runtime_class import RuntimeClassifier
from rush.models.runtime_features import FEATURES, FinishedIndex, TimeBase
from rush.models.trees import compile_trees
from rush.models.walkforward import (
    WEEK,
    clipped_runtime,
    fit_on_history,
    logged_end,
    predict_classes_walkforward,
)
from rush.workload.model import Workload
from tests.models.fixtures import kth, small_forest


def walk(w: Workload, header: dict, mode: str):
    return predict_classes_walkforward(w, header, mode=mode, estimator=small_forest())


def with_runtime(w: Workload, runtime: np.ndarray) -> Workload:
    copy = w.subset(np.arange(len(w)))
    copy.runtime = np.asarray(runtime, dtype=np.float64)
    return copy


@pytest.mark.parametrize("mode", ["weekly", "live"])
@pytest.mark.parametrize("weeks", [2.5, 4.5])
def test_no_future_leakage(mode, weeks):
    """Changing what had not finished by time t changes nothing predicted up to t."""
    w, header = kth()
    base = walk(w, header, mode)
    t = float(w.submit[0] + weeks * WEEK)
    unfinished = logged_end(w) >= t  # finished before t means end < t
    rng = np.random.default_rng(0)
    # Longer runtimes keep them unfinished at t but change their labels and later history.
    runtime = w.runtime.copy()
    runtime[unfinished] += rng.uniform(0, 200_000, unfinished.sum())
    changed = walk(with_runtime(w, runtime), header, mode)
    known = w.submit <= t
    if mode == "weekly":  # the whole week holding t is predicted at its start
        known |= base.week == base.week[np.searchsorted(w.submit, t, side="right") - 1]
    assert known.sum() > 1000
    assert np.array_equal(changed.predicted_class[known], base.predicted_class[known])
    assert np.array_equal(changed.features[known], base.features[known])
    assert np.array_equal(changed.divider[known], base.divider[known], equal_nan=True)
    # The change does reach later weeks: the check is not vacuous.
    assert not np.array_equal(changed.features[~known], base.features[~known])
    assert not np.array_equal(changed.predicted_class[~known], base.predicted_class[~known])


def test_finished_history_does_change_predictions():
    """The converse: jobs finished before t *are* used (reversed runtimes change predictions)."""
    w, header = kth()
    base = walk(w, header, "weekly")
    t = float(w.submit[0] + 3 * WEEK)
    finished = np.flatnonzero(logged_end(w) < t)
    runtime = w.runtime.copy()
    # Swap small and large among finished jobs (ranks reversed), keeping them finished.
    order = np.argsort(runtime[finished])
    swapped = runtime[finished].copy()
    swapped[order] = np.sort(runtime[finished])[::-1]
    runtime[finished] = np.minimum(
        swapped, t - 1 - w.submit[finished] - np.maximum(w.extra["wait"][finished], 0)
    )
    changed = walk(with_runtime(w, runtime), header, "weekly")
    week3 = base.week == 3
    assert not np.array_equal(changed.predicted_class[week3], base.predicted_class[week3])


def test_zero_length_job_is_not_in_its_own_history():
    # Two zero-length jobs of one user, submitted and ended at 100: at 100 neither has finished.
    codes = np.zeros((4, 2), dtype=np.int64)
    index = FinishedIndex(codes, end=np.array([100.0, 100.0]), runtime=np.array([0.0, 0.0]))
    lookup = index.lookup(np.array([0, 1]), np.array([100.0, 100.0]))
    assert (lookup.stop - lookup.begin == 0).all() and np.isnan(lookup.lag_runtime).all()
    later = index.lookup(np.array([0]), np.array([100.5]))
    assert (later.stop - later.begin == 2).all()


@pytest.mark.parametrize("mode", ["weekly", "live"])
def test_first_week_large_and_divider_is_median_of_finished_history(mode):
    w, header = kth()
    result = walk(w, header, mode)
    first = result.week == 0
    assert (result.predicted_class[first] == 1).all() and np.isnan(result.divider[first]).all()
    assert result.predicted_class.dtype == np.int8 and len(result.predicted_class) == len(w)
    runtime, end = clipped_runtime(w), logged_end(w)
    assert len(result.weekly_report) >= 6
    for week in result.weekly_report[1:]:
        start = w.submit[0] + week["week"] * WEEK
        done = end < start
        assert week["divider"] == np.median(runtime[done])
        assert week["trained_on"] == done.sum()
        rows = result.week == week["week"]
        assert (result.divider[rows] == week["divider"]).all()
        assert week["jobs"] == rows.sum() and sum(week["confusion"].values()) == rows.sum()
    # Small predictions happen, and the classifier beats predicting everything large.
    summary = result.summary()
    assert summary["confusion"]["TS"] > 0
    assert summary["accuracy"] > np.mean(result.actual_class() == 1)
    assert result.importances.shape == (len(result.weekly_report) - 1, len(FEATURES))
    np.testing.assert_allclose(result.importances.sum(axis=1), 1.0)


def test_training_window_limits_the_history():
    w, header = kth()
    result = predict_classes_walkforward(w, header, estimator=small_forest(), train_weeks=2)
    runtime, end = clipped_runtime(w), logged_end(w)
    for week in result.weekly_report[1:]:
        start = w.submit[0] + week["week"] * WEEK
        window = (end < start) & (end >= start - 2 * WEEK)
        assert week["trained_on"] == window.sum()
        assert week["divider"] == np.median(runtime[window])


def test_live_features_see_completions_within_the_week():
    w, header = kth()
    weekly, live = walk(w, header, "weekly"), walk(w, header, "live")
    late = (weekly.week >= 1) & ((w.submit - w.submit[0]) % WEEK > 3 * 86400)
    assert not np.array_equal(weekly.features[late], live.features[late])
    start_of_week = (weekly.week >= 1) & ((w.submit - w.submit[0]) % WEEK < 60)
    # Jobs submitted in a week's first minute see (nearly) the same history in both modes.
    assert np.mean(np.all(weekly.features[start_of_week] == live.features[start_of_week], axis=1)) > 0.8


def test_live_history_store_reproduces_offline_live_features():
    """The daemon's incremental store, fed completions in end order, agrees with the
    vectorised offline computation, job by job."""
    w, header = kth(3000)
    result = walk(w, header, "live")
    runtime, end = clipped_runtime(w), logged_end(w)
    base = TimeBase.from_header(header)  # the history takes Unix times, as live
    history = RuntimeHistory(clock=base.clock)
    unix = w.submit + base.unix_start
    order = np.lexsort((np.arange(len(w)), end))
    fed = 0
    sample = np.flatnonzero(result.week >= 1)[::7]
    for j in sample:
        # Every submission up to this one was seen (the daemon records pending jobs each pass).
        history.observe_submitted(w.user[: j + 1], unix[: j + 1])
        while fed < len(order) and end[order[fed]] < w.submit[j]:
            k = order[fed]
            history.observe_finished(
                w.user[k], w.procs[k], w.requested_time[k], unix[k], runtime[k], end[k] + base.unix_start
            )
            fed += 1
        row = history.features(
            JobColumns(w.user[j : j + 1], w.procs[j : j + 1], w.requested_time[j : j + 1], unix[j : j + 1]),
            divider=result.divider[j],
        )[0]
        np.testing.assert_array_equal(row, result.features[j], err_msg=f"job {j}")
    assert len(sample) > 300


def test_compiled_forest_equals_scikit_learn():
    w, header = kth()
    trained = fit_on_history(w, header, estimator=RuntimeClassifier(n_estimators=20))
    classifier = trained.model.named_steps["classifier"]
    forest = classifier.model_
    X = walk(w, header, "live").features
    compiled = compile_trees(forest)
    assert compiled is not None
    assert np.array_equal(compiled.predict_proba(X), forest.predict_proba(X))
    assert np.array_equal(forest.classes_[compiled.predict_index(X)], forest.predict(X))
    assert np.array_equal(classifier.predict(X), forest.predict(X))


def test_any_scikit_learn_classifier_or_name():
    from sklearn.tree import DecisionTreeClassifier

    w, header = kth(2500)
    for estimator in ("logreg", "extra-trees", DecisionTreeClassifier(max_depth=5)):
        result = predict_classes_walkforward(
            w, header, estimator=RuntimeClassifier(estimator=estimator, n_estimators=10)
        )
        assert set(np.unique(result.predicted_class)) <= {0, 1}
        assert result.summary()["jobs"] == len(w)


def test_one_class_training_week_predicts_that_class():
    model = RuntimeClassifier().fit(np.zeros((3, 2)), [1, 1, 1])
    assert model.predict(np.zeros((2, 2))).tolist() == [1, 1] and model.classes_.tolist() == [1]
    assert model.predict_proba(np.zeros((1, 2))).tolist() == [[1.0]]


def test_bad_mode_is_a_clear_error():
    from rush.errors import ModelError

    w, header = kth(500)
    with pytest.raises(ModelError, match="unknown mode"):
        predict_classes_walkforward(w, header, mode="daily")


def test_refit_replaces_the_compiled_forest():
    rng = np.random.default_rng(0)
    X = rng.random((400, 3))
    model = RuntimeClassifier(n_estimators=5).fit(X, (X[:, 0] > 0.5).astype(int))
    first = model.predict(X)
    model.fit(X, (X[:, 0] <= 0.5).astype(int))
    assert np.array_equal(model.predict(X), model.model_.predict(X))
    assert (model.predict(X) != first).mean() > 0.9
