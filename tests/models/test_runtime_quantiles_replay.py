"""The runtime-quantile walk-forward on a replay's starts and ends (issue 29, round 27)."""

from __future__ import annotations

import numpy as np
import pytest

from rush.errors import ModelError
from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_features import FEATURES
from rush.models.runtime_quantiles_walkforward import (
    WEEK,
    ReplaySchedule,
    predict_quantiles_walkforward,
    walkforward_inputs,
)
from tests.models.fixtures import HEADER, SMALL_QUANTILE_MODEL, synthetic_workload

FITTED: list[np.ndarray] = []  # the training runtimes of every fit, in order


class RecordingRegressor(RuntimeQuantileRegressor):
    """The quantile model, recording what each week's fit was given."""

    def fit(self, X, y):
        FITTED.append(np.asarray(y, dtype=np.float64).copy())
        return super().fit(X, y)


def _replayed(n: int = 700):
    """A workload with distinct runtimes and a replay that ran every job days late, one job
    ending exactly at week 1's start (strictly before is required: it must not train week 1)."""
    w = synthetic_workload(n)
    w.runtime = w.runtime + np.arange(n) * 1e-3  # distinct: a training runtime names its job
    start = w.submit + np.linspace(0, 3 * 86400, n)
    end = start + w.runtime
    week_1 = w.submit[0] + WEEK  # weeks count from the first submission
    on_boundary = int(np.flatnonzero(w.submit < week_1 - 86400)[-1])
    end[on_boundary] = week_1
    start[on_boundary] = min(start[on_boundary], week_1 - w.runtime[on_boundary])
    return w, start, end


def test_each_week_trains_on_the_jobs_the_replay_ended_strictly_before_it() -> None:
    w, start, end = _replayed()
    FITTED.clear()
    wf = predict_quantiles_walkforward(
        w, HEADER, RecordingRegressor(**SMALL_QUANTILE_MODEL), schedule=ReplaySchedule(start, end)
    )
    weeks = [r for r in wf.weekly if r["trained_on"]]
    assert len(FITTED) == len(weeks) >= 2
    runtime = np.minimum(w.runtime, w.requested_time)
    for report, y in zip(weeks, FITTED, strict=True):
        ended = end < report["start"] - float(HEADER["UnixStartTime"])
        assert np.array_equal(np.sort(y), np.sort(runtime[ended])), report["week"]
    # The log (no waits) would have trained week 1 on other jobs: the replay's times were read.
    FITTED.clear()
    predict_quantiles_walkforward(w, HEADER, RecordingRegressor(**SMALL_QUANTILE_MODEL))
    assert len(FITTED[0]) != len(np.flatnonzero(end < w.submit[0] + WEEK))


def test_history_features_and_the_queue_state_read_the_replays_times() -> None:
    w, start, end = _replayed()
    n = len(w)
    log = walkforward_inputs(w, HEADER)[1]
    replay = walkforward_inputs(w, HEADER, schedule=ReplaySchedule(start, end))[1]
    pending = FEATURES.index("user_pending")
    count = FEATURES.index("log_count_user")
    # Days of waiting: more of a user's jobs wait at each submission, fewer have finished.
    assert (replay[:, pending] >= log[:, pending]).all() and (replay[:, pending] > log[:, pending]).any()
    assert (replay[:, count] <= log[:, count]).all() and (replay[:, count] < log[:, count]).any()
    # Only the replayed rows move: NaN keeps a job's logged times.
    keep = np.full(n, np.nan)
    partial = walkforward_inputs(w, HEADER, schedule=ReplaySchedule(keep, keep.copy()))[1]
    assert np.array_equal(partial, log)


def test_a_memoised_fit_is_the_fit_and_unchanged_weeks_are_not_refitted() -> None:
    w, start, end = _replayed(600)
    model = RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL)
    schedule = ReplaySchedule(start, end)
    first = predict_quantiles_walkforward(w, HEADER, model, schedule=schedule)
    assert all(r["refitted"] for r in first.weekly if r["trained_on"])
    again = predict_quantiles_walkforward(
        w, HEADER, model, schedule=ReplaySchedule(start, end, schedule.fits)
    )
    assert not any(r.get("refitted") for r in again.weekly)
    assert np.array_equal(first.quantiles, again.quantiles)
    assert np.array_equal(first.proba_small, again.proba_small, equal_nan=True)
    # A change in the last week only: the earlier weeks come from the memo.
    late = w.submit >= w.submit[0] + 2 * WEEK
    moved = end.copy()
    moved[late] += 3600.0
    third = predict_quantiles_walkforward(
        w, HEADER, model, schedule=ReplaySchedule(start, moved, schedule.fits)
    )
    assert [r["refitted"] for r in third.weekly if r["trained_on"]] == [False, True]


@pytest.mark.parametrize(
    "change",
    ["short", "end_before_start", "nan_end_only"],
)
def test_a_replay_schedule_that_does_not_fit_the_jobs_is_refused(change: str) -> None:
    w, start, end = _replayed(300)
    if change == "short":
        start, end = start[:-1], end[:-1]
    elif change == "end_before_start":
        end = end.copy()
        end[5] = start[5] - 1.0
    else:
        end = end.copy()
        end[7] = np.nan
    with pytest.raises(ModelError, match="replay"):
        predict_quantiles_walkforward(
            w, HEADER, RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL), schedule=ReplaySchedule(start, end)
        )
