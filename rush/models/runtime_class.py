"""The small/large runtime classifier, scikit-learn style.

``RuntimeClassifier(estimator=None, n_estimators=50, max_depth=12, min_samples_leaf=10,
max_samples=5000, random_state=0, n_jobs=1, threshold=None, idempotent_threshold=None)``: a
RandomForest by default; any
scikit-learn classifier (or a name from :data:`ESTIMATORS`) may be passed as ``estimator``.
``threshold``: predict the first class (0, small) when its probability is at least this
(binary problems; None: the estimator's own ``predict``); ``idempotent_threshold``: the
same for jobs rush may kill at the divider and requeue as large (:meth:`predict_for`), for
which a false "small" costs only that kill. The defaults of ``rush train`` and the
experiment (:data:`SMALL_THRESHOLD` 0.5, :data:`IDEMPOTENT_THRESHOLD` 0.1) were chosen on
development traces (``rush.models.decision_thresholds``).
``max_samples`` caps each tree's bootstrap sample, so weekly retraining on hundreds of
thousands of finished jobs stays fast: on KTH-SP2 these defaults classify as well as
50 unbounded-sample depth-16 trees (accuracy 0.831 vs 0.826, weekly walk-forward) at less than
half the cost; shallow trees also keep live prediction of 10,000 jobs within budget. Classes:
0 small (runtime <= divider), 1 large, in practice; as a scikit-learn classifier it takes any
labels (``classes_`` from :func:`~sklearn.utils.multiclass.unique_labels`), validates its input,
raises ``NotFittedError`` before ``fit`` and does not change during ``predict`` (it passes
``check_estimator``; tests/models/test_estimator_checks.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.multiclass import check_classification_targets, unique_labels
from sklearn.utils.validation import check_is_fitted

from rush.errors import ModelError
from rush.models.trees import CompiledTrees, compile_trees

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data
except ImportError:  # pragma: no cover - older scikit-learn

    def validate_data(estimator, X, y="no_validation", reset=True, **kwargs):
        return estimator._validate_data(X, y, reset=reset, **kwargs)


SMALL, LARGE = 0, 1
# Where the decision thresholds are chosen, and why (re-exported for callers).
from rush.models.decision_thresholds import IDEMPOTENT_THRESHOLD, SMALL_THRESHOLD  # noqa: E402, F401


def _extra_trees(n_estimators: int, random_state: int | None) -> Any:
    from sklearn.ensemble import ExtraTreesClassifier

    return ExtraTreesClassifier(
        n_estimators=n_estimators, min_samples_leaf=2, random_state=random_state, n_jobs=1
    )


def _hist_gradient_boosting(n_estimators: int, random_state: int | None) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    # scikit-learn's defaults (log loss: probabilities for the threshold), without early
    # stopping: its random validation split would make weekly refits depend on the draw.
    return HistGradientBoostingClassifier(
        max_iter=n_estimators, early_stopping=False, random_state=random_state
    )


def _logistic(n_estimators: int, random_state: int | None) -> Any:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=500, random_state=random_state))


# ``--estimator`` names; "rf" is the RuntimeClassifier's own forest (with its caps).
ESTIMATORS: dict[str, Callable[[int, int | None], Any] | None] = {
    "rf": None,
    "extra-trees": _extra_trees,
    "hgb": _hist_gradient_boosting,
    "logreg": _logistic,
}


def make_estimator(name: str, n_estimators: int = 50, random_state: int | None = 0) -> Any:
    """A scikit-learn classifier by name, or None for the default forest."""
    if name not in ESTIMATORS:
        raise ModelError(
            f"unknown estimator {name!r}", where="--estimator", fix=f"use one of: {', '.join(ESTIMATORS)}"
        )
    factory = ESTIMATORS[name]
    return None if factory is None else factory(n_estimators, random_state)


class RuntimeClassifier(ClassifierMixin, BaseEstimator):
    def __init__(
        self,
        estimator: Any = None,
        n_estimators: int = 50,
        max_depth: int | None = 12,
        min_samples_leaf: int = 10,
        max_samples: int | None = 5_000,
        random_state: int | None = 0,
        n_jobs: int = 1,
        threshold: float | None = None,
        idempotent_threshold: float | None = None,
    ) -> None:
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.max_samples = max_samples
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.threshold = threshold
        self.idempotent_threshold = idempotent_threshold

    def _make(self, n_samples: int) -> Any:
        if isinstance(self.estimator, str):
            made = make_estimator(self.estimator, self.n_estimators, self.random_state)
            if made is not None:
                return made
        elif self.estimator is not None:
            return clone(self.estimator)
        from sklearn.ensemble import RandomForestClassifier

        cap = self.max_samples if self.max_samples and self.max_samples < n_samples else None
        return RandomForestClassifier(
            n_estimators=self.n_estimators,
            max_depth=self.max_depth,
            min_samples_leaf=self.min_samples_leaf,
            max_samples=cap,
            random_state=self.random_state,
            n_jobs=self.n_jobs,
        )

    def fit(self, X: np.ndarray, y: np.ndarray) -> RuntimeClassifier:
        for name in ("threshold", "idempotent_threshold"):
            value = getattr(self, name)
            if value is not None and not (0.0 < float(value) < 1.0):
                raise ValueError(f"{name} {value!r} is not a probability in (0, 1)")
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_ = unique_labels(y)
        encoded = np.searchsorted(self.classes_, y)
        if len(self.classes_) < 2:
            # One class only (e.g. an early week): predict it, with certainty.
            self.model_ = None
        else:
            self.model_ = self._make(len(y)).fit(X, encoded)
        self._compile()
        return self

    def _compile(self) -> None:
        # Built at fit (and after unpickling), never during predict: predict changes nothing.
        self.compiled_: CompiledTrees | None = None
        if self.model_ is not None:
            self.compiled_ = compile_trees(self.model_)
        if self.compiled_ is not None:
            self.compiled_.warm()

    def _model_proba(self, X: np.ndarray) -> np.ndarray:
        """The fitted model's probabilities over its (encoded) classes: compiled, bit-equal to
        its own ``predict_proba`` (rush.models.trees), when it is a supported tree ensemble."""
        compiled = getattr(self, "compiled_", None)
        return compiled.predict_proba(X) if compiled is not None else self.model_.predict_proba(X)

    def _validated(self, X: np.ndarray) -> np.ndarray:
        check_is_fitted(self)
        return validate_data(self, X, reset=False, dtype=np.float64)

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        X = self._validated(X)
        n = len(X)
        if self.model_ is None:
            return np.ones((n, 1))
        if not hasattr(self.model_, "predict_proba"):
            proba = np.zeros((n, len(self.classes_)))
            proba[np.arange(n), self.model_.predict(X).astype(np.int64)] = 1.0
            return proba
        raw = self._model_proba(X)
        proba = np.zeros((n, len(self.classes_)))
        proba[:, np.asarray(self.model_.classes_, dtype=np.int64)] = raw
        return proba

    def predict(self, X: np.ndarray) -> np.ndarray:
        X = self._validated(X)
        if self.model_ is None:
            return np.full(len(X), self.classes_[0], dtype=self.classes_.dtype)
        threshold = getattr(self, "threshold", None)  # models saved before it existed
        if threshold is not None and len(self.classes_) == 2 and hasattr(self.model_, "predict_proba"):
            # model_ was fitted on encoded labels: its column 0 is classes_[0]
            p_first = self._model_proba(X)[:, 0]
            return self.classes_.take(np.where(p_first >= threshold, 0, 1))
        compiled = getattr(self, "compiled_", None)
        if compiled is not None:  # the model's own predict, compiled
            return self.classes_.take(
                np.asarray(self.model_.classes_, dtype=np.int64)[compiled.predict_index(X)]
            )
        return self.classes_.take(np.asarray(self.model_.predict(X), dtype=np.int64))

    def predict_for(self, X: np.ndarray, idempotent: np.ndarray | None = None) -> np.ndarray:
        """:meth:`predict`, with each idempotent job judged at ``idempotent_threshold``: a
        false "small" costs such a job a kill at the divider and a requeue as large, not a
        large job in the small queue, so it may be called small on weaker evidence."""
        idem_threshold = getattr(self, "idempotent_threshold", None)  # models saved before it
        if idempotent is None or idem_threshold is None or not np.any(idempotent):
            return self.predict(X)
        X = self._validated(X)
        idempotent = np.asarray(idempotent, dtype=bool).reshape(-1)
        if len(idempotent) != len(X):
            raise ValueError(f"{len(idempotent)} idempotent flags for {len(X)} rows")
        if self.model_ is None or len(self.classes_) != 2 or not hasattr(self.model_, "predict_proba"):
            return self.predict(X)
        p_first = self._model_proba(X)[:, 0]
        plain = getattr(self, "threshold", None)
        threshold = np.where(idempotent, float(idem_threshold), 0.5 if plain is None else float(plain))
        return self.classes_.take(np.where(p_first >= threshold, 0, 1))

    def __getstate__(self) -> dict:
        state = dict(super().__getstate__())
        state.pop("compiled_", None)  # plain arrays, rebuilt on load: keeps the file half the size
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if "model_" in self.__dict__:
            self._compile()

    @property
    def feature_importances_(self) -> np.ndarray | None:
        """The fitted model's importances (None for a constant week or a model without them)."""
        model = getattr(self, "model_", None)
        return getattr(model, "feature_importances_", None)
