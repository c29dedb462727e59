"""Model files: round trip, and every way a model file can be wrong is refused before use."""

from __future__ import annotations

import hashlib
import json

import joblib
import numpy as np
import pytest

from rush.errors import ModelError
from rush.models.model_card import RuntimeClassCard
from rush.models.persistence import load_model, save_model, sidecar_path
from rush.models.runtime_features import FEATURES
from rush.models.runtime_pipeline import load_runtime_model
from tests.models.fixtures import save_trained, synthetic_workload


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "m.joblib"
    trained, meta = save_trained(path)
    return trained, path, meta


def jobs_of(n: int = 50):
    from rush.models.history import JobColumns

    w = synthetic_workload(n, seed=9)
    return JobColumns(w.user, w.procs, w.requested_time, w.submit + 1.8e9)


def test_round_trip_with_card(saved):
    trained, path, meta = saved
    assert set(meta["versions"]) >= {"scikit-learn", "numpy", "joblib", "rush", "python"}
    on_disk = json.loads(sidecar_path(path).read_text())
    assert on_disk["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert on_disk["features"] == list(FEATURES) and on_disk["divider"] == trained.divider
    assert on_disk["classes"] == [0, 1] and on_disk["user_key_kind"] == "trace-id"
    assert on_disk["time_base"]["timezone"] == "Europe/Stockholm" and on_disk["time_base"]["unix_start_known"]
    window = on_disk["training_window"]
    assert window["jobs"] == 600 and 1_700_000_000 <= window["first_submit"] <= window["last_submit"]
    loaded, card = load_runtime_model(path)
    X = jobs_of()
    assert np.array_equal(loaded.predict(X), trained.model.predict(X)) and card["divider"] == trained.divider
    assert not list(path.parent.glob("*.tmp"))


def test_changed_byte_refused_before_unpickling(saved, monkeypatch):
    _, path, _ = saved
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))

    def never(*args, **kwargs):
        raise AssertionError("joblib.load called on a file that failed its sha256 check")

    monkeypatch.setattr(joblib, "load", never)
    with pytest.raises(ModelError, match="sha256 mismatch") as err:
        load_model(path)
    assert err.value.where == str(path) and "rush train runtime-class" in err.value.fix


def test_feature_mismatch_refused(saved):
    _, path, _ = saved
    with pytest.raises(ModelError, match="trained on features") as err:
        load_model(path, expected_features=list(FEATURES)[:-1])
    assert err.value.where.endswith(".json: features")


def test_other_scikit_learn_version_refused(saved):
    _, path, _ = saved
    side = json.loads(sidecar_path(path).read_text())
    side["versions"]["scikit-learn"] = "0.24.2"
    sidecar_path(path).write_text(json.dumps(side))
    with pytest.raises(ModelError, match="scikit-learn 0.24.2"):
        load_model(path)


def test_save_refuses_an_invalid_card_and_leaves_nothing(saved, tmp_path):
    trained, _, _ = saved
    out = tmp_path / "new.joblib"
    with pytest.raises(ModelError, match="divider"):
        save_model(trained.model, out, trained.metadata | {"divider": -1.0}, card=RuntimeClassCard)
    assert list(tmp_path.glob("new*")) == []
    with pytest.raises(ModelError, match="directory"):
        save_model(trained.model, tmp_path, trained.metadata, card=RuntimeClassCard)
