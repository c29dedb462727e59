"""The quantile predictor's classification head (issue 29, round 7): one model family and one
feature path for runtimes and classes; the card says where P(small) comes from."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from rush.errors import ModelError
from rush.models.runtime_quantiles import RuntimeClassHead, RuntimeQuantileRegressor
from rush.models.runtime_quantiles_pipeline import (
    fit_quantiles_on_history,
    load_quantile_model,
    save_quantile_model,
)
from rush.models.runtime_quantiles_walkforward import WEEK, predict_quantiles_walkforward
from tests.models.fixtures import (
    HEADER,
    SMALL_QUANTILE_MODEL,
    fitted_quantile_model,
    synthetic_quantile_matrix,
    synthetic_workload,
)


@pytest.mark.parametrize("class_head", ["head", "blend"])
def test_the_head_separates_the_classes_and_blend_is_the_mean_of_both(class_head):
    quantiles, X, runtime = fitted_quantile_model()
    model, _, _ = fitted_quantile_model(class_head=class_head)
    proba = model.predict_proba(X)
    assert np.allclose(proba.sum(axis=1), 1.0) and np.all((proba >= 0) & (proba <= 1))
    short = runtime <= 600.0
    assert np.mean((proba[:, 0] >= 0.5) == short) > 0.9
    # The quantiles are the same model's with or without a head: the head adds, it replaces nothing.
    assert np.array_equal(model.predict_quantiles(X), quantiles.predict_quantiles(X))
    head = model.head_.predict_proba(X)[:, 0]
    expected = head if class_head == "head" else (quantiles.predict_proba(X)[:, 0] + head) / 2
    assert np.allclose(proba[:, 0], expected)


def test_the_compiled_head_gives_scikit_learns_probabilities():
    X, runtime = synthetic_quantile_matrix()
    head = RuntimeClassHead(divider=600.0, **SMALL_QUANTILE_MODEL).fit(X, runtime)
    assert head.compiled_ is not None
    assert np.allclose(head.predict_proba(X), head.model_.predict_proba(X), rtol=0, atol=1e-12)
    restored = pickle.loads(pickle.dumps(head))
    assert np.array_equal(restored.predict_proba(X), head.predict_proba(X))


def test_a_row_the_head_cannot_read_keeps_the_quantiles_fallback():
    model, X, runtime = fitted_quantile_model(class_head="head")
    bad = X[:3].copy()
    bad[:, 5] = np.nan
    proba = model.predict_proba(bad)[:, 0]
    # The quantiles' fallback for such a row is the request: P(small) 1 iff the request is within the divider.
    assert np.array_equal(proba, (np.expm1(bad[:, 0]) <= 600.0).astype(float))


def test_one_class_in_the_history_gives_that_class():
    X, runtime = synthetic_quantile_matrix()
    head = RuntimeClassHead(divider=1e9).fit(X, runtime)  # every job small
    assert np.array_equal(head.predict_proba(X[:5]), np.tile([1.0, 0.0], (5, 1)))


@pytest.mark.parametrize(
    "params, match",
    [({"class_head": "forest"}, "class_head"), ({"class_head": "head", "divider": None}, "divider")],
)
def test_an_unknown_head_or_a_head_without_a_divider_is_refused(params, match):
    X, runtime = synthetic_quantile_matrix(200)
    with pytest.raises(ValueError, match=match):
        RuntimeQuantileRegressor(**{"divider": 600.0, **SMALL_QUANTILE_MODEL, **params}).fit(X, runtime)


def test_a_model_pickled_before_heads_reads_its_classes_off_the_quantiles():
    model, X, runtime = fitted_quantile_model()
    state = model.__getstate__()
    state.pop("class_head")
    state.pop("head_")
    old = RuntimeQuantileRegressor.__new__(RuntimeQuantileRegressor)
    old.__setstate__(state)
    assert old.class_head == "quantiles"
    assert np.array_equal(old.predict_proba(X), model.predict_proba(X))


def test_the_walkforward_with_a_head_uses_no_future_runtimes():
    w = synthetic_workload(900)
    regressor = RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL, class_head="blend")
    first = predict_quantiles_walkforward(w, HEADER, regressor)
    later = w.submit >= w.submit[0] + 2 * WEEK
    changed = synthetic_workload(900)
    changed.runtime[later] = changed.requested_time[later]  # another future
    second = predict_quantiles_walkforward(changed, HEADER, regressor)
    past = ~later
    assert np.array_equal(first.proba_small[past], second.proba_small[past], equal_nan=True)
    assert np.array_equal(first.predicted_class[past], second.predicted_class[past])
    plain = predict_quantiles_walkforward(w, HEADER, RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL))
    assert np.array_equal(first.quantiles, plain.quantiles)  # the head changes the classes only
    assert not np.array_equal(first.proba_small, plain.proba_small, equal_nan=True)


def _saved(tmp_path, class_head: str):
    w = synthetic_workload(500)
    regressor = RuntimeQuantileRegressor(max_iter=10, class_head=class_head)
    model, metadata = fit_quantiles_on_history(w, HEADER, regressor)
    path = tmp_path / "quantiles.joblib"
    save_quantile_model(model, metadata, path)
    return model, path


def test_a_saved_model_with_a_head_records_it_and_predicts_the_same(tmp_path):
    model, path = _saved(tmp_path, "blend")
    loaded, card = load_quantile_model(path)
    assert card["class_head"] == "blend"
    X, _ = synthetic_quantile_matrix(300)
    assert np.array_equal(
        loaded.named_steps["regressor"].predict_proba(X), model.named_steps["regressor"].predict_proba(X)
    )


@pytest.mark.parametrize("fitted, claimed", [("blend", "quantiles"), ("quantiles", "head")])
def test_a_card_that_names_another_head_is_refused(tmp_path, fitted, claimed):
    _, path = _saved(tmp_path, fitted)
    side = path.with_name(path.name + ".json")
    card = json.loads(side.read_text())
    card["class_head"] = claimed
    side.write_text(json.dumps(card))
    with pytest.raises(ModelError, match="class_head"):
        load_quantile_model(path)


def test_a_card_written_before_heads_reads_the_quantiles(tmp_path):
    _, path = _saved(tmp_path, "quantiles")
    side = path.with_name(path.name + ".json")
    card = json.loads(side.read_text())
    del card["class_head"]
    side.write_text(json.dumps(card))
    _, loaded = load_quantile_model(path)
    assert loaded.get("class_head", "quantiles") == "quantiles"
