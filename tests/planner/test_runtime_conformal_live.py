"""Rule C live: the planner's runtime predictor keeps the PITs of completed jobs (all users) and,
only when asked, publishes every job's quantiles at the levels they map to; bad history never
gives a NaN, negative or out-of-range quantile; off by default."""

from __future__ import annotations

import math

import pytest

from rush.core.runtime_conformal import CONFORMAL_JOBS, conformal_levels
from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_pipeline import fit_quantiles_on_history, save_quantile_model
from rush.planner.runtime_prediction import load_runtime_predictor
from rush.rjms.base import RJMSJob
from tests.models.fixtures import HEADER, synthetic_workload

HOUR = 3600.0


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "quantiles.joblib"
    model, metadata = fit_quantiles_on_history(
        synthetic_workload(500), HEADER, RuntimeQuantileRegressor(max_iter=10)
    )
    save_quantile_model(model, metadata, path)
    return path


def job(job_id: int, state: str, submit: float, start: float | None = None, user: str = "alice") -> RJMSJob:
    return RJMSJob(
        job_id=job_id, state=state, submit=submit, start=start, procs=8, requested_time=HOUR, user=user
    )


def run_and_finish(live, job_id: int, at: float, runtime: float, user: str = "alice") -> None:
    live.predict_new([job(job_id, "PENDING", at, user=user)])
    live.observe_finished([(job(job_id, "RUNNING", at, at + 1.0, user=user), at + 1.0 + runtime)])


def test_jobs_that_ran_to_their_request_raise_another_users_quantiles(model_path):
    live = load_runtime_predictor("runtime-quantiles", model_path, None)
    live.conformal = True
    for k in range(1, 21):
        run_and_finish(live, k, 1000.0 * k, HOUR)  # every one ran to its request: PIT 1
    assert live.pits == pytest.approx([1.0] * 20)
    waiting = job(99, "PENDING", 30_000.0, user="bob")  # a user with no completion
    live.predict_new([waiting])
    raw = live.quantiles[99]
    published = live.runtime_quantiles([waiting])[99]
    assert live.level_map[99] == pytest.approx(tuple(conformal_levels([1.0] * 20, raw.levels)))
    assert all(b > a for a, b in zip(raw.seconds, published.seconds, strict=True))
    assert max(published.seconds) <= HOUR
    live.conformal = False
    assert live.runtime_quantiles([waiting])[99] == raw


def test_the_rule_is_off_by_default_and_keeps_no_record(model_path):
    live = load_runtime_predictor("runtime-quantiles", model_path, None)
    assert live.conformal is False
    run_and_finish(live, 1, 1000.0, HOUR)
    waiting = job(2, "PENDING", 5000.0)
    live.predict_new([waiting])
    assert live.pits == [] and live.level_map == {}
    assert live.runtime_quantiles([waiting])[2] == live.quantiles[2]


@pytest.mark.parametrize("runtime", [math.nan, math.inf, -50.0, 0.0, 1e12])
def test_bad_history_never_gives_a_nan_negative_or_out_of_range_quantile(model_path, runtime):
    live = load_runtime_predictor("runtime-quantiles", model_path, None)
    live.conformal = True
    run_and_finish(live, 1, 1000.0, runtime)  # a one-job history
    assert len(live.pits) <= 1 and all(0.0 <= p <= 1.0 for p in live.pits)
    waiting = job(2, "PENDING", 5000.0)
    live.predict_new([waiting])
    q = live.runtime_quantiles([waiting])[2]
    assert all(math.isfinite(s) and 0.0 <= s <= HOUR for s in q.seconds)


def test_only_the_last_completions_count_and_a_running_job_keeps_its_map(model_path):
    live = load_runtime_predictor("runtime-quantiles", model_path, None)
    live.conformal = True
    live.predict_new([job(500, "RUNNING", 10.0, 11.0, user="carol")])
    started = live.level_map[500]
    assert started == pytest.approx(live.quantiles[500].levels)  # no completion yet
    for k in range(1, CONFORMAL_JOBS + 11):  # carol's own completions: her jobs are predicted again
        run_and_finish(live, k, 100.0 * k, HOUR, user="carol")
    assert len(live.pits) == CONFORMAL_JOBS
    live.predict_new([job(500, "RUNNING", 10.0, 11.0, user="carol")])
    assert live.level_map[500] == started
