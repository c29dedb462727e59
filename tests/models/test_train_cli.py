"""``rush train runtime-class``: model, sidecar and history store written and usable."""

from __future__ import annotations

import json

import numpy as np

from rush.models.history import JobColumns, RuntimeHistory
from rush.models.persistence import file_sha256
from rush.models.runtime_features import FEATURES
from rush.models.walkforward import predict_classes_walkforward
from rush.workload.swf import write_swf
from tests.models.test_runtime_class import _kth_trace, kth
from tests.workload.test_cli import rush


def test_train_runtime_class_writes_a_deployable_model(tmp_path):
    trace = _kth_trace()
    swf = tmp_path / "kth-prefix.swf"
    write_swf(trace.subset(np.arange(3000)), swf)
    model = tmp_path / "models" / "rc.joblib"
    report = tmp_path / "report.json"
    out = rush(
        "train",
        "runtime-class",
        str(swf),
        "--out",
        str(model),
        "--trees",
        "10",
        "--mode",
        "live",
        "--report",
        str(report),
    )
    assert out.returncode == 0, out.stderr
    assert "walk-forward (live" in out.stdout and "accuracy" in out.stdout
    meta = json.loads((tmp_path / "models" / "rc.joblib.json").read_text())
    assert meta["features"] == list(FEATURES) and meta["model"] == "runtime-class" and meta["mode"] == "live"
    assert meta["sha256"] == file_sha256(model)
    window = meta["training_window"]
    assert (
        window["jobs"] > 2900 and window["first_submit"] <= window["last_submit"] and window["last_week"] >= 4
    )
    runtime = np.minimum(
        trace["runtime"][:3000], np.where(trace["req_time"][:3000] > 0, trace["req_time"][:3000], np.inf)
    )
    assert meta["divider"] == np.median(runtime[trace["runtime"][:3000] >= 0])
    assert set(meta["walkforward_quality"]) >= {"accuracy", "precision", "recall", "false_small_rate"}
    full = json.loads(report.read_text())
    assert len(full["weeks"]) >= 5 and "requested_time" in full["importances"]

    history_path = tmp_path / "models" / "rc.joblib.history.json"
    assert meta["history"]["sha256"] == file_sha256(history_path)
    live = RuntimeHistory.from_model(model, history_path)
    assert live.observed == window["jobs"]
    w, _ = kth(3000)
    pending = JobColumns(w.user[:100], w.procs[:100], w.requested_time[:100], w.submit[:100] + w.submit[-1])
    assert set(np.unique(live.predict(pending))) <= {0, 1}

    # The simulator's entry point accepts the trained model (one model for every week).
    w, header = kth(1500)
    result = predict_classes_walkforward(w, header, model_path=model)
    assert (result.divider == meta["divider"]).all() and (result.predicted_class == 0).any()


def test_bad_options_are_clear_errors(tmp_path):
    out = rush("train", "runtime-class", "lublin:300:16", "--out", str(tmp_path / "m"), "--estimator", "svm")
    assert out.returncode == 2 and "unknown estimator 'svm'" in out.stderr and "fix:" in out.stderr
    out = rush("train", "runtime-class", "lublin:300:16", "--out", str(tmp_path / "m"), "--mode", "daily")
    assert out.returncode == 2 and "unknown mode 'daily'" in out.stderr
