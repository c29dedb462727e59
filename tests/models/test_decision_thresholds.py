"""Two decisions from one classifier: jobs rush may kill (idempotent) and the others.

The walk-forward keeps each job's P(small), so a threshold is applied without refitting
(``at_threshold``), and the idempotent variant uses the classifier's idempotent threshold.
"""

from __future__ import annotations

import numpy as np
import pytest

from rush.errors import ModelError
from rush.models.runtime_class import RuntimeClassifier
from rush.models.walkforward import predict_classes_walkforward
from rush.studies.runtime_variants import variant_inputs
from tests.models.fixtures import kth, kth_trace


def boosting(**kw) -> RuntimeClassifier:
    return RuntimeClassifier(estimator="hgb", n_estimators=10, **kw)


def test_predict_for_judges_idempotent_jobs_at_their_own_threshold():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] + 0.8 * rng.normal(size=600) > 0).astype(int)
    model = boosting(threshold=0.5, idempotent_threshold=0.2).fit(X, y)
    p_small = model.predict_proba(X)[:, 0]
    idempotent = rng.random(600) < 0.5
    got = model.predict_for(X, idempotent)
    want = np.where(p_small >= np.where(idempotent, 0.2, 0.5), 0, 1)
    assert (got == want).all()
    # The lower threshold changes some decisions, and only to "small", only for idempotent jobs.
    plain = model.predict(X)
    changed = got != plain
    assert changed.any() and idempotent[changed].all() and (got[changed] == 0).all()
    # No flags, or no idempotent threshold: the plain decision.
    assert (model.predict_for(X) == plain).all()
    assert (boosting(threshold=0.5).fit(X, y).predict_for(X, idempotent) == plain).all()
    with pytest.raises(ValueError, match="idempotent flags"):
        model.predict_for(X, idempotent[:10])


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, float("nan")])
def test_an_idempotent_threshold_outside_0_1_is_refused(bad):
    with pytest.raises(ValueError, match="idempotent_threshold"):
        boosting(idempotent_threshold=bad).fit(np.zeros((4, 2)), [0, 1, 0, 1])


def test_walkforward_keeps_probabilities_and_rethresholds_without_refitting():
    kth_trace()
    w, header = kth(3000)
    wf = predict_classes_walkforward(
        w, header, mode="live", estimator=boosting(threshold=0.5, idempotent_threshold=0.2)
    )
    known = np.isfinite(wf.proba_small)
    assert known.any() and not known[wf.week == 0].any()  # week 1: no model, all large
    # The stored probabilities reproduce the plain decision exactly.
    assert (wf.at_threshold(0.5).predicted_class == wf.predicted_class).all()
    low = wf.at_threshold(0.2)
    assert (low.predicted_class[known] == np.where(wf.proba_small[known] >= 0.2, 0, 1)).all()
    assert (low.predicted_class[~known] == 1).all()
    assert (low.predicted_class <= wf.predicted_class).all() and low.summary()["recall"] > wf.summary()[
        "recall"
    ]
    # The idempotent variant takes the classifier's idempotent threshold; the plain one does not.
    assert (wf.for_idempotent().predicted_class == low.predicted_class).all()
    trace = kth_trace()
    idem, config, _ = variant_inputs("classification-idempotent", trace, w, walkforward=wf)
    plain, _, _ = variant_inputs("classification", trace, w, walkforward=wf)
    assert (idem.runtime_class == low.predicted_class).all() and config["kill_false_small"]
    assert (plain.runtime_class == wf.predicted_class).all()
    # A re-thresholded result is one decision for every job (it has no idempotent threshold left).
    assert low.for_idempotent() is low
    with pytest.raises(ModelError, match="not a probability"):
        wf.at_threshold(1.5)


def test_false_smalls_are_the_kills_of_the_decision_and_nan_without_a_model():
    """``false_small()``: 1 where the decision called a job small and it outran the divider in force
    (what the idempotent simulation kills), 0 otherwise, NaN in the weeks with no model."""
    w, header = kth(3000)
    wf = predict_classes_walkforward(
        w, header, mode="live", estimator=boosting(threshold=0.5, idempotent_threshold=0.2)
    )
    for decision in (wf, wf.for_idempotent()):
        fs = decision.false_small()
        no_model = ~np.isfinite(decision.divider)
        assert no_model.any() and np.all(np.isnan(fs[no_model]))
        decided = ~no_model
        expected = (decision.predicted_class == 0) & (decision.runtime > decision.divider)
        assert np.array_equal(fs[decided], expected[decided].astype(float))
    assert np.nansum(wf.for_idempotent().false_small()) > np.nansum(wf.false_small()) > 0
