"""Training only on the jobs finished before a moment, on a replay's time scale
(rush.models.training_cut, ``rush train runtime-quantiles --before/--time-scale``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rush.errors import ConfigError
from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_features import QuantileJobs
from rush.models.runtime_quantiles_pipeline import fit_quantiles_on_history, load_quantile_model
from rush.models.training_cut import TrainingCut
from rush.workload.swf import write_swf
from tests.models.fixtures import HEADER, UNIX_START, kth_trace, synthetic_workload
from tests.rush_cli import rush


def _with_waits(n: int = 400):
    w = synthetic_workload(n)
    w.extra["wait"] = np.where(np.arange(n) % 7 == 0, -1.0, (np.arange(n) % 5) * 900.0)  # some unknown
    return w


def test_only_jobs_finished_by_the_cutoff_are_kept():
    w = _with_waits()
    cut = TrainingCut.parse("job:200", 1.0, w)
    assert cut.before == w.submit[200]
    kept = cut.apply(w)
    end = w.submit + np.maximum(w.extra["wait"], 0) + w.runtime
    assert set(kept.job_id) == set(w.job_id[end <= cut.before])
    assert 0 < len(kept) < 200  # some of the first 200 were still running at the cutoff
    assert np.array_equal(TrainingCut.parse(str(w.submit[200]), 1.0, w).apply(w).job_id, kept.job_id)


def test_the_time_scale_divides_every_duration_and_compresses_submits_around_the_cutoff():
    w = _with_waits()
    plain = TrainingCut.parse("job:300", 1.0, w).apply(w)
    scaled = TrainingCut.parse("job:300", 10.0, w).apply(w)
    assert np.array_equal(plain.job_id, scaled.job_id)
    assert np.allclose(scaled.runtime, plain.runtime / 10) and np.allclose(
        scaled.requested_time, plain.requested_time / 10
    )
    known = plain.extra["wait"] >= 0
    assert np.allclose(scaled.extra["wait"][known], plain.extra["wait"][known] / 10)
    assert np.all(scaled.extra["wait"][~known] == -1)  # unknown stays unknown
    before = w.submit[300]
    assert np.allclose(before - scaled.submit, (before - plain.submit) / 10)


def test_a_model_trained_with_a_cutoff_never_sees_later_jobs():
    w = _with_waits()
    cut = TrainingCut.parse("job:250", 1.0, w)
    future = _with_waits()
    later = future.submit > cut.before
    future.runtime[later] = future.runtime[later] * 3 + 7  # a different future
    fits = [
        fit_quantiles_on_history(x, HEADER, RuntimeQuantileRegressor(max_iter=10), cut=cut)
        for x in (w, future)
    ]
    pending = QuantileJobs(
        w.user[:20], w.procs[:20], w.requested_time[:20], UNIX_START + cut.before + np.arange(20) * 60.0
    )
    q = [
        m.named_steps["regressor"].predict_quantiles(m.named_steps["features"].transform(pending))
        for m, _ in fits
    ]
    assert np.array_equal(q[0], q[1])
    window = fits[0][1]["training_window"]
    assert window["before"] == cut.before and window["time_scale"] == 1.0
    assert window["last_submit"] <= UNIX_START + cut.before


def test_the_scaled_model_predicts_in_the_replays_seconds():
    w = _with_waits()
    fits = [
        fit_quantiles_on_history(
            w, HEADER, RuntimeQuantileRegressor(max_iter=10), cut=TrainingCut.parse("job:300", k, w)
        )
        for k in (1.0, 10.0)
    ]
    (plain, card), (scaled, scaled_card) = fits
    assert scaled_card["divider"] == pytest.approx(card["divider"] / 10)  # the median runtime, scaled
    assert scaled_card["training_window"]["time_scale"] == 10.0
    n = 40
    start = UNIX_START + w.submit[300]

    def quantiles(model, k):
        pending = QuantileJobs(
            w.user[:n], w.procs[:n], w.requested_time[:n] / k, start + np.arange(n) * 60.0 / k
        )
        return model.named_steps["regressor"].predict_quantiles(
            model.named_steps["features"].transform(pending)
        )

    # the two shapes' runtimes differ by 20x and more: each model tells them apart on its own scale
    small = w.requested_time[:n] == 600.0
    for model, k in ((plain, 1.0), (scaled, 10.0)):
        median = quantiles(model, k)[:, 2]
        assert np.all(median[small] <= 600.0 / k * (1 + 1e-9)) and median[~small].min() > median[small].max()


@pytest.mark.parametrize(
    ("before", "scale"),
    [("job:x", 1.0), ("job:400", 1.0), ("-5", 1.0), ("nan", 1.0), (None, 0.0), (None, -2.0)],
)
def test_bad_values_are_configuration_errors(before, scale):
    w = _with_waits()
    with pytest.raises(ConfigError, match="--before" if before else "--time-scale"):
        TrainingCut.parse(before, scale, w)
    with pytest.raises(ConfigError, match="no job of the trace finished"):
        TrainingCut.parse("0", 1.0, w).apply(w)


def test_the_cli_records_the_cut_and_refuses_bad_values(tmp_path):
    swf = tmp_path / "kth-prefix.swf"
    write_swf(kth_trace().subset(np.arange(1200)), swf)
    model = tmp_path / "rq.joblib"
    for flags, where in ((["--before", "job:5000"], "--before"), (["--time-scale", "0"], "--time-scale")):
        out = rush("train", "runtime-quantiles", str(swf), "--out", str(model), *flags)
        assert out.returncode == 2 and where in out.stderr, out.stderr
        assert not model.exists()
    args = ["--before", "job:1000", "--time-scale", "10", "--no-job-fields", "--max-train-jobs", "500"]
    out = rush("train", "runtime-quantiles", str(swf), "--out", str(model), *args)
    assert out.returncode == 0, out.stderr
    card = json.loads((tmp_path / "rq.joblib.json").read_text())
    assert card["training_window"]["time_scale"] == 10.0 and card["training_window"]["before"] > 0
    assert card["fields"] == []
    load_quantile_model(model, fields=[])  # what the live predictor loads
