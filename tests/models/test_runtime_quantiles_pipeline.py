"""The deployable runtime-quantile pipeline: card, verification before loading, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rush.errors import ModelError
from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_features import QuantileJobs
from rush.models.runtime_quantiles_pipeline import (
    fit_quantiles_on_history,
    load_quantile_model,
)
from tests.models.fixtures import HEADER, UNIX_START, saved_quantile_model, synthetic_workload


def _saved(tmp_path, queue: bool = True):
    w = synthetic_workload(500)
    if queue:
        w.extra["queue"] = (np.arange(len(w)) % 2).astype(np.int64)
    model, path = saved_quantile_model(tmp_path, w)
    return w, model, path


def _pending(w, n: int = 20) -> QuantileJobs:
    later = UNIX_START + w.submit[-1] + 86400 + np.arange(n) * 60.0
    return QuantileJobs(w.user[:n], w.procs[:n], w.requested_time[:n], later, queue=np.zeros(n, np.int64))


def test_a_saved_model_loads_and_predicts_the_same(tmp_path):
    w, model, path = _saved(tmp_path)
    loaded, card = load_quantile_model(path, fields=["app", "queue"])
    assert card["model"] == "runtime-quantiles" and card["fields"] == ["queue"]
    assert card["quantiles"] == [0.1, 0.25, 0.5, 0.75, 0.9]
    regressor = loaded.named_steps["regressor"]  # the card names the boosting size it was fitted with
    assert f"max_iter={regressor.max_iter}," in card["estimator"]
    assert f"max_leaf_nodes={regressor.max_leaf_nodes})" in card["estimator"]
    pending = _pending(w)
    X = loaded.named_steps["features"].transform(pending)
    q = loaded.named_steps["regressor"].predict_quantiles(X)
    assert np.array_equal(q, model.named_steps["regressor"].predict_quantiles(X))
    assert np.all(np.isfinite(q)) and np.all(q >= 0)
    proba = loaded.named_steps["regressor"].predict_proba(X)
    assert np.allclose(proba.sum(axis=1), 1.0)


def test_a_card_that_does_not_match_the_model_is_refused(tmp_path):
    _, _, path = _saved(tmp_path)
    side = path.with_name(path.name + ".json")
    card = json.loads(side.read_text())
    card["divider"] = card["divider"] * 2
    side.write_text(json.dumps(card))
    with pytest.raises(ModelError, match="disagree on divider"):
        load_quantile_model(path)


def test_a_card_with_other_features_is_refused(tmp_path):
    _, _, path = _saved(tmp_path)
    side = path.with_name(path.name + ".json")
    card = json.loads(side.read_text())
    card["features"] = card["features"][:-1]
    side.write_text(json.dumps(card))
    with pytest.raises(ModelError, match="features"):
        load_quantile_model(path)


def test_jobs_without_a_field_the_model_was_trained_with_are_refused(tmp_path):
    _, _, path = _saved(tmp_path)
    with pytest.raises(ModelError, match="queue") as err:
        load_quantile_model(path, fields=["app"])
    assert err.value.where.endswith("fields")


def test_a_swapped_model_file_is_refused(tmp_path):
    _, _, path = _saved(tmp_path)
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(ModelError, match="sha256"):
        load_quantile_model(path)


def test_a_trace_without_usable_runtimes_is_a_clear_error():
    w = synthetic_workload(50)
    w.runtime[:] = np.nan
    with pytest.raises(ModelError, match="usable runtime"):
        fit_quantiles_on_history(w, HEADER, RuntimeQuantileRegressor(max_iter=5))
