"""rush's quantile predictor behind the runtime-predictor protocol (observe, fit, predict)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_predictor import RuntimeQuantilePredictor
from rush.models.runtime_quantiles_walkforward import WEEK
from tests.models.fixtures import UNIX_START, synthetic_workload


@dataclass
class Jobs:
    """The protocol's RuntimeJobs columns (rtcore's dataclass has the same names)."""

    job_id: np.ndarray
    user: np.ndarray
    submit: np.ndarray
    procs: np.ndarray
    requested_time: np.ndarray
    runtime: np.ndarray
    end: np.ndarray

    def take(self, rows) -> Jobs:
        return Jobs(*(getattr(self, f)[rows] for f in self.__dataclass_fields__))


def _drive(predictor: RuntimeQuantilePredictor, n: int = 700) -> tuple[np.ndarray, Jobs]:
    """The protocol's walk-forward: observe what ended before each submission, refit at
    week boundaries, predict each submission."""
    w = synthetic_workload(n)
    jobs = Jobs(np.arange(n), w.user, w.submit, w.procs, w.requested_time, w.runtime, w.submit + w.runtime)
    order = np.argsort(jobs.end, kind="stable")
    finished = jobs.take(order)
    out = np.empty(n)
    observed, epoch = 0, 0
    for j in range(n):
        seen = int(np.searchsorted(finished.end, jobs.submit[j], side="left"))
        if seen > observed:
            predictor.observe(finished.take(slice(observed, seen)))
            observed = seen
        week = int((jobs.submit[j] - jobs.submit[0]) // WEEK)
        if week > epoch:
            predictor.fit(finished.take(slice(0, observed)))
            epoch = week
        pending = jobs.take(slice(j, j + 1))
        pending.runtime = pending.end = np.full(1, np.nan)
        out[j] = predictor.predict(pending)[0]
    return out, jobs


def test_the_protocol_predicts_after_the_first_refit_within_the_request():
    predictor = RuntimeQuantilePredictor(
        regressor=RuntimeQuantileRegressor(max_iter=10), unix_start=UNIX_START, timezone="Europe/Stockholm"
    )
    predicted, jobs = _drive(predictor)
    first_week = jobs.submit < jobs.submit[0] + WEEK
    assert np.array_equal(predicted[first_week], jobs.requested_time[first_week])  # no model yet: the request
    later = predicted[~first_week]
    assert np.all(np.isfinite(later)) and np.all(later >= 0)
    assert np.all(later <= jobs.requested_time[~first_week] * (1 + 1e-9))
    # The two job shapes of the synthetic trace (10-300 s and 5,000-40,000 s) are told apart.
    short = jobs.runtime[~first_week] < 1000
    assert np.median(later[short]) < 1000 < np.median(later[~short])


def test_a_higher_quantile_predicts_longer_runs():
    low, _ = _drive(RuntimeQuantilePredictor(0.25, RuntimeQuantileRegressor(max_iter=10)), 400)
    high, _ = _drive(RuntimeQuantilePredictor(0.9, RuntimeQuantileRegressor(max_iter=10)), 400)
    assert np.all(high >= low)


@pytest.mark.parametrize("statistic", ["median", 1.5, 0.0])
def test_an_unknown_statistic_is_refused(statistic):
    with pytest.raises(ValueError, match="statistic"):
        RuntimeQuantilePredictor(statistic)


def test_registered_for_rush_simulate() -> None:
    """``rush simulate --runtime-prediction runtime-quantiles`` builds this predictor."""
    from rush.models.runtime_predictors import PREDICTORS, make_predictor
    from rush.models.runtime_quantiles_predictor import RuntimeQuantilePredictor

    assert "runtime-quantiles" in PREDICTORS
    assert isinstance(make_predictor("runtime-quantiles"), RuntimeQuantilePredictor)
