"""The daemon's runtime-class model interface with a real trained, persisted classifier."""

from __future__ import annotations

import numpy as np

from rush.core.snapshot import RuntimeClass
from rush.daemon.snapshot_builder import ModelClassPredictor, SnapshotBuilder, load_class_predictor, user_id
from rush.models.history import JobColumns
from rush.models.persistence import save_model
from rush.models.runtime_class import RuntimeClassifier
from rush.models.runtime_features import FEATURES
from rush.rjms.base import ClusterState, RJMSJob


def train(path, divider: float = 600.0) -> RuntimeClassifier:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, len(FEATURES)))
    y = (X[:, 0] > 0).astype(int)  # learnable from the first feature
    model = RuntimeClassifier(n_estimators=10).fit(X, y)
    save_model(model, path, {"model": "runtime-class", "features": list(FEATURES), "divider": divider})
    return model


def test_trained_model_classifies_live_jobs_and_learns_completions(tmp_path):
    path = tmp_path / "rc.joblib"
    model = train(path)
    predictor = load_class_predictor(path, tmp_path / "history.json", small_below=None)
    assert isinstance(predictor, ModelClassPredictor)
    assert predictor.divider == 600.0 and "sha256:" in predictor.version
    jobs = [
        RJMSJob(i, "PENDING", 1_700_000_000.0 + i, q, t, user=u)
        for i, (q, t, u) in enumerate([(1, 60.0, "a"), (64, 86400.0, "b"), (8, float("inf"), "a")], start=1)
    ]
    built = SnapshotBuilder(predictor).build(ClusterState(1_700_000_100.0, 64, 0, tuple(jobs)), {})
    # The same answer as the model on the history's features (an unlimited request is clipped).
    columns = JobColumns(
        np.array([user_id(j.user) for j in jobs]),
        np.array([j.procs for j in jobs]),
        np.array([min(j.requested_time, 365 * 86400.0) for j in jobs]),
        np.array([j.submit for j in jobs]),
    )
    expected = model.predict(predictor.history.features(columns))
    assert [int(p.runtime_class) for p in built.snapshot.pending] == expected.tolist()
    assert {o["class_source"] for o in built.outputs.values()} == {"runtime-class"}
    assert set(built.predicted) == {1, 2, 3} and "runtime-class" in built.model_seconds
    # A finished job enters the live history, which is saved and reloaded on restart.
    done = RJMSJob(9, "RUNNING", 1_700_000_000.0, 1, 60.0, start=1_700_000_010.0, user="a")
    predictor.observe_finished(done, end=1_700_000_040.0)
    predictor.save()
    again = ModelClassPredictor(path, tmp_path / "history.json")
    assert again.history.observed == 1
    assert RuntimeClass(built.snapshot.pending[0].runtime_class) in (RuntimeClass.SMALL, RuntimeClass.LARGE)
