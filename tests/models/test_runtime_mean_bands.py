"""The queued mean calibrated per band of itself (issue 29, H8 deployed): fitted from
out-of-sample means, carried in the model and its card, applied by the one function every
use of the mean calls; bad calibration data refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rush.errors import ModelError
from rush.models.runtime_mean_bands import MeanBands, fit_mean_bands, mean_bands_of
from rush.models.runtime_quantiles import RuntimeQuantileRegressor, mean_of_quantiles
from rush.models.runtime_quantiles_pipeline import (
    load_quantile_model,
)
from rush.models.runtime_quantiles_predictor import RuntimeQuantilePredictor
from rush.models.runtime_quantiles_walkforward import WEEK, QuantileWalkForward
from tests.models.fixtures import (
    UNIX_START,
    drive_quantile_predictor,
    saved_quantile_model,
    synthetic_workload,
)


def _two_shapes(n: int = 2000, seed: int = 4):
    """Means ~100 s that run half that, means ~10,000 s that run twice that."""
    rng = np.random.default_rng(seed)
    short = rng.random(n) < 0.5
    mean = np.where(short, 100.0, 10_000.0) * rng.uniform(0.95, 1.05, n)
    return mean, np.where(short, 0.5, 2.0) * mean, short


def test_each_band_gets_the_ratio_of_its_real_to_predicted_runtimes():
    mean, runtime, short = _two_shapes()
    bands = fit_mean_bands(mean, runtime)
    factor = bands.factor(mean)
    for group in (short, ~short):  # a band's factor: sum real / sum predicted over its rows
        for b in np.unique(mean_bands_of(mean[group])):
            rows = group & (mean_bands_of(mean) == b)
            if rows.sum() >= 100:
                assert np.allclose(factor[rows], runtime[rows].sum() / mean[rows].sum())
    assert np.allclose(factor[short], 0.5) and np.allclose(factor[~short], 2.0)
    request = np.full(len(mean), 15_000.0)
    out = bands.apply(mean, request)
    assert np.all(out <= request) and np.all(out >= 1.0)
    assert np.allclose(out[short], 0.5 * mean[short])


def test_a_band_with_fewer_than_100_rows_keeps_its_mean():
    mean, runtime, _ = _two_shapes(150)
    bands = fit_mean_bands(mean, runtime)
    assert bands.bands == ()  # no band reaches 100 rows
    assert np.array_equal(bands.factor(mean), np.ones(len(mean)))


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ({"bands": [3, 4], "factors": [1.2, float("nan")]}, "NaN"),
        ({"bands": [3, 4], "factors": [1.2, -0.5]}, "negative"),
        ({"bands": [4, 3], "factors": [1.2, 0.9]}, "strictly increasing"),
        ({"bands": [3, 4], "factors": [1.2]}, "2 bands but 1 factors"),
        ({"bands": [3.5], "factors": [1.2]}, "whole numbers"),
        ({"factors": [1.2]}, "unreadable"),
    ],
)
def test_bad_calibration_data_is_refused(value, match):
    with pytest.raises(ModelError, match=match):
        MeanBands.from_card(value)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    w = synthetic_workload(500)
    return saved_quantile_model(tmp_path_factory.mktemp("bands"), w)


def test_a_retrain_fits_bands_from_cross_fitted_means_and_the_card_carries_them(saved):
    model, path = saved
    regressor = model.named_steps["regressor"]
    assert isinstance(regressor.mean_bands_, MeanBands) and regressor.mean_bands_.bands
    loaded, card = load_quantile_model(path)
    assert card["mean_bands"] == regressor.mean_bands_.to_card()
    assert loaded.named_steps["regressor"].mean_bands_ == regressor.mean_bands_


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda b: b | {"factors": [float("nan")] * len(b["factors"])}, "NaN"),
        (lambda b: b | {"factors": [-1.0] * len(b["factors"])}, "negative"),
        (lambda b: b | {"bands": b["bands"][::-1] + [b["bands"][0]]}, "bands"),
        (lambda b: b | {"factors": [f * 1.5 for f in b["factors"]]}, "disagree on mean_bands"),
    ],
)
def test_a_card_with_bad_or_other_bands_is_refused(saved, tmp_path, edit, match):
    _, path = saved
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    card = json.loads(path.with_name(path.name + ".json").read_text())
    card["mean_bands"] = edit(card["mean_bands"])
    copy.with_name(copy.name + ".json").write_text(json.dumps(card))
    with pytest.raises(ModelError, match=match):
        load_quantile_model(copy)


def test_a_card_and_model_from_before_bands_load_with_factor_1(saved, tmp_path):
    """A model written before bands existed: no card key, no attribute: the plain mean."""
    import joblib

    model, path = saved
    old = joblib.load(path)
    regressor = old.named_steps["regressor"]
    del regressor.__dict__["mean_bands_"]
    regressor.__setstate__(regressor.__getstate__())
    assert regressor.mean_bands_ is None
    X = np.column_stack([np.log1p(np.full(3, 3600.0)), np.zeros((3, regressor.n_features_in_ - 1))])
    log_q = regressor.predict_log_quantiles(X)
    plain = mean_of_quantiles(log_q, regressor.levels_, X[:, 0])
    assert np.array_equal(regressor.predict_mean(X), plain)


def test_the_simulators_predictor_calibrates_on_its_own_earlier_predictions():
    predictor = RuntimeQuantilePredictor(
        regressor=RuntimeQuantileRegressor(max_iter=10), unix_start=UNIX_START, timezone="Europe/Stockholm"
    )
    predicted, jobs = drive_quantile_predictor(predictor, 700)
    bands = predictor.model_.mean_bands_
    assert bands is not None
    # The last refit's rows: every job finished before it; those predicted earlier give the bands.
    finished = jobs.end < jobs.submit[0] + WEEK * int((jobs.submit[-1] - jobs.submit[0]) // WEEK)
    known = np.array([i in predictor.predicted_mean_ for i in jobs.job_id]) & finished
    expected = fit_mean_bands(
        np.array([predictor.predicted_mean_[i] for i in jobs.job_id[known]]),
        np.minimum(jobs.runtime[known], jobs.requested_time[known]),
    )
    assert bands == expected


def test_the_walkforward_calibration_uses_no_future_runtime():
    rng = np.random.default_rng(7)
    n, levels = 3000, np.array([0.1, 0.5, 0.9])
    submit = np.sort(rng.uniform(0, 6 * WEEK, n))
    median = np.where(rng.random(n) < 0.5, 100.0, 10_000.0)
    runtime = median * rng.uniform(0.2, 3.0, n)
    end = submit + runtime
    request = np.full(n, 100_000.0)

    def walkforward(runtimes):
        return QuantileWalkForward(
            levels=levels,
            quantiles=median[:, None] * np.array([0.5, 1.0, 2.0])[None, :],
            proba_small=np.where(submit >= WEEK, 0.5, np.nan),
            divider=np.full(n, 1000.0),
            threshold=np.full(n, 0.5),
            predicted_class=np.ones(n, np.int8),
            runtime=runtimes,
            requested_time=request,
            week=((submit - submit[0]) // WEEK).astype(np.int64),
            features=np.zeros((n, 1)),
            end=end,
            submit=submit,
            max_train_jobs=1000,
        )

    first = walkforward(runtime).calibrated_mean()
    cut = submit[0] + 4 * WEEK
    changed = np.where(end >= cut, runtime * 7.0, runtime)  # another future
    second = walkforward(changed).calibrated_mean()
    before = submit < cut
    assert np.array_equal(first[before], second[before])
    assert not np.array_equal(first[~before], second[~before])
    plain = walkforward(runtime).mean()
    assert np.array_equal(first[submit < WEEK], plain[submit < WEEK])  # no model: the mean stands
