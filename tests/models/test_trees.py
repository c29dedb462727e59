"""rush.models.trees: the compiled evaluator gives scikit-learn's own probabilities and predictions,
bit for bit, for every model type it accepts, with missing values, serial, parallel and threaded."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import sklearn
from packaging.version import Version
from sklearn.datasets import make_classification
from sklearn.ensemble import (
    AdaBoostClassifier,
    ExtraTreesClassifier,
    GradientBoostingClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from threadpoolctl import threadpool_limits

from rush.models import trees
from rush.models.trees import compile_trees, pipeline_proba, verified_proba

# The range pinned in pyproject.toml. The evaluator reads scikit-learn's fitted internals
# (tree_, _predictors, _loss): on an upgrade, run this module on the new version and widen
# the pin (and this range) only if it passes.
CHECKED = (Version("1.9"), Version("1.10"))


@pytest.fixture(autouse=True)
def one_openmp_thread():
    # scikit-learn's boosting spins OpenMP threads per call: slow on a shared 2-core machine.
    with threadpool_limits(1, user_api="openmp"):
        yield


def test_scikit_learn_is_in_the_checked_range():
    installed = Version(sklearn.__version__)
    assert CHECKED[0] <= installed < CHECKED[1], (
        f"scikit-learn {installed} is outside the range rush.models.trees was checked on "
        f"({CHECKED[0]} <= v < {CHECKED[1]}): run tests/models/test_trees.py on it and update the "
        "pin in pyproject.toml and CHECKED here"
    )


def data(n_classes: int, rows: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X, y = make_classification(
        rows, 8, n_informative=5, n_classes=n_classes, n_clusters_per_class=1, random_state=seed
    )
    X[:, 3] *= 1e6  # a wide-ranged feature: thresholds far from the float32 grid of small values
    rng = np.random.default_rng(seed)
    test = X[rng.permutation(len(X))] + rng.normal(scale=0.1, size=X.shape)
    return X, y, test


def with_nan(X: np.ndarray) -> np.ndarray:
    X = X.copy()
    X[::5, 1] = np.nan
    X[::7, 3] = np.nan
    return X


MODELS = {
    "random-forest": lambda: RandomForestClassifier(30, max_depth=12, min_samples_leaf=3, random_state=0),
    "random-forest-full-depth": lambda: RandomForestClassifier(10, random_state=1),
    "extra-trees": lambda: ExtraTreesClassifier(30, min_samples_leaf=2, random_state=0),
    "hist-gradient-boosting": lambda: HistGradientBoostingClassifier(
        max_iter=40, early_stopping=False, random_state=0
    ),
    "adaboost": lambda: AdaBoostClassifier(n_estimators=60, random_state=0),
}
NATIVE_NAN = ("random-forest", "random-forest-full-depth", "extra-trees", "hist-gradient-boosting")


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", list(MODELS))
def test_probabilities_and_predictions_equal_scikit_learn(name, n_classes):
    X, y, test = data(n_classes)
    train = with_nan(X) if name in NATIVE_NAN else X  # trained with missing values too
    for fit_X in (X, train):
        model = MODELS[name]().fit(fit_X, y)
        compiled = compile_trees(model)
        assert compiled is not None
        inputs = [test, test[:5], test[:1]] + ([with_nan(test)] if name in NATIVE_NAN else [])
        for rows in inputs:
            np.testing.assert_array_equal(compiled.predict_proba(rows), model.predict_proba(rows))
            np.testing.assert_array_equal(model.classes_[compiled.predict_index(rows)], model.predict(rows))


def test_adaboost_refuses_missing_values_as_scikit_learn_does():
    X, y, test = data(3)
    model = AdaBoostClassifier(n_estimators=10, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        model.predict_proba(with_nan(test))
    with pytest.raises(ValueError, match="NaN"):
        compile_trees(model).predict_proba(with_nan(test))


def test_variability_pipeline_adaboost_three_classes_with_missing_values():
    # As rush.models.variability.train builds it: median imputer, then the 3-class model.
    X, y, test = data(3)
    for model in (
        AdaBoostClassifier(n_estimators=100, random_state=0),
        RandomForestClassifier(50, random_state=0),
    ):
        pipeline = Pipeline(
            [("impute", SimpleImputer(strategy="median", keep_empty_features=True)), ("model", model)]
        ).fit(with_nan(X), y)
        proba = pipeline_proba(pipeline)
        assert proba is not None
        for rows in (test, with_nan(test)):
            np.testing.assert_array_equal(proba(rows), pipeline.predict_proba(rows))
        assert verified_proba(pipeline, X.shape[1]) == proba or np.array_equal(
            verified_proba(pipeline, X.shape[1])(test), pipeline.predict_proba(test)
        )


def test_unsupported_models_are_left_to_scikit_learn():
    X, y, test = data(2, rows=400)
    for model in (
        LogisticRegression(max_iter=300),
        GradientBoostingClassifier(n_estimators=5),
        HistGradientBoostingClassifier(max_iter=5, categorical_features=[0]).fit(
            np.column_stack([np.abs(X[:, 0]).astype(int) % 4, X[:, 1:]]), y
        ),
    ):
        if not hasattr(model, "classes_"):
            model.fit(X, y)
        assert compile_trees(model) is None
    pipeline = Pipeline([("impute", SimpleImputer()), ("model", LogisticRegression())]).fit(X, y)
    assert pipeline_proba(pipeline) is None
    assert verified_proba(pipeline, X.shape[1]) == pipeline.predict_proba


@pytest.mark.parametrize("name", ["random-forest", "hist-gradient-boosting"])
def test_parallel_serial_and_threaded_sums_are_equal(name):
    X, y, _ = data(2)
    model = MODELS[name]().fit(X, y)
    compiled = compile_trees(model)
    rows = np.vstack([with_nan(X)] * 2)
    assert len(rows) >= trees.PARALLEL_ROWS  # the parallel kernel
    expected = model.predict_proba(rows)
    np.testing.assert_array_equal(compiled.predict_proba(rows), expected)
    with trees.PARALLEL:  # another thread holds the parallel kernel: the serial one
        np.testing.assert_array_equal(compiled.predict_proba(rows), expected)
    results: list[np.ndarray] = []
    threads = [
        threading.Thread(target=lambda: results.append(compiled.predict_proba(rows))) for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3 and all(np.array_equal(r, expected) for r in results)


def test_regressors_compile_to_one_pass_equal_to_their_predictions():
    # The runtime-quantile models (and any identity-link boosting regressors) as the columns
    # of one compiled pass: each column bit-equal to that model's own predict, NaN rows too;
    # a log-link regressor (Poisson) is left to scikit-learn.
    from sklearn.ensemble import HistGradientBoostingRegressor

    X, _, _ = data(2)  # 3,000 rows: past PARALLEL_ROWS
    y = X[:, 0] * 3 + np.random.default_rng(1).normal(size=len(X))
    X = with_nan(X)
    models = [
        *(
            HistGradientBoostingRegressor(loss="quantile", quantile=q, max_iter=15).fit(X, y)
            for q in (0.1, 0.9)
        ),
        HistGradientBoostingRegressor(max_iter=10).fit(X, y),
        HistGradientBoostingRegressor(loss="absolute_error", max_iter=10).fit(X, y),
    ]
    compiled = trees.compile_regressors(models)
    assert compiled is not None
    for rows in (X[:100], X):  # the serial and the parallel kernels
        raw = compiled.raw(rows)
        for k, model in enumerate(models):
            np.testing.assert_array_equal(raw[:, k], model.predict(rows))
    poisson = HistGradientBoostingRegressor(loss="poisson", max_iter=3).fit(X, np.abs(y))
    assert trees.compile_regressors([models[0], poisson]) is None
