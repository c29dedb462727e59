"""``rush train runtime-quantiles`` and ``rush simulate --class-model``: what they write and refuse."""

from __future__ import annotations

import json

import numpy as np

from rush.hashing import file_sha256
from rush.models.runtime_quantiles_features import DEFAULT_FEATURE_SET, QuantileJobs, feature_names
from rush.models.runtime_quantiles_pipeline import load_quantile_model
from rush.workload.swf import write_swf
from tests.models.fixtures import kth_trace
from tests.rush_cli import rush


def test_train_runtime_quantiles_writes_a_verified_model(tmp_path):
    trace = kth_trace()
    swf = tmp_path / "kth-prefix.swf"
    write_swf(trace.subset(np.arange(1500)), swf)
    model = tmp_path / "models" / "rq.joblib"
    out = rush("train", "runtime-quantiles", str(swf), "--out", str(model), "--max-train-jobs", "800")
    assert out.returncode == 0, out.stderr
    card = json.loads((tmp_path / "models" / "rq.joblib.json").read_text())
    assert card["model"] == "runtime-quantiles" and card["features"] == list(
        feature_names(DEFAULT_FEATURE_SET)
    )
    assert card["feature_set"] == DEFAULT_FEATURE_SET  # the CLI's default is the predictor's
    assert card["sha256"] == file_sha256(model) and card["quantiles"] == [0.1, 0.25, 0.5, 0.75, 0.9]
    assert card["time_base"]["timezone"] == "Europe/Stockholm" and card["user_key_kind"] == "trace-id"
    pipeline, _ = load_quantile_model(model, fields=["app", "queue"])
    unix_start = float(trace.header["UnixStartTime"])
    later = unix_start + float(trace["submit"][1499]) + 3600.0 + np.arange(5)
    pending = QuantileJobs(
        trace["user"][:5], np.maximum(trace["req_procs"][:5], 1), trace["req_time"][:5].astype(float), later
    )
    X = pipeline.named_steps["features"].transform(pending)
    q = pipeline.named_steps["regressor"].predict_quantiles(X)
    assert np.all(np.isfinite(q)) and np.all(q >= 0) and np.all(np.diff(q, axis=1) >= 0)


def test_train_runtime_quantiles_refuses_an_unknown_feature_set(tmp_path):
    model = tmp_path / "rq.joblib"
    out = rush("train", "runtime-quantiles", "KTH-SP2", "--out", str(model), "--feature-set", "t99")
    assert out.returncode == 2 and "--feature-set" in out.stderr and "t23" in out.stderr
    assert not model.exists()


def test_bad_flags_are_configuration_errors(tmp_path):
    out = rush("train", "runtime-quantiles", "KTH-SP2", "--out", str(tmp_path / "m"), "--seed", "-1")
    assert out.returncode == 2 and "--seed" in out.stderr
    out = rush("simulate", "KTH-SP2", "--classes", "plain", "--class-model", "oracle")
    assert out.returncode == 2 and "--class-model" in out.stderr
    out = rush(
        "simulate",
        "KTH-SP2",
        "--classes",
        "plain",
        "--class-model",
        "quantiles",
        "--model",
        str(tmp_path / "m"),
    )
    assert out.returncode == 2 and "--model" in out.stderr
