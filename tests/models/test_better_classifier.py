"""Issue 13: the user's recent runs, the submission stream, the decision threshold, the
published job set and the experiment's tables. Values are checked against hand computations
on small histories; the live store and the offline index must agree bit for bit."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from rush.models.history import JobColumns, RuntimeHistory
from rush.models.runtime_class import RuntimeClassifier
from rush.models.runtime_features import (
    FEATURES,
    RECENT_ENDS,
    UNKNOWN,
    FinishedIndex,
    category_codes,
    history_features,
    submit_stream,
)
from rush.models.walkforward import predict_classes_walkforward, published_job_set
from rush.workload.model import Workload
from tests.script_module import load_script

DAY = 86400.0
NOON = 20000 * DAY + 12 * 3600  # a Unix time, UTC clock


def row(history: RuntimeHistory, user: int, req: float, submit: float, divider: float = 1000.0) -> dict:
    X = history.features(
        JobColumns(np.array([user]), np.array([4]), np.array([req]), np.array([submit])), divider
    )
    return dict(zip(FEATURES, X[0], strict=True))


def test_user_recent_runs_by_hand():
    history = RuntimeHistory()
    # user 7: a 5000 s run of a 7200 s request ended at NOON - 7000; then a 20 s run of an
    # 3600 s request (a failed start) ended at NOON - 600.
    history.observe_finished(7, 4, 7200, NOON - 12000, 5000, end=NOON - 7000)
    history.observe_finished(7, 8, 3600, NOON - 620, 20, end=NOON - 600)
    r = row(history, 7, 3600, NOON)
    assert r["user_last_runtime"] == 20 and r["user_last2_runtime"] == 5000
    assert r["user_last_ratio"] == pytest.approx(20 / 3600)
    assert r["user_since_last_end"] == 600
    assert r["user_ends_last_hour"] == 1  # NOON - 7000 is more than an hour before
    assert r["user_request_vs_mean"] == pytest.approx(3600 / ((7200 + 3600) / 2))
    assert r["lag1_user"] == 0.0 and r["lag2_user"] == 1.0 and r["frac_small_user"] == 0.5
    # A job submitted before the last end (live): 0 s since, not negative; the end after it
    # is not "in the hour before".
    early = row(history, 7, 3600, NOON - 700)
    assert early["user_since_last_end"] == 0 and early["user_ends_last_hour"] == 0
    unknown = row(history, 8, 3600, NOON)
    assert unknown["user_last_runtime"] == UNKNOWN and unknown["user_request_vs_mean"] == UNKNOWN
    assert unknown["user_ends_last_hour"] == 0


def test_runs_killed_at_the_request_count_as_the_request():
    history = RuntimeHistory()
    history.observe_finished(7, 4, 600, NOON - 10_000, 90_000, end=NOON - 9_000)
    assert row(history, 7, 600, NOON)["user_last_runtime"] == 600
    assert row(history, 7, 600, NOON)["user_last_ratio"] == 1.0


def test_submission_stream_offline_by_hand():
    user = np.array([1, 1, 1, 2, 1, 1])
    submit = np.array([0.0, 100.0, 100.0, 150.0, 650.0, 5000.0])
    stream = submit_stream(user, submit)
    # since the previous distinct time of the same user; distinct times in the 600 s before
    assert stream[:, 0].tolist() == [UNKNOWN, 100.0, 100.0, UNKNOWN, 550.0, 4350.0]
    assert stream[:, 1].tolist() == [0, 1, 1, 0, 1, 0]  # 650: 100 in [50, 650), 0 is not


def test_submission_stream_live_equals_offline_and_is_bounded():
    rng = np.random.default_rng(4)
    n = 3000
    user = rng.integers(0, 5, n)
    submit = NOON + np.sort(rng.integers(0, 40_000, n)).astype(np.float64)
    offline = submit_stream(user, submit)
    history = RuntimeHistory()
    for start in range(0, n, 250):  # pending batches, seen again at every pass
        history.observe_submitted(user[: start + 250], submit[: start + 250])
    X = history.features(JobColumns(user, np.ones(n, dtype=np.int64), np.full(n, 60.0), submit), 100.0)
    cols = [FEATURES.index("user_since_last_submit"), FEATURES.index("user_submits_last_10min")]
    np.testing.assert_array_equal(X[-500:, cols], offline[-500:])  # the kept tail of each user
    assert max(len(t) for t in history.submits.values()) <= 512
    assert offline[:, 1].max() <= RECENT_ENDS
    # Hostile: NaN users or times out of range are skipped, not stored.
    history.observe_submitted([np.nan, 3], [NOON, 1e30])
    assert 3 not in history.submits or 1e30 not in history.submits[3]


def test_offline_index_user_recent_by_hand():
    # user 0: jobs 0 and 1 finished before job 2's submission; user 1 nothing.
    user = np.array([0, 0, 0, 1])
    submit = np.array([0.0, 100.0, 5000.0, 5000.0])
    end = np.array([1000.0, 4700.0, 9000.0, 6000.0])
    runtime = np.array([1000.0, 20.0, 4000.0, 1000.0])
    request = np.array([2000.0, 600.0, 600.0, 60.0])
    codes = category_codes(user, np.ones(4, dtype=np.int64), request, np.zeros(4, dtype=np.int64))
    index = FinishedIndex(codes, end, runtime, request, submit)
    lookup = index.lookup(np.arange(4), submit)
    X = history_features(lookup, np.arange(4), 500.0, index.small_prefix(500.0))
    names = FEATURES[-X.shape[1] :]
    got = dict(zip(names, X[2], strict=True))
    assert got["user_last_runtime"] == 20 and got["user_last2_runtime"] == 1000
    assert got["user_last_ratio"] == 20 / 600 and got["user_since_last_end"] == 300
    assert got["user_ends_last_hour"] == 1 and got["user_request_vs_mean"] == 600 / 1300
    assert dict(zip(names, X[3], strict=True))["user_last_runtime"] == UNKNOWN


def test_threshold_decides_on_the_small_probability():
    rng = np.random.default_rng(0)
    X = rng.random((600, 2))
    y = (X[:, 0] + 0.3 * rng.random(600) > 0.6).astype(int)  # noisy: probabilities in between
    plain = RuntimeClassifier(estimator="hgb", n_estimators=20).fit(X, y)
    low = RuntimeClassifier(estimator="hgb", n_estimators=20, threshold=0.2).fit(X, y)
    p_small = low.predict_proba(X)[:, 0]
    assert low.predict(X).tolist() == np.where(p_small >= 0.2, 0, 1).tolist()
    assert (low.predict(X) == 0).sum() > (plain.predict(X) == 0).sum()
    forest = RuntimeClassifier(n_estimators=5, threshold=0.2).fit(X, y)
    assert forest.compiled_ is not None  # the threshold goes by the compiled probabilities
    assert forest.predict(X).tolist() == np.where(forest.predict_proba(X)[:, 0] >= 0.2, 0, 1).tolist()


@pytest.mark.parametrize("threshold", [0.0, 1.0, -1.0, float("nan"), 7])
def test_threshold_outside_the_open_unit_interval_is_refused(threshold):
    with pytest.raises(ValueError, match="threshold"):
        RuntimeClassifier(threshold=threshold).fit(np.zeros((4, 1)), [0, 1, 0, 1])


def workload(runtime, requested) -> Workload:
    n = len(runtime)
    return Workload(
        job_id=np.arange(1, n + 1),
        submit=np.arange(n, dtype=np.float64),
        runtime=np.asarray(runtime, dtype=np.float64),
        procs=np.ones(n, dtype=np.int64),
        requested_time=np.asarray(requested, dtype=np.float64),
        user=np.ones(n, dtype=np.int64),
        machine_procs=4,
        extra={"wait": np.zeros(n)},
    )


def test_published_job_set_drops_zero_runtimes_and_runs_reaching_the_request():
    w = workload([0, 10, 600, 700, 599], [600, 600, 600, 600, 600])
    kept = published_job_set(w)
    assert kept.job_id.tolist() == [2, 5] and kept.extra["wait"].tolist() == [0.0, 0.0]
    assert len(published_job_set(workload([0], [0]))) == 0


def test_max_train_jobs_caps_the_fit_not_the_divider():
    from tests.models.fixtures import kth

    w, header = kth(3000)
    capped = predict_classes_walkforward(
        w, header, estimator=RuntimeClassifier(n_estimators=5), max_train_jobs=200
    )
    full = predict_classes_walkforward(w, header, estimator=RuntimeClassifier(n_estimators=5))
    later = [r for r in capped.weekly_report if r["trained_on"]]
    assert later and all(r["trained_on"] <= 200 for r in later)
    np.testing.assert_array_equal(capped.divider, full.divider)
    from rush.errors import ModelError

    with pytest.raises(ModelError, match="max_train_jobs"):
        predict_classes_walkforward(w, header, max_train_jobs=0)


def load_run():
    path = Path(__file__).resolve().parents[2] / "sim" / "runtime_classes" / "run.py"
    return load_script(path, "runtime_classes_run")


def test_importances_keep_the_week_index():
    """Issue 13, item 4: the week-of-year feature's importance overwrote the week column."""
    run = load_run()

    class Walk:
        weekly = [{"week": 3, "importances": {"week": 0.25, "procs": 0.75}}, {"week": 4}]

    rows = run.importance_rows({"KTH-SP2": Walk()})
    assert rows == [{"trace": "KTH-SP2", "week": 3, "importance_week": 0.25, "importance_procs": 0.75}]


def test_summary_puts_classification_next_to_the_bound():
    run = load_run()
    rows = []
    for policy, values in (("FCFS", (0, 30, 45, 60)), ("SPF", (50, 40, 55, 70))):
        for variant, value in zip(
            ("base", "classification", "classification-idempotent", "class-clairvoyant"), values, strict=True
        ):
            rows.append(
                {"trace": "T", "policy": policy, "variant": variant, "improvement_over_easy_fcfs_pct": value}
            )
    (summary,) = run.summary_rows(rows)
    assert summary["FCFS_idempotent_share_of_bound"] == 0.75 and summary["FCFS_plain_share_of_bound"] == 0.5
    assert summary["SPF_idempotent_share_of_bound"] == 0.25 and summary["SPF_idempotent_beats_SPF"] is True


def test_compiled_boosting_equals_scikit_learn():
    from tests.models.fixtures import kth

    w, header = kth(4000)
    result = predict_classes_walkforward(w, header, mode="live", estimator=RuntimeClassifier(n_estimators=5))
    X, y = result.features, result.actual_class()
    model = RuntimeClassifier(estimator="hgb", n_estimators=30, threshold=0.4).fit(X, y)
    assert model.compiled_ is not None
    X_nan = X.copy()
    X_nan[::17, 3] = np.nan  # missing values take each node's missing side, as scikit-learn
    for data in (X, X_nan):
        np.testing.assert_array_equal(model.compiled_.predict_proba(data), model.model_.predict_proba(data))
    assert model.predict(X).tolist() == np.where(model.model_.predict_proba(X)[:, 0] >= 0.4, 0, 1).tolist()
    import pickle

    again = pickle.loads(pickle.dumps(model))  # rebuilt on load, not pickled
    assert "compiled_" not in model.__getstate__() and again.compiled_ is not None
    assert np.array_equal(again.predict(X), model.predict(X))


def test_threshold_selection_is_maximin_with_ties_to_the_larger_threshold():
    """sim/runtime_classes/select_threshold.py's written rule (chosen on development traces)."""
    path = Path(__file__).resolve().parents[2] / "sim" / "runtime_classes" / "select_threshold.py"
    spec = importlib.util.spec_from_file_location("select_threshold", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shares = {  # threshold -> share per development trace
        0.5: (0.9, 0.2, 0.8),  # worst 0.2
        0.4: (0.7, 0.6, 0.8),  # worst 0.6
        1.0 / 3.0: (0.7, 0.7, 0.65),  # worst 0.65
        0.25: (0.66, 0.9, 0.9),  # worst 0.66: best; 1/3 is within 0.01, and larger
        0.2: (0.5, 0.9, 0.9),
        0.15: (0.4, 0.9, 0.9),
        0.1: (0.3, 0.9, 0.9),
        0.05: (0.1, 0.9, 0.9),
    }
    rows = [{"threshold": t, "share": s, "share_plain": 0.5} for t, values in shares.items() for s in values]
    assert module.choose(rows, "share") == 1.0 / 3.0
    assert module.choose(rows, "share_plain") == 0.5  # all tied: the largest threshold (fewest kills)
