"""Class probabilities of the exported tree models without scikit-learn's per-call overhead.

``pipeline.predict_proba`` validates its input once per tree (about 2 ms per tree on a loaded
2-core machine: 200 ms for 100 AdaBoost stumps), while the trees themselves answer in
microseconds. :func:`fast_proba` evaluates the pipeline's preprocessing once, then the trees'
own arrays (``tree_.predict``), and combines them as scikit-learn does (forests: the mean of
the trees' class fractions; AdaBoost SAMME: the weighted votes, then the softmax of eq. 15 of
Zhu et al.). It is only used after :func:`verified` has found it equal to ``predict_proba`` on
test rows for the loaded model (scikit-learn's minor version is pinned by the model card);
otherwise, and for KNN, the pipeline's own predict_proba is used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Proba = Callable[[np.ndarray], np.ndarray]


def _tree_proba(tree: Any, X32: np.ndarray) -> np.ndarray:
    return tree.tree_.predict(X32)[:, : tree.n_classes_]


def _forest(model: Any) -> Proba:
    trees = list(model.estimators_)

    def proba(X32: np.ndarray) -> np.ndarray:
        total = sum(_tree_proba(t, X32) for t in trees)
        return total / len(trees)

    return proba


def _adaboost(model: Any) -> Proba:
    classes = model.classes_
    k = len(classes)
    pairs = list(zip(model.estimators_, model.estimator_weights_, strict=False))
    weight_sum = float(np.sum(model.estimator_weights_))

    def proba(X32: np.ndarray) -> np.ndarray:
        votes = np.zeros((len(X32), k))
        for tree, w in pairs:
            predicted = tree.classes_.take(np.argmax(_tree_proba(tree, X32), axis=1))
            votes += np.where((predicted == classes[:, None]).T, w, -1 / (k - 1) * w)
        votes /= weight_sum
        if k == 2:
            votes[:, 0] *= -1
            decision = votes.sum(axis=1)
            decision = np.vstack([-decision, decision]).T / 2
        else:
            decision = votes / (k - 1)
        decision = decision - decision.max(axis=1, keepdims=True)
        e = np.exp(decision)
        return e / e.sum(axis=1, keepdims=True)

    return proba


def fast_proba(pipeline: Any) -> Proba | None:
    """A direct evaluator of ``pipeline.predict_proba`` for forests and AdaBoost, else None."""
    model = pipeline[-1] if hasattr(pipeline, "steps") else pipeline
    kind = type(model).__name__
    if kind in ("RandomForestClassifier", "ExtraTreesClassifier"):
        final = _forest(model)
    elif kind == "AdaBoostClassifier" and len(model.classes_) >= 2:
        final = _adaboost(model)
    else:
        return None
    steps = [step for _, step in pipeline.steps[:-1]] if hasattr(pipeline, "steps") else []
    prepare = _numpy_steps(steps)

    def proba(X: np.ndarray) -> np.ndarray:
        return final(np.ascontiguousarray(prepare(np.asarray(X, dtype=np.float64)), dtype=np.float32))

    return proba


def _numpy_steps(steps: list[Any]) -> Callable[[np.ndarray], np.ndarray]:
    """The imputer (NaN -> its statistics) and scaler in numpy; other steps through transform()."""
    funcs: list[Callable[[np.ndarray], np.ndarray]] = []
    for step in steps:
        kind = type(step).__name__
        if (
            kind == "SimpleImputer"
            and not step.add_indicator
            and isinstance(step.missing_values, float)
            and np.isnan(step.missing_values)
            and len(step.statistics_) == step.n_features_in_
        ):
            fill = np.asarray(step.statistics_, dtype=np.float64)
            funcs.append(lambda X, fill=fill: np.where(np.isnan(X), fill, X))
        elif kind == "StandardScaler":
            mean = step.mean_ if step.with_mean else 0.0
            scale = step.scale_ if step.with_std else 1.0
            funcs.append(lambda X, mean=mean, scale=scale: (X - mean) / scale)
        else:
            funcs.append(step.transform)

    def run(X: np.ndarray) -> np.ndarray:
        for f in funcs:
            X = f(X)
        return X

    return run


def verified(
    pipeline: Any, n_features: int, reference_rows: np.ndarray | None = None, seed: int = 0
) -> Proba:
    """The fast evaluator when it matches ``predict_proba`` on test rows, else ``predict_proba``."""
    fast = fast_proba(pipeline)
    if fast is None:
        return pipeline.predict_proba
    rng = np.random.default_rng(seed)
    rows = [rng.normal(size=(16, n_features)), rng.exponential(1e6, size=(16, n_features))]
    if reference_rows is not None and len(reference_rows):
        rows.append(np.asarray(reference_rows, dtype=float).reshape(-1, n_features))
    nan_rows = rng.normal(size=(4, n_features))
    nan_rows[:, ::2] = np.nan
    rows.append(nan_rows)
    X = np.vstack(rows)
    try:
        if np.allclose(fast(X), pipeline.predict_proba(X), rtol=1e-9, atol=1e-12):
            return fast
    except Exception:  # an internal layout this version does not have: use the pipeline
        pass
    return pipeline.predict_proba
