"""Model files: round trip, and every way a model file can be wrong is refused before use."""

from __future__ import annotations

import hashlib
import json

import joblib
import numpy as np
import pytest

from rush.errors import ModelError
from rush.models.persistence import load_model, save_model, sidecar_path
from rush.models.runtime_class import RuntimeClassifier, load_runtime_classifier
from rush.models.runtime_features import FEATURES

META = {
    "model": "runtime-class",
    "features": list(FEATURES),
    "divider": 600.0,
    "training_window": {"jobs": 200},
}


@pytest.fixture
def saved(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.random((300, len(FEATURES)))
    y = (X[:, 0] > 0.5).astype(int)
    model = RuntimeClassifier(n_estimators=5).fit(X, y)
    path = tmp_path / "m.joblib"
    meta = save_model(model, path, META)
    return model, path, meta, X


def test_round_trip_with_sidecar(saved):
    model, path, meta, X = saved
    assert set(meta["versions"]) >= {"scikit-learn", "numpy", "joblib", "rush", "python"}
    on_disk = json.loads(sidecar_path(path).read_text())
    assert on_disk["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert on_disk["features"] == list(FEATURES) and on_disk["divider"] == 600.0 and "created" in on_disk
    loaded, meta2 = load_runtime_classifier(path)
    assert np.array_equal(loaded.predict(X), model.predict(X)) and meta2["divider"] == 600.0
    assert not list(path.parent.glob("*.tmp"))


def test_changed_byte_refused_before_unpickling(saved, monkeypatch):
    _, path, _, _ = saved
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))

    def never(*args, **kwargs):
        raise AssertionError("joblib.load called on a file that failed its sha256 check")

    monkeypatch.setattr(joblib, "load", never)
    with pytest.raises(ModelError, match="sha256 mismatch") as err:
        load_model(path)
    assert err.value.where == str(path) and "rush train runtime-class" in err.value.fix


def test_corrupt_file_with_matching_sidecar_refused(saved):
    _, path, _, _ = saved
    path.write_bytes(b"not a joblib file")
    side = json.loads(sidecar_path(path).read_text()) | {
        "sha256": hashlib.sha256(b"not a joblib file").hexdigest()
    }
    sidecar_path(path).write_text(json.dumps(side))
    with pytest.raises(ModelError, match="cannot load the model"):
        load_model(path)


def test_missing_or_broken_sidecar_refused(saved):
    _, path, _, _ = saved
    sidecar_path(path).write_text("{broken")
    with pytest.raises(ModelError, match="not JSON"):
        load_model(path)
    sidecar_path(path).write_text("{}")
    with pytest.raises(ModelError, match="no sha256"):
        load_model(path)
    sidecar_path(path).unlink()
    with pytest.raises(ModelError, match="sidecar is missing"):
        load_model(path)
    with pytest.raises(ModelError, match="not found"):
        load_model(path.with_name("absent.joblib"))


def test_feature_mismatch_refused(saved):
    _, path, _, _ = saved
    with pytest.raises(ModelError, match="trained on features"):
        load_model(path, expected_features=list(FEATURES)[:-1])
    save_model(
        RuntimeClassifier(n_estimators=2).fit(np.zeros((2, 1)), [0, 1]), path, META | {"features": ["procs"]}
    )
    with pytest.raises(ModelError, match="trained on features"):
        load_runtime_classifier(path)


def test_other_scikit_learn_version_refused(saved):
    _, path, _, _ = saved
    side = json.loads(sidecar_path(path).read_text())
    side["versions"]["scikit-learn"] = "0.24.2"
    sidecar_path(path).write_text(json.dumps(side))
    with pytest.raises(ModelError, match="scikit-learn 0.24.2"):
        load_model(path)


def test_runtime_class_sidecar_needs_a_divider(saved):
    model, path, _, _ = saved
    save_model(model, path, META | {"divider": None})
    with pytest.raises(ModelError, match="divider"):
        load_runtime_classifier(path)
    save_model(model, path, META | {"model": "variability"})
    with pytest.raises(ModelError, match="not a runtime-class model"):
        load_runtime_classifier(path)
