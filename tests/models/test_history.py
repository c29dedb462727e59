"""The live history store: completions in, features and predictions out, persisted."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.snapshot import PendingJob
from rush.errors import ModelError
from rush.models.history import JobColumns, RuntimeHistory
from rush.models.persistence import save_model
from rush.models.runtime_class import RuntimeClassifier
from rush.models.runtime_features import FEATURES, Clock

DAY = 86400.0
NOON = 20000 * DAY + 12 * 3600  # a Unix time, UTC clock


def row(history: RuntimeHistory, user: int, procs: int, req: float, submit: float, divider: float) -> dict:
    X = history.features(
        JobColumns(np.array([user]), np.array([procs]), np.array([req]), np.array([submit])), divider
    )
    return dict(zip(FEATURES, X[0], strict=True))


def test_lags_and_fractions_per_category():
    history = RuntimeHistory()
    for runtime in (100, 5000, 50):  # oldest first
        history.observe_finished(user=7, procs=4, requested_time=3600, submit=NOON, runtime=runtime)
    history.observe_finished(user=7, procs=8, requested_time=3600, submit=NOON - DAY, runtime=2000)
    r = row(history, 7, 4, 3600, NOON + 60, divider=1000)
    assert (r["lag1_user_procs"], r["lag2_user_procs"], r["lag3_user_procs"]) == (0.0, 1.0, 0.0)
    assert r["frac_small_user_procs"] == pytest.approx(2 / 3)
    # (user, p~) holds all four; the latest finished is the 8-processor job (large).
    assert r["lag1_user_reqtime"] == 1.0 and r["frac_small_user_reqtime"] == pytest.approx(2 / 4)
    # (user, day): the 8-processor job was submitted the day before.
    assert r["frac_small_user_day"] == pytest.approx(2 / 3) and r["lag1_user_day"] == 0.0
    assert r["hour"] == 12 and r["requested_time"] == 3600 and r["procs"] == 4
    unknown = row(history, 8, 4, 3600, NOON, divider=1000)
    assert all(unknown[f] == -1.0 for f in FEATURES if f.startswith(("lag", "frac")))
    # Another divider relabels the same history.
    assert row(history, 7, 4, 3600, NOON, divider=10_000)["lag2_user_procs"] == 0.0


def test_new_completions_are_seen_at_once_and_runtime_is_clipped():
    history = RuntimeHistory()
    history.observe_finished(7, 4, 3600, NOON, 100)
    assert row(history, 7, 4, 3600, NOON, 1000)["lag1_user_procs"] == 0.0
    history.observe_finished(7, 4, 3600, NOON, 90_000)  # killed at its walltime: 3600 s
    r = row(history, 7, 4, 3600, NOON, 1000)
    assert r["lag1_user_procs"] == 1.0 and r["lag2_user_procs"] == 0.0
    assert history.runtimes[("q", 7, 4)] == [100.0, 3600.0]


def test_predict_with_attached_model_and_pending_job_objects(tmp_path):
    history = RuntimeHistory()
    rng = np.random.default_rng(0)
    for k in range(400):
        small = k % 2 == 0
        history.observe_finished(
            k % 5, 1 if small else 64, 600 if small else 86400, NOON, 30 if small else 50_000
        )
    with pytest.raises(ModelError, match="no runtime classifier"):
        history.predict([])
    pending = [
        PendingJob(
            job_id=k,
            submit=NOON + k,
            procs=1 if k % 2 else 64,
            requested_time=600.0 if k % 2 else 86400.0,
            user=k % 5,
        )
        for k in range(50)
    ]
    X = history.features(pending, divider=1000)
    y = np.where(X[:, FEATURES.index("procs")] == 1, 0, 1)
    model = RuntimeClassifier(n_estimators=10).fit(
        np.vstack([X, X + rng.normal(0, 0.01, X.shape)]), np.tile(y, 2)
    )
    path = tmp_path / "rc.joblib"
    save_model(model, path, {"model": "runtime-class", "features": list(FEATURES), "divider": 1000.0})
    history.save(tmp_path / "h.json")
    live = RuntimeHistory.from_model(path, tmp_path / "h.json")
    assert live.divider == 1000.0 and live.observed == 400
    assert np.array_equal(live.predict(pending), y)
    assert live.predict([]).shape == (0,)


def test_persistence_round_trip_and_broken_file(tmp_path):
    history = RuntimeHistory(clock=Clock(start=1000.0, timezone="Europe/Stockholm"))
    for k in range(30):
        history.observe_finished(k % 3, 2 ** (k % 4), 60.0 * (k % 5 + 1), k * 3600.0, 10.0 * k)
    path = tmp_path / "history.json"
    history.save(path)
    again = RuntimeHistory.load(path)
    assert again.clock == history.clock and again.observed == 30
    pending = JobColumns(
        np.array([0, 1, 2, 9]),
        np.array([1, 2, 4, 8]),
        np.array([60.0, 120.0, 180.0, 60.0]),
        np.array([3600.0, 7200.0, 90000.0, 0.0]),
    )
    assert np.array_equal(again.features(pending, 100.0), history.features(pending, 100.0))
    path.write_text("{broken")
    with pytest.raises(ModelError, match="runtime history"):
        RuntimeHistory.load(path)
    path.write_text('{"format": 99}')
    with pytest.raises(ModelError, match="format"):
        RuntimeHistory.load(path)


def test_forget_old_days():
    history = RuntimeHistory()
    history.observe_finished(1, 1, 60, NOON - 10 * DAY, 5)
    history.observe_finished(1, 1, 60, NOON, 5)
    assert history.forget_days_before(NOON) == 1
    assert row(history, 1, 1, 60, NOON - 10 * DAY, 10)["lag1_user_day"] == -1.0
    assert row(history, 1, 1, 60, NOON, 10)["lag1_user_day"] == 0.0
