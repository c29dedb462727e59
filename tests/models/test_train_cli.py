"""``rush train runtime-class``: model and card written and usable; bad flags are clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rush.hashing import file_sha256
from rush.models.decision_thresholds import IDEMPOTENT_THRESHOLD, SMALL_THRESHOLD
from rush.models.runtime_features import FEATURES
from rush.models.runtime_pipeline import load_runtime_model
from rush.models.walkforward import predict_classes_walkforward
from rush.planner.snapshot_builder import ModelClassPredictor
from rush.rjms.base import RJMSJob
from rush.workload.swf import write_swf
from tests.models.fixtures import kth, kth_trace
from tests.rush_cli import rush


def test_train_runtime_class_writes_a_deployable_model(tmp_path):
    trace = kth_trace()
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
        "--estimator",
        "rf",  # a forest: the report then has importances
        "--mode",
        "live",
        "--report",
        str(report),
    )
    assert out.returncode == 0, out.stderr
    assert "walk-forward (live" in out.stdout and "accuracy" in out.stdout
    meta = json.loads((tmp_path / "models" / "rc.joblib.json").read_text())
    assert meta["features"] == list(FEATURES) and meta["model"] == "runtime-class" and meta["mode"] == "live"
    assert meta["sha256"] == file_sha256(model) and meta["classes"] == [0, 1]
    assert meta["time_base"]["timezone"] == "Europe/Stockholm" and meta["user_key_kind"] == "trace-id"
    window = meta["training_window"]
    unix_start = float(trace.header["UnixStartTime"])
    assert window["jobs"] > 2900 and unix_start <= window["first_submit"] <= window["last_submit"]
    assert window["last_week"] >= 4
    runtime = np.minimum(
        trace["runtime"][:3000], np.where(trace["req_time"][:3000] > 0, trace["req_time"][:3000], np.inf)
    )
    assert meta["divider"] == np.median(runtime[trace["runtime"][:3000] >= 0])
    assert set(meta["walkforward_quality"]) >= {"accuracy", "precision", "recall", "false_small_rate"}
    full = json.loads(report.read_text())
    assert len(full["weeks"]) >= 5 and "requested_time" in full["importances"]
    assert sorted(p.name for p in model.parent.iterdir()) == ["rc.joblib", "rc.joblib.json"]

    # The saved feature step carries the trace's history; the daemon keeps it (a replay's
    # trace-N jobs meet it) and notes that trace ids cannot match its user names.
    pipeline, _ = load_runtime_model(model)
    assert pipeline.named_steps["features"].history_.observed == window["jobs"]
    live = ModelClassPredictor(model, tmp_path / "history.json")
    assert live.history.observed == window["jobs"] and any("cannot match" in n for n in live.notes)
    w, _ = kth(3000)
    pending = [
        RJMSJob(k, "PENDING", 1.8e9 + k, int(w.procs[k]), float(w.requested_time[k]), user=f"u{w.user[k]}")
        for k in range(100)
    ]
    assert set(live.predict(pending)) <= {0, 1}

    # The simulator's entry point accepts the trained model (one model for every week).
    w, header = kth(1500)
    result = predict_classes_walkforward(w, header, model_path=model)
    assert (result.divider == meta["divider"]).all() and (result.predicted_class == 0).any()


def test_default_model_is_the_experiments_classifier_and_runs_live(tmp_path):
    """rush train's defaults are sim/runtime_classes' classifier: boosting, P(small) >= the
    chosen thresholds (one for jobs rush may not kill, one for idempotent jobs)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    trace = kth_trace()
    swf = tmp_path / "kth-prefix.swf"
    write_swf(trace.subset(np.arange(2000)), swf)
    model = tmp_path / "rc.joblib"
    out = rush("train", "runtime-class", str(swf), "--out", str(model), "--trees", "20")
    assert out.returncode == 0, out.stderr
    assert "walk-forward (live" in out.stdout
    meta = json.loads((tmp_path / "rc.joblib.json").read_text())
    assert (
        meta["small_threshold"] == SMALL_THRESHOLD and meta["estimator"] == "HistGradientBoostingClassifier"
    )
    assert meta["idempotent_threshold"] == IDEMPOTENT_THRESHOLD
    pipeline, _ = load_runtime_model(model)
    classifier = pipeline.named_steps["classifier"]
    assert isinstance(classifier.model_, HistGradientBoostingClassifier)
    assert classifier.threshold == SMALL_THRESHOLD and classifier.idempotent_threshold == IDEMPOTENT_THRESHOLD
    live = ModelClassPredictor(model, tmp_path / "history.json")
    w, _ = kth(2000)
    pending = [
        RJMSJob(k, "PENDING", 1.8e9 + k, int(w.procs[k]), float(w.requested_time[k]), user=f"u{w.user[k]}")
        for k in range(200)
    ]
    classes = live.predict(pending)
    assert set(classes) <= {0, 1} and len(classes) == 200
    # The threshold decides: the same probabilities, argmax instead, can only predict fewer small.
    X = live.features(pending)
    p_small = classifier.predict_proba(X)[:, 0]
    assert classes == np.where(p_small >= SMALL_THRESHOLD, 0, 1).tolist()
    # Jobs the core would kill at the divider (idempotent, kills on) get their own threshold.
    killable = [k % 2 == 0 for k in range(len(pending))]
    thresholds = np.where(killable, IDEMPOTENT_THRESHOLD, SMALL_THRESHOLD)
    assert live.predict(pending, killable) == np.where(p_small >= thresholds, 0, 1).tolist()
    assert live.predict(pending, killable) != classes  # the thresholds differ: some jobs move
    # The pending jobs' submissions entered the submission stream (user_since_last_submit).
    assert (X[1:, FEATURES.index("user_since_last_submit")] >= 0).any()


BAD_FLAGS = [
    (["--small-threshold", "1.5"], "--small-threshold", "1.5 is not a probability"),
    (["--small-threshold", "-0.2"], "--small-threshold", "not a probability"),
    (["--small-threshold", "nan"], "--small-threshold", "nan is not a probability"),
    (["--idempotent-threshold", "1"], "--idempotent-threshold", "1.0 is not a probability"),
    (["--idempotent-threshold", "nan"], "--idempotent-threshold", "nan is not a probability"),
    (["--idempotent-threshold", "-0.5"], "--idempotent-threshold", "-0.5 is not a probability"),
    (["--idempotent-threshold", "1e308"], "--idempotent-threshold", "1e+308 is not a probability"),
    (["--max-train-jobs", "-1"], "--max-train-jobs", "-1 jobs is out of range"),
    (["--estimator", "svm"], "--estimator", "unknown estimator 'svm'"),
    (["--mode", "daily"], "--mode", "unknown mode 'daily'"),
    (["--trees", "0"], "--trees", "0 trees"),
    (["--trees", "-3"], "--trees", "-3 trees"),
    (["--trees", "1000000000"], "--trees", "1000000000 trees"),
    (["--seed", "-1"], "--seed", "seed -1 is out of range"),
    (["--seed", str(2**40)], "--seed", "out of range"),
    (["--train-weeks", "0"], "--train-weeks", "0 weeks"),
    (["--train-weeks", "-2"], "--train-weeks", "-2 weeks"),
    (["--timezone", "Mars/Olympus"], "timezone", "unknown time zone 'Mars/Olympus'"),
    (["--timezone", "../../etc/passwd"], "timezone", "unknown time zone"),
    (["--report", "{tmp}"], "--report", "is a directory"),
]


def test_bad_flag_count():
    assert len(BAD_FLAGS) + 3 == 23  # plus the --out cases below


@pytest.mark.parametrize(("flags", "where", "message"), BAD_FLAGS, ids=[" ".join(f[0]) for f in BAD_FLAGS])
def test_bad_flags_are_clear_errors_before_any_work(tmp_path, flags, where, message):
    flags = [f.replace("{tmp}", str(tmp_path)) for f in flags]
    out = rush("train", "runtime-class", "lublin:300:16", "--out", str(tmp_path / "m"), *flags)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr and where in out.stderr and "fix:" in out.stderr
    assert "Traceback" not in out.stderr and "walk-forward" not in out.stdout
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("target", ["directory", "under a file", "sidecar a directory"])
def test_bad_out_path_is_refused_before_training(tmp_path, target):
    if target == "directory":
        out_path = tmp_path
    elif target == "under a file":
        (tmp_path / "file").write_text("x")
        out_path = tmp_path / "file" / "m.joblib"
    else:
        (tmp_path / "m.joblib.json").mkdir()
        out_path = tmp_path / "m.joblib"
    out = rush("train", "runtime-class", "lublin:300:16", "--out", str(out_path), "--no-walkforward")
    assert out.returncode == 2 and "--out" in out.stderr and "fix:" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
