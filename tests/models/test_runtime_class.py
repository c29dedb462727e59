"""Runtime classification: no future leakage, weekly retraining, persistence, live history."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

from rush.errors import ModelError
from rush.models.evaluation import classification_summary
from rush.models.persistence import load_model, save_model, sidecar_path
from rush.models.runtime_class import RuntimeClassifier
from rush.models.runtime_features import FEATURES, RuntimeHistory, temporal_features
from rush.models.walkforward import WEEK, clipped_runtime, logged_end, predict_classes_walkforward
from rush.workload.model import workload_from_trace
from tests.core.test_real_traces import MIRROR


@cache
def kth(n: int = 5000):
    path = MIRROR / "KTH-SP2-1996-2.1-cln.swf.gz"
    if not path.exists():
        pytest.skip("no trace mirror: set RUSH_TRACE_MIRROR")
    from rush.workload.swf import read_swf

    trace = read_swf(path)
    w = workload_from_trace(trace)
    return w.subset(np.arange(n)), trace.header


def small_forest():
    return RandomForestClassifier(n_estimators=8, max_depth=8, random_state=0)


def walk(w, header, mode):
    return predict_classes_walkforward(w, header, mode=mode, estimator=small_forest())


@pytest.mark.parametrize("mode", ["weekly", "live"])
def test_no_future_information(mode):
    w, header = kth()
    base = walk(w, header, mode)
    cut = float(w.submit[0] + 6 * WEEK)
    later = np.flatnonzero(w.submit > cut)
    rng = np.random.default_rng(0)
    shuffled = w.subset(np.arange(len(w)))
    shuffled.runtime = w.runtime.copy()
    # The runtimes of jobs submitted after the cut are unknown before it: shuffle them.
    shuffled.runtime[later] = rng.permutation(w.runtime[later])
    assert not np.array_equal(shuffled.runtime, w.runtime)
    again = walk(shuffled, header, mode)
    before = w.submit <= cut
    assert np.array_equal(again.predicted_class[before], base.predicted_class[before])
    assert np.array_equal(again.features[before], base.features[before])
    # The check is sensitive: shuffling *finished* history does change predictions.
    early = np.flatnonzero(logged_end(w) < w.submit[0] + 3 * WEEK)
    touched = w.subset(np.arange(len(w)))
    touched.runtime = w.runtime.copy()
    touched.runtime[early] = rng.permutation(w.runtime[early])[::-1]
    assert not np.array_equal(
        walk(touched, header, mode).predicted_class[before], base.predicted_class[before]
    )


def test_first_week_large_and_divider_is_median_of_finished_history():
    w, header = kth()
    result = walk(w, header, "weekly")
    first = w.submit < w.submit[0] + WEEK
    assert (result.predicted_class[first] == 1).all()
    assert np.isnan(result.divider[first]).all()
    runtime, end = clipped_runtime(w), logged_end(w)
    for week in result.weekly[1:6]:
        start = w.submit[0] + week["week"] * WEEK
        assert week["divider"] == pytest.approx(np.median(runtime[end <= start]))
        assert week["trained_on"] == int((end <= start).sum())
    assert result.summary()["jobs"] == len(w)
    assert 0.6 < result.summary()["accuracy"] <= 1.0


def test_persistence_round_trip_and_refusals(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.random((200, len(FEATURES)))
    y = (X[:, 0] > 0.5).astype(int)
    model = RuntimeClassifier(n_estimators=5).fit(X, y)
    path = tmp_path / "m.joblib"
    meta = save_model(
        model, path, {"features": list(FEATURES), "divider": 600.0, "training_window": {"jobs": 200}}
    )
    assert set(meta["versions"]) >= {"scikit-learn", "numpy", "joblib", "rush"}
    loaded, meta2 = load_model(path, expected_features=list(FEATURES))
    assert np.array_equal(loaded.predict(X), model.predict(X)) and meta2["divider"] == 600.0
    with pytest.raises(ModelError, match="trained on features"):
        load_model(path, expected_features=list(FEATURES)[:-1])
    # A changed byte: the sha256 check refuses it before unpickling.
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="sha256 mismatch"):
        load_model(path)
    # A corrupt file whose sidecar was made to match still fails clearly.
    path.write_bytes(b"not a joblib file")
    save_meta = sidecar_path(path).read_text()
    import hashlib
    import json

    side = json.loads(save_meta) | {"sha256": hashlib.sha256(b"not a joblib file").hexdigest()}
    sidecar_path(path).write_text(json.dumps(side))
    with pytest.raises(ModelError, match="cannot load the model"):
        load_model(path)
    sidecar_path(path).unlink()
    with pytest.raises(ModelError, match="sidecar is missing"):
        load_model(path)


def test_walkforward_with_a_trained_model_checks_features(tmp_path):
    w, header = kth(2000)
    model = RuntimeClassifier(n_estimators=4).fit(np.zeros((4, len(FEATURES))), [0, 1, 0, 1])
    good, bad = tmp_path / "good.joblib", tmp_path / "bad.joblib"
    save_model(model, good, {"features": list(FEATURES), "divider": 900.0})
    save_model(model, bad, {"features": ["procs"], "divider": 900.0})
    result = predict_classes_walkforward(w, header, model_path=good)
    assert (result.divider == 900.0).all()
    with pytest.raises(ModelError, match="trained on features"):
        predict_classes_walkforward(w, header, model_path=bad)


def test_history_store_live_updates_and_persistence(tmp_path):
    history = RuntimeHistory()
    day = 86400 * 20000.0
    for runtime in (100, 5000, 50):
        history.observe_finished(user=7, procs=4, requested_time=3600, submit_local=day + 10, runtime=runtime)
    X = history.features(
        np.array([7, 8]), np.array([4, 4]), np.array([3600.0, 3600.0]), np.array([day + 99, day + 99]), 1000.0
    )
    row = dict(zip(FEATURES, X[0], strict=True))
    assert (row["lag1_user_procs"], row["lag2_user_procs"], row["lag3_user_procs"]) == (0.0, 1.0, 0.0)
    assert row["frac_small_user_reqtime"] == pytest.approx(2 / 3)
    assert row["frac_small_user_day"] == pytest.approx(2 / 3)
    assert dict(zip(FEATURES, X[1], strict=True))["lag1_user_procs"] == -1.0  # unknown user
    # A new completion is seen at once (the cached summary is invalidated).
    history.observe_finished(7, 4, 3600, day + 10, 9000)
    assert (
        history.features(np.array([7]), np.array([4]), np.array([3600.0]), np.array([day]), 1000.0)[0][8]
        == 1.0
    )
    path = tmp_path / "history.json"
    history.save(path)
    again = RuntimeHistory.load(path)
    assert np.array_equal(
        again.features(np.array([7]), np.array([4]), np.array([3600.0]), np.array([day]), 1000.0),
        history.features(np.array([7]), np.array([4]), np.array([3600.0]), np.array([day]), 1000.0),
    )
    path.write_text("{broken")
    with pytest.raises(ModelError, match="runtime history"):
        RuntimeHistory.load(path)


def test_temporal_features():
    # 2023-11-14 (a Tuesday) 22:13:20 UTC
    row = temporal_features(np.array([1700000000.0]))[0]
    assert row.tolist() == [22, 1, 14, 11, (317 // 7) + 1, 4]


def test_evaluation_formulas_on_a_hand_case():
    actual_small = np.array([1, 1, 1, 0, 0, 0, 0, 1], bool)
    predicted_small = np.array([1, 1, 0, 1, 0, 0, 0, 0], bool)
    s = classification_summary(actual_small, predicted_small)
    assert s["confusion"] == {"TS": 2, "FS": 1, "FL": 2, "TL": 3}
    assert s["accuracy"] == pytest.approx(5 / 8)
    assert s["precision"] == pytest.approx(2 / 3) and s["recall"] == pytest.approx(2 / 4)
    assert s["false_small_rate"] == pytest.approx(1 / 3) and s["false_large_rate"] == pytest.approx(2 / 5)


def test_one_class_training_week_predicts_that_class():
    model = RuntimeClassifier().fit(np.zeros((3, 2)), [1, 1, 1])
    assert model.predict(np.zeros((2, 2))).tolist() == [1, 1]
    assert model.predict_proba(np.zeros((1, 2))).tolist() == [[0.0, 1.0]]
