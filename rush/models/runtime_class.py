"""The small/large runtime classifier, scikit-learn style.

``RuntimeClassifier(estimator=None, n_estimators=30, max_depth=14, max_samples=20000,
random_state=0)``: a RandomForest by default (any scikit-learn classifier may be passed
as ``estimator``). ``max_samples`` caps each tree's bootstrap sample so weekly retraining
on hundreds of thousands of finished jobs stays fast. Classes: 0 small, 1 large.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.ensemble import RandomForestClassifier

SMALL, LARGE = 0, 1


class RuntimeClassifier(ClassifierMixin, BaseEstimator):
    def __init__(
        self,
        estimator=None,
        n_estimators: int = 30,
        max_depth: int | None = 14,
        max_samples: int | None = 20_000,
        random_state: int | None = 0,
    ) -> None:
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.max_samples = max_samples
        self.random_state = random_state

    def _make(self, n_samples: int):
        if self.estimator is not None:
            return clone(self.estimator)
        cap = self.max_samples if self.max_samples and self.max_samples < n_samples else None
        return RandomForestClassifier(
            n_estimators=self.n_estimators,
            max_depth=self.max_depth,
            max_samples=cap,
            random_state=self.random_state,
            n_jobs=1,
        )

    def fit(self, X: np.ndarray, y: np.ndarray) -> RuntimeClassifier:
        y = np.asarray(y)
        self.classes_ = np.array([SMALL, LARGE])
        present = np.unique(y)
        if len(present) < 2:
            # One class only (e.g. an early week): predict it, with certainty.
            self.constant_ = int(present[0]) if len(present) else LARGE
            self.model_ = None
            return self
        self.constant_ = None
        self.model_ = self._make(len(y)).fit(X, y)
        return self

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        n = len(X)
        if self.model_ is None:
            proba = np.zeros((n, 2))
            proba[:, self.constant_] = 1.0
            return proba
        raw = self.model_.predict_proba(X)
        proba = np.zeros((n, 2))
        for k, label in enumerate(self.model_.classes_):
            proba[:, int(label)] = raw[:, k]
        return proba

    def predict(self, X: np.ndarray) -> np.ndarray:
        if self.model_ is None:
            return np.full(len(X), self.constant_, dtype=np.int64)
        return self.model_.predict(X).astype(np.int64)

    @property
    def feature_importances_(self) -> np.ndarray | None:
        model = getattr(self, "model_", None)
        return getattr(model, "feature_importances_", None)
