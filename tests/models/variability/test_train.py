"""Training: leave-one-application-out selection, RFE, the 3-class model, its card; bad datasets."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from rush.errors import ConfigError, ModelError
from rush.models.trees import pipeline_proba, verified_proba
from rush.models.variability.dataset import Dataset, DatasetError
from rush.models.variability.features import is_placement
from rush.models.variability.train import TrainOptions, folds, load_variability_model, train_variability
from tests.models.variability.conftest import FAST


def test_cv_table_holds_out_each_application(trained, dataset):
    apps = sorted(set(dataset.apps.tolist()))
    assert [r["model"] for r in trained.cv_table] == ["adaboost", "extra_trees"]
    for row in trained.cv_table:
        assert sorted(row["per_app"]) == apps
        assert row["mean_f1"] == pytest.approx(np.mean(list(row["per_app"].values())))
        assert sorted(row["positive_rate"]) == apps
    held = [(a, set(dataset.apps[test])) for a, _, test in folds(dataset.apps)]
    assert all(seen == {a} for a, seen in held)  # each fold tests one application only
    assert {a for a, train, _ in folds(dataset.apps) if a in set(dataset.apps[train])} == set()


def test_the_chosen_model_beats_chance(trained, dataset):
    """A counter carries the label: the held-out F1 is far above always answering 'variation'."""
    chosen = next(r for r in trained.cv_table if r["model"] == trained.model_kind)
    p = dataset.y_binary.mean()
    always_yes = 2 * p / (1 + p)  # F1 of flagging every run
    assert chosen["pooled_f1"] > always_yes + 0.3, (chosen, always_yes)
    assert chosen["kfold_mean_f1"] == max(
        r["kfold_mean_f1"] for r in trained.cv_table
    )  # the paper's protocol


def test_rfe_curve_and_chosen_features(trained):
    sizes = [c["features"] for c in trained.rfe_curve]
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] == 1
    best = max(c["mean_f1"] for c in trained.rfe_curve)
    chosen = next(c for c in trained.rfe_curve if c["features"] == len(trained.features))
    assert chosen["mean_f1"] == pytest.approx(best)
    assert all(
        not f.startswith(("job_", "probe_")) or is_placement(f) for f in trained.features
    )  # scope all, no probe
    assert any("ib_xmit" in f for f in trained.features), trained.features


def test_scope_table_compares_job_and_all(trained):
    assert [r["scope"] for r in trained.scope_table] == ["job", "all", "both"]
    assert trained.card["scope"] == "all" and trained.card["scope_reason"] == "chosen: all"


def test_card_and_verified_load(trained, model_file, dataset):
    model, card = load_variability_model(model_file)
    assert card["features"] == trained.features and card["estimator"] == trained.model_kind
    assert card["class_names"][0] == "none" and "variation" in card["class_names"]
    assert card["generator"] == {"seed": 1, "command": "tests/models/variability/synth.py seed=1"}
    assert card["window"] == 300.0 and len(card["data_sha256"]) == 64
    assert card["cv_table"] == json.loads(json.dumps(trained.cv_table))
    assert {"rush", "numpy", "scikit-learn"} <= set(card["versions"])
    X = dataset.X[:, [dataset.feature_names.index(f) for f in card["features"]]]
    assert (model.predict(X) == trained.pipeline.predict(X)).all()


def test_tampered_model_file_is_refused(model_file, tmp_path):
    bad = tmp_path / "m.joblib"
    bad.write_bytes(model_file.read_bytes() + b"\0")
    (tmp_path / "m.joblib.json").write_text((model_file.parent / "variability.joblib.json").read_text())
    with pytest.raises(ModelError, match="sha256 mismatch"):
        load_variability_model(bad)
    card = json.loads((tmp_path / "m.joblib.json").read_text())
    (tmp_path / "m.joblib.json").write_text(json.dumps(card | {"window": -5}))
    with pytest.raises(ModelError, match="window"):
        load_variability_model(bad)
    (tmp_path / "m.joblib.json").unlink()
    with pytest.raises(ModelError, match="card"):
        load_variability_model(bad)


def test_fast_probabilities_equal_the_pipeline(trained, dataset):
    X = dataset.X[:, [dataset.feature_names.index(f) for f in trained.features]]
    compiled = pipeline_proba(trained.pipeline)
    assert compiled is not None
    np.testing.assert_array_equal(compiled(X), trained.pipeline.predict_proba(X))
    np.testing.assert_array_equal(verified_proba(trained.pipeline, X.shape[1])(X), compiled(X))


def test_one_application_cannot_be_cross_validated(dataset):
    one = replace(dataset, apps=np.array(["halo"] * len(dataset), dtype=object))
    with pytest.raises(DatasetError, match="one application") as info:
        train_variability(one, FAST)
    assert "two or more applications" in info.value.fix


def test_all_nan_windows_are_a_clear_error(dataset):
    X = dataset.X.copy()
    X[:, [i for i, n in enumerate(dataset.feature_names) if not n.startswith("wtype_")]] = np.nan
    with pytest.raises(DatasetError, match="all-NaN"):
        train_variability(replace(dataset, X=X), FAST)


def test_no_variation_is_a_clear_error(dataset):
    flat = replace(dataset, y_binary=np.zeros(len(dataset), dtype=np.int64))
    with pytest.raises(DatasetError, match="no variation to learn"):
        train_variability(flat, FAST)


def test_too_few_runs(dataset):
    tiny = Dataset(
        dataset.X[:3], dataset.feature_names, dataset.y_binary[:3], dataset.y_class[:3], dataset.apps[:3],
        dataset.wtypes[:3], dataset.job_ids[:3], {},
    )  # fmt: skip
    with pytest.raises(DatasetError, match="too few"):
        train_variability(tiny, FAST)


@pytest.mark.parametrize(
    "options",
    [
        TrainOptions(seed=-1),
        TrainOptions(seed=2**40),
        TrainOptions(models=("svm",)),
        TrainOptions(models=()),
        TrainOptions(n_estimators=0),
        TrainOptions(n_estimators=10**9),
        TrainOptions(rfe_step=0.0),
        TrainOptions(rfe_step=float("nan")),
        TrainOptions(rfe_step=1.5),
        TrainOptions(final_scope="pod"),
        TrainOptions(variation_classes=("huge",)),
        TrainOptions(exclude=("counters",)),
    ],
)
def test_bad_options(options, dataset):
    with pytest.raises(ConfigError):
        train_variability(dataset, options)


def test_a_fold_whose_training_part_has_one_class(dataset):
    """Every positive run in one application: its fold trains on negatives only (a constant
    model), and the table still has that application."""
    y = np.zeros(len(dataset), dtype=np.int64)
    first = dataset.apps == dataset.apps[0]
    y[np.flatnonzero(first)[:3]] = 1
    result = train_variability(replace(dataset, y_binary=y, y_class=y * 2), FAST)
    assert result.cv_table[0]["per_app"][dataset.apps[0]] == 0.0


def test_a_one_class_training_fold_predicts_that_class():
    from rush.models.variability.train import fit, importances

    X = np.arange(12.0).reshape(6, 2)
    model = fit(lambda n: pytest.fail("no estimator can learn from one class"), X, np.ones(6, dtype=np.int64))
    assert model.predict(X[:3]).tolist() == [1, 1, 1]
    assert importances(model, 2).tolist() == [0.0, 0.0]  # it ranks no feature above another


def test_folds_hold_out_each_application_in_sorted_order():
    apps = np.array(["b", "a", "b", "c", "a"], dtype=object)
    got = [(app, train.tolist(), test.tolist()) for app, train, test in folds(apps)]
    assert got == [("a", [0, 2, 3], [1, 4]), ("b", [1, 3, 4], [0, 2]), ("c", [0, 1, 2, 4], [3])]


def test_flag_threshold_is_chosen_on_held_out_probabilities(trained, model_file):
    """The card's flag threshold: the point of the precision-recall curve of the
    leave-one-application-out probabilities with the best F1 (never worse than the most probable
    class rule on the same held-out data)."""
    table = trained.card["flag_threshold_table"]
    assert 0.0 <= trained.card["flag_threshold"] <= 1.0
    assert table["threshold"] == trained.card["flag_threshold"]
    assert table["held_out_f1"] >= table["argmax_f1"]
    assert table["held_out_f1"] == pytest.approx(
        2 * table["precision"] * table["recall"] / (table["precision"] + table["recall"])
    )
    _, card = load_variability_model(model_file)
    assert card["flag_threshold"] == trained.card["flag_threshold"]


def test_a_flag_threshold_outside_0_1_is_refused(model_file, tmp_path):
    import shutil

    copy = tmp_path / model_file.name  # the session's model file stays untouched
    shutil.copy(model_file, copy)
    card = json.loads(model_file.with_name(model_file.name + ".json").read_text())
    card["flag_threshold"] = 1.5
    copy.with_name(copy.name + ".json").write_text(json.dumps(card))
    with pytest.raises(ModelError, match="flag_threshold"):
        load_variability_model(copy)
