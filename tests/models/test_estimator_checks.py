"""RuntimeClassifier is a conformant scikit-learn classifier: every ``check_estimator`` check
passes (NotFittedError before fit, input validation, ``classes_`` from the labels, predict
leaves the object unchanged, pickling, any label type). No exemptions."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from rush.models.runtime_class import RuntimeClassifier


@parametrize_with_checks(
    [
        RuntimeClassifier(n_estimators=5),
        RuntimeClassifier(estimator="logreg"),
        RuntimeClassifier(estimator="hgb", n_estimators=10, threshold=1 / 3),
    ]
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


def test_the_defects_that_were_found():
    X = np.random.default_rng(0).random((60, 3))
    with pytest.raises(NotFittedError):
        RuntimeClassifier().predict(X)
    model = RuntimeClassifier(n_estimators=5).fit(X, np.where(X[:, 0] > 0.5, "large", "small"))
    assert model.classes_.tolist() == ["large", "small"]  # from the labels, not hard-coded
    before = dict(model.__dict__)
    assert set(model.predict(X)) <= {"large", "small"}
    assert model.__dict__.keys() == before.keys() and all(model.__dict__[k] is before[k] for k in before)
    with pytest.raises(ValueError, match="NaN"):
        model.predict(np.full((1, 3), np.nan))
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])
