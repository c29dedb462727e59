"""The online treatment of rush's quantile predictor: the fixed point sigma = SIM(WF(sigma))
(issue 29, round 27; ``rush.studies.runtime_quantiles_online``)."""

from __future__ import annotations

import numpy as np
import pytest

from rush.models.runtime_quantiles_walkforward import WEEK, ReplaySchedule, predict_quantiles_walkforward
from rush.models.walkforward import published_job_set
from rush.simulator.engine import simulate
from rush.studies.runtime_predictions_quantiles import RowOptions, quantile_rows, scheduler_run_inputs
from rush.studies.runtime_quantiles_online import (
    OnlineSetup,
    WalkForwardTimes,
    input_changes,
    online_iterates,
    replay_schedule,
    times_of,
    within_factor_two,
)
from tests.models.fixtures import HEADER, synthetic_workload


def _setup(n: int = 900) -> tuple[OnlineSetup, object]:
    w = synthetic_workload(n)
    w.machine_procs = 64  # a queue forms, so the replay's starts are not the log's
    return OnlineSetup(
        "synthetic", w, HEADER, "rush-Q", RowOptions(names=("rush-Q",))
    ), predict_quantiles_walkforward(w, HEADER)


def test_the_first_iterate_is_the_log_history_run_and_the_last_is_a_fixed_point() -> None:
    setup, log_wf = _setup()
    runs = list(online_iterates(setup, log_wf, 4))
    committed = quantile_rows(
        "synthetic", "published", setup.workload_full, log_wf, RowOptions(names=("rush-Q",))
    )
    assert runs[0]["improvement_over_easy_fcfs_pct"] == committed[0]["improvement_over_easy_fcfs_pct"]
    # The replay's schedule is not the log's (zero waits): the first online walk-forward moves.
    assert runs[1]["from_previous_rows_differ"] > 0 and not runs[1]["from_previous_converged"]
    last = runs[-1]
    assert last["stopped"] == "converged" and last["check_converged"] and last["check_exact_share"] == 1.0
    # The fixed point: the walk-forward of the last run's own schedule predicts what it ran on.
    rows = setup.rows
    wf = log_wf
    for _ in runs[1:]:
        inputs, config = scheduler_run_inputs("rush-Q", wf, rows, setup.options)
        result = simulate(published_job_set(setup.workload_full), config, inputs)
        wf = predict_quantiles_walkforward(
            setup.workload_full, HEADER, schedule=replay_schedule(result, rows, len(setup.workload_full))
        )
    inputs, config = scheduler_run_inputs("rush-Q", wf, rows, setup.options)
    result = simulate(published_job_set(setup.workload_full), config, inputs)
    again = predict_quantiles_walkforward(
        setup.workload_full, HEADER, schedule=replay_schedule(result, rows, len(setup.workload_full))
    )
    assert np.array_equal(again.quantiles, wf.quantiles)
    assert np.array_equal(again.calibrated_mean(), wf.calibrated_mean())


def test_a_replay_fills_only_the_rows_it_ran() -> None:
    setup, log_wf = _setup(400)
    rows = setup.rows[::2]
    w = setup.workload_full
    result = simulate(
        published_job_set(w), *reversed(scheduler_run_inputs("rush-Q", log_wf, setup.rows, setup.options))
    )
    half = type(result)(
        **{
            **result.__dict__,
            "start": result.start[::2],
            "end": result.end[::2],
            "job_id": result.job_id[::2],
        }
    )
    schedule = replay_schedule(half, rows, len(w))
    assert np.array_equal(schedule.end[rows], result.end[::2])
    others = np.setdiff1d(np.arange(len(w)), rows)
    assert np.isnan(schedule.start[others]).all() and np.isnan(schedule.end[others]).all()


def test_input_changes_name_the_first_job_and_the_weeks_whose_model_moves() -> None:
    setup, log_wf = _setup(600)
    same = times_of(setup, None, log_wf)
    assert np.array_equal(same.features, log_wf.features)
    assert input_changes(log_wf, same)["converged"]
    week = ((log_wf.submit - log_wf.submit[0]) // WEEK).astype(int)
    # One job's features change (it is predicted differently, and it trains the later weeks).
    j = int(np.flatnonzero(week == 1)[10])
    features = log_wf.features.copy()
    features[j, 0] += 1.0
    moved = WalkForwardTimes(features, log_wf.end, log_wf.submit, log_wf.max_train_jobs)
    change = input_changes(log_wf, moved)
    assert change["rows_differ"] == 1 and change["first_job"] == j and change["first_week"] == 1
    assert change["weeks_differ"] == sum(
        1 for k in range(1, week[-1] + 1) if log_wf.end[j] < log_wf.submit[0] + WEEK * k
    )
    # An end moved across week 2's start changes week 2's model from its first job on.
    i = int(
        np.flatnonzero((week == 1) & np.isfinite(log_wf.end) & (log_wf.end < log_wf.submit[0] + 2 * WEEK))[0]
    )
    end = log_wf.end.copy()
    end[i] = log_wf.submit[0] + 2 * WEEK + 1.0
    change = input_changes(
        log_wf, WalkForwardTimes(log_wf.features, end, log_wf.submit, log_wf.max_train_jobs)
    )
    assert change["rows_differ"] == 0 and change["first_week"] == 2
    assert change["first_job"] == int(np.flatnonzero(week == 2)[0])
    assert not change["converged"] and change["exact_share"] < 1.0


def test_a_memo_of_fits_is_kept_by_the_schedule_across_iterations() -> None:
    setup, log_wf = _setup(500)
    fits: dict = {}
    rows = setup.rows
    inputs, config = scheduler_run_inputs("rush-Q", log_wf, rows, setup.options)
    result = simulate(published_job_set(setup.workload_full), config, inputs)
    schedule = replay_schedule(result, rows, len(setup.workload_full), fits)
    assert isinstance(schedule, ReplaySchedule) and schedule.fits is fits
    predict_quantiles_walkforward(setup.workload_full, HEADER, schedule=schedule)
    assert len(fits) == sum(1 for r in log_wf.weekly if r["trained_on"])


def test_the_full_job_set_replays_every_job_and_starts_from_the_full_sets_run() -> None:
    w = synthetic_workload(600)
    w.machine_procs = 64
    w.runtime[::7] = 0.0  # logged without a runtime: in the full set only
    w.runtime[3::11] = w.requested_time[3::11]  # ran to the limit: in the full set only
    log_wf = predict_quantiles_walkforward(w, HEADER)
    options = RowOptions(names=("rush-Q",))
    full = OnlineSetup("synthetic", w, HEADER, "rush-Q", options, "full")
    published = OnlineSetup("synthetic", w, HEADER, "rush-Q", options)
    assert np.array_equal(full.rows, np.arange(len(w))) and full.workload is w
    assert len(published.rows) == len(published.workload) < len(w)
    runs = list(online_iterates(full, log_wf, 1))
    committed = quantile_rows("synthetic", "full", w, log_wf, options)[0]
    assert runs[0]["job_set"] == "full" and runs[0]["jobs"] == len(w)
    assert runs[0]["improvement_over_easy_fcfs_pct"] == committed["improvement_over_easy_fcfs_pct"]
    assert runs[-1]["jobs"] == len(w) and runs[-1]["stopped"] == "cap"
    # A zero runtime has no ratio: left out of the factor-2 share, not counted as a miss.
    positive = full.rows[w.runtime[full.rows] > 0]
    assert within_factor_two(log_wf, full.rows) == within_factor_two(log_wf, positive)
    with pytest.raises(ValueError, match="job set"):
        OnlineSetup("synthetic", w, HEADER, "rush-Q", options, "all")
