"""Rule D live: the planner's runtime predictor keeps each user's residuals (completed jobs that
had quantiles) and publishes the quantiles shifted by the user's drift; bad history never gives a
NaN or negative estimate; a user with little history falls back to (most of) the model's own."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.runtime_drift import DRIFT_PRIOR_JOBS, drift_residual, quantile_median
from rush.planner.runtime_prediction import load_runtime_predictor
from rush.rjms.base import RJMSJob
from tests.models.fixtures import saved_quantile_model, synthetic_workload

HOUR = 3600.0


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return saved_quantile_model(tmp_path_factory.mktemp("model"), synthetic_workload(500))[1]


def job(job_id: int, state: str, submit: float, start: float | None = None, user: str = "alice") -> RJMSJob:
    return RJMSJob(
        job_id=job_id, state=state, submit=submit, start=start, procs=8, requested_time=HOUR, user=user
    )


def predictor(model_path, drift: bool = True):
    live = load_runtime_predictor("runtime-quantiles", model_path, None)
    live.drift = drift
    return live


def run_and_finish(live, job_id: int, at: float, runtime_of_median) -> float:
    """Predict a job of alice's, start it, end it after ``runtime_of_median(its median)``; the
    residual rule D should record."""
    pending = job(job_id, "PENDING", at)
    live.predict_new([pending])
    q = live.quantiles[job_id]
    median = quantile_median(q.levels, q.seconds)
    running = job(job_id, "RUNNING", at, at + 1.0)
    runtime = runtime_of_median(median)
    live.observe_finished([(running, at + 1.0 + runtime)])
    return drift_residual(runtime, median, HOUR)


def test_a_user_whose_jobs_ran_long_gets_the_next_jobs_quantiles_shifted_up(model_path):
    live = predictor(model_path)
    residuals = [run_and_finish(live, k, 1000.0 * k, lambda m: 3.0 * m) for k in range(1, 9)]
    assert all(r > 0.5 for r in residuals)
    waiting = job(99, "PENDING", 20_000.0)
    live.predict_new([waiting])
    raw = live.quantiles[99]
    shifted = live.runtime_quantiles([waiting])[99]
    factor = math.exp(len(residuals) / (len(residuals) + DRIFT_PRIOR_JOBS) * float(np.median(residuals)))
    assert factor > 1.5
    assert shifted.levels == raw.levels
    assert shifted.seconds == pytest.approx(tuple(s * factor for s in raw.seconds))
    # Another user's jobs keep the model's own quantiles.
    other = job(100, "PENDING", 20_000.0, user="bob")
    live.predict_new([other])
    assert live.runtime_quantiles([other])[100] == live.quantiles[100]
    # With the rule off, the model's own.
    live.drift = False
    assert live.runtime_quantiles([waiting])[99] == raw


def test_a_running_job_keeps_the_shift_it_started_with_a_pending_one_follows_its_user(model_path):
    live = predictor(model_path)
    run_and_finish(live, 1, 1000.0, lambda m: 3.0 * m)
    started = job(50, "PENDING", 1500.0)
    waiting = job(51, "PENDING", 1500.0)
    live.predict_new([started, waiting])
    live.predict_new([job(50, "RUNNING", 1500.0, 1600.0)])
    before = live.runtime_quantiles([started, waiting])
    run_and_finish(live, 2, 2000.0, lambda m: 3.0 * m)
    live.predict_new([job(50, "RUNNING", 1500.0, 1600.0), waiting])  # alice finished a job: predicted again
    after = live.runtime_quantiles([started, waiting])
    assert after[50] == before[50]
    assert after[51].seconds[2] > before[51].seconds[2]


def test_a_user_with_one_job_falls_back_to_a_fifth_of_its_residual(model_path):
    live = predictor(model_path)
    residual = run_and_finish(live, 1, 1000.0, lambda m: 4.0 * m)
    waiting = job(99, "PENDING", 5000.0)
    live.predict_new([waiting])
    raw, shifted = live.quantiles[99], live.runtime_quantiles([waiting])[99]
    factor = math.exp(residual / (1 + DRIFT_PRIOR_JOBS))
    assert shifted.seconds == pytest.approx(tuple(s * factor for s in raw.seconds))


@pytest.mark.parametrize(
    "runtime_of_median",
    [
        lambda m: math.nan,  # an unreadable end
        lambda m: 0.0,  # ended at once
        lambda m: 1e15,  # absurd: far past the limit
        lambda m: -50.0,  # ended before it started
        lambda m: math.inf,
    ],
)
def test_bad_history_never_gives_a_nan_or_negative_quantile(model_path, runtime_of_median):
    live = predictor(model_path)
    for k in range(1, 4):
        run_and_finish(live, k, 1000.0 * k, runtime_of_median)
    for residuals in live.residuals.values():
        assert all(math.isfinite(r) for r in residuals)
    waiting = job(99, "PENDING", 9000.0)
    live.predict_new([waiting])
    shifted = live.runtime_quantiles([waiting])[99]
    assert all(math.isfinite(s) and s >= 0.0 for s in shifted.seconds)
    assert math.isfinite(live.shift[99])
    estimate, _ = live.estimates([waiting])[99]
    assert math.isfinite(estimate) and 0.0 < estimate <= HOUR


def test_the_refuted_rule_is_off_by_default_and_keeps_no_record(model_path):
    live = load_runtime_predictor("runtime-quantiles", model_path, None)
    assert live.drift is False
    for k in range(1, 9):
        run_and_finish(live, k, 1000.0 * k, lambda m: 3.0 * m)
    waiting = job(99, "PENDING", 20_000.0)
    live.predict_new([waiting])
    assert live.residuals == {} and live.shift == {}
    assert live.runtime_quantiles([waiting]) == live.model_quantiles([waiting]) == {99: live.quantiles[99]}


# -- rule D2 (round 15, post hoc; off by default) ------------------------------------------


def d2_predictor(model_path):
    live = predictor(model_path)
    live.drift_length = True
    return live


def test_a_seeded_user_gets_a_shift_before_any_completion_and_the_length_not_the_quantiles(model_path):
    from rush.planner.snapshot_builder import user_id

    live = d2_predictor(model_path)
    live.seed_residuals({user_id("alice"): [1.0] * 8, user_id("bob"): []})
    waiting = job(99, "PENDING", 20_000.0)
    live.predict_new([waiting])
    published = live.runtime_quantiles([waiting])[99]
    assert published.seconds == live.quantiles[99].seconds  # the quantiles stay the model's
    assert published.projection_shift == pytest.approx(8 / (8 + DRIFT_PRIOR_JOBS) * 1.0)
    # A running job's quantiles are shifted (its conditional median, as rule D): no length there.
    live.predict_new([job(99, "RUNNING", 20_000.0, 20_010.0)])
    running = live.runtime_quantiles([job(99, "RUNNING", 20_000.0, 20_010.0)])[99]
    assert running.projection_shift == 0.0
    assert running.seconds[2] > live.quantiles[99].seconds[2]
    # A user with no seed (bob's is empty) keeps the model's own.
    other = job(100, "PENDING", 20_000.0, user="bob")
    live.predict_new([other])
    assert live.runtime_quantiles([other])[100].projection_shift == 0.0


def test_the_window_completions_follow_the_seed_and_only_the_last_jobs_count(model_path):
    from rush.planner.snapshot_builder import user_id

    live = d2_predictor(model_path)
    live.seed_residuals({user_id("alice"): [-1.0] * 8})
    for k in range(1, 9):  # eight completions that ran 3x their median push the seed out
        run_and_finish(live, k, 1000.0 * k, lambda m: 3.0 * m)
    assert all(r > 0.5 for r in live.residuals[user_id("alice")])


@pytest.mark.parametrize("seed", [[math.nan, math.inf, -math.inf], [5.0], []])
def test_a_bad_or_one_job_seed_never_gives_a_nan_or_negative_estimate(model_path, seed):
    from rush.core.remaining_runtime import queued_projection_runtimes
    from rush.core.snapshot import PendingJob
    from rush.planner.snapshot_builder import user_id

    live = d2_predictor(model_path)
    live.seed_residuals({user_id("alice"): seed})
    waiting = job(99, "PENDING", 9000.0)
    live.predict_new([waiting])
    assert math.isfinite(live.shift[99])
    q = live.runtime_quantiles([waiting])[99]
    estimate, _ = live.estimates([waiting])[99]
    out, _ = queued_projection_runtimes(
        [PendingJob(99, 9000.0, 8, HOUR, estimate, runtime_quantiles=q)], np.array([estimate])
    )
    assert math.isfinite(out[0]) and 1.0 <= out[0] <= HOUR


def test_rule_d2_is_off_by_default(model_path):
    live = load_runtime_predictor("runtime-quantiles", model_path, None)
    assert live.drift is False and live.drift_length is False
    waiting = job(99, "PENDING", 20_000.0)
    live.predict_new([waiting])
    assert live.runtime_quantiles([waiting])[99].projection_shift == 0.0
