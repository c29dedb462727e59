"""rush's quantile predictor behind the runtime-predictor protocol (observe, fit, predict)."""

from __future__ import annotations

import numpy as np
import pytest

from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_predictor import RuntimeQuantilePredictor
from rush.models.runtime_quantiles_walkforward import WEEK
from tests.models.fixtures import UNIX_START, drive_quantile_predictor


def test_the_protocol_predicts_after_the_first_refit_within_the_request():
    predictor = RuntimeQuantilePredictor(
        regressor=RuntimeQuantileRegressor(max_iter=10), unix_start=UNIX_START, timezone="Europe/Stockholm"
    )
    predicted, jobs = drive_quantile_predictor(predictor)
    first_week = jobs.submit < jobs.submit[0] + WEEK
    assert np.array_equal(predicted[first_week], jobs.requested_time[first_week])  # no model yet: the request
    later = predicted[~first_week]
    assert np.all(np.isfinite(later)) and np.all(later >= 0)
    assert np.all(later <= jobs.requested_time[~first_week] * (1 + 1e-9))
    # The two job shapes of the synthetic trace (10-300 s and 5,000-40,000 s) are told apart.
    short = jobs.runtime[~first_week] < 1000
    assert np.median(later[short]) < 1000 < np.median(later[~short])


def test_a_higher_quantile_predicts_longer_runs():
    low, _ = drive_quantile_predictor(
        RuntimeQuantilePredictor(0.25, RuntimeQuantileRegressor(max_iter=10)), 400
    )
    high, _ = drive_quantile_predictor(
        RuntimeQuantilePredictor(0.9, RuntimeQuantileRegressor(max_iter=10)), 400
    )
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
