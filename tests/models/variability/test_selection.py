"""Model selection both ways (stratified k-fold, the paper's; leave one application out), RFE over
the whole set, and the flag threshold chosen on held-out start decisions, on the small synthetic
campaign (tests/models/variability/synth.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rush.errors import ConfigError
from rush.models.variability.train import (
    TrainOptions,
    at_threshold,
    best_f1_threshold,
    kfolds,
    train_variability,
)
from tests.models.variability.conftest import FAST


@pytest.fixture(scope="module")
def whole(dataset):
    """RFE over the whole set (the default), chosen by k-fold."""
    return train_variability(dataset, replace(FAST, final_scope="best"))


def test_kfolds_are_stratified_and_cover_every_run_once():
    y = np.array([1] * 10 + [0] * 40)
    splits = kfolds(y, 5, seed=3)
    assert len(splits) == 5
    tested = np.concatenate([test for _, _, test in splits])
    assert sorted(tested.tolist()) == list(range(50))
    for _, train, test in splits:
        assert y[test].sum() == 2 and len(test) == 10  # the imbalance kept in every fold
        assert not set(train.tolist()) & set(test.tolist())
    assert [n for n, _, _ in kfolds(np.array([1, 1, 0, 0, 0, 0]), 5)] == ["fold0", "fold1"]  # k <= positives


def test_cv_table_reports_both_ways(whole, dataset):
    apps = sorted(set(dataset.apps.tolist()))
    for row in whole.cv_table:
        assert sorted(row["per_app"]) == apps  # leave one application out
        assert sorted(row["per_fold"]) == [f"fold{k}" for k in range(5)]  # stratified k-fold
        assert row["kfold_mean_f1"] == pytest.approx(np.mean(list(row["per_fold"].values())))
        assert row["mean_f1"] == pytest.approx(np.mean(list(row["per_app"].values())))
        assert row["selected_by"] == "kfold_mean_f1"
    chosen = next(r for r in whole.cv_table if r["model"] == whole.model_kind)
    assert chosen["kfold_mean_f1"] == max(r["kfold_mean_f1"] for r in whole.cv_table)
    # every application is in every k-fold training part: the known-applications figure is higher
    assert chosen["kfold_mean_f1"] > 0.8
    for row in whole.scope_table:  # under the selection protocol
        assert row["protocol"] == "kfold" and sorted(row["per_fold"]) == [f"fold{k}" for k in range(5)]
    assert whole.card["selection"] == "kfold" and "k-fold" in whole.card["chosen_by"]


def test_loao_selection_chooses_by_the_held_out_applications(dataset):
    loao = train_variability(dataset, replace(FAST, selection="loao", final_scope="best"))
    chosen = next(r for r in loao.cv_table if r["model"] == loao.model_kind)
    assert chosen["mean_f1"] == max(r["mean_f1"] for r in loao.cv_table)
    assert all(r["selected_by"] == "mean_f1" for r in loao.cv_table)
    assert loao.card["flag_threshold_table"]["protocol"] == "loao"
    assert set(loao.rfe_curve[0]["per_fold"]) == set(dataset.apps.tolist())


def test_rfe_runs_over_the_whole_set(whole, dataset):
    assert whole.rfe_curve[0]["features"] == len(dataset.feature_names)
    best = max(c["mean_f1"] for c in whole.rfe_curve)
    kept = next(c for c in whole.rfe_curve if c["features"] == len(whole.features))
    assert kept["mean_f1"] == pytest.approx(best)
    assert whole.card["scope"] in ("job", "all", "both")
    assert "whole feature set" in whole.card["scope_reason"]


def test_best_f1_threshold_on_constructed_scores():
    positive = np.array([1, 1, 1, 0, 0, 0])
    score = np.array([0.9, 0.8, 0.3, 0.5, 0.2, 0.1])
    best = best_f1_threshold(positive, score)
    # 0.3 flags the three positives and one negative: F1 6/7, above 0.8's 4/5
    assert best["threshold"] == 0.3 and best["held_out_f1"] == pytest.approx(6 / 7)
    assert (best["precision"], best["recall"]) == (0.75, 1.0)
    assert at_threshold(positive, score, 0.8) == pytest.approx(
        {"f1": 0.8, "precision": 1.0, "recall": 2 / 3, "flagged_share": 2 / 6}
    )


def test_threshold_is_chosen_on_held_out_start_decisions(whole, dataset):
    table = whole.card["flag_threshold_table"]
    assert table["protocol"] == "kfold" and table["decisions"] == len(dataset)
    assert whole.card["flag_threshold"] == table["threshold"]
    assert table["held_out_f1"] >= table["argmax_f1"]
    assert set(table["other_protocol"]) == {"f1", "precision", "recall", "flagged_share"}
    assert "start decision" in table["chosen_by"]


@pytest.mark.parametrize(
    "options", [TrainOptions(selection="cv"), TrainOptions(k_folds=1), TrainOptions(k_folds=99)]
)
def test_bad_selection_options(options, dataset):
    with pytest.raises(ConfigError):
        train_variability(dataset, options)
