"""Round 10's class rules of the runtime-prediction study (``estimates/class_session.py``): the
session columns, the fresh same-script outcome and the per-band thresholds read only what is
known at a job's submission (or a week's start)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from rush.models.runtime_quantiles_features import REQUEST_COLUMN
from tests.script_module import load_script

FOLDER = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions" / "estimates"


def _script():
    return load_script(FOLDER / "class_session.py", "class_session")


def _jobs(user, submit, start, procs, request):
    return SimpleNamespace(
        user=np.asarray(user, dtype=np.int64),
        submit=np.asarray(submit, dtype=np.float64),
        start=np.asarray(start, dtype=np.float64),
        procs=np.asarray(procs, dtype=np.int64),
        requested_time=np.asarray(request, dtype=np.float64),
    )


def test_session_columns_read_the_users_past_submissions_and_their_state_at_submit() -> None:
    s = _script()
    # user 1: a job running at the second's submit, one pending at the third's, a burst broken
    # by a long gap; user 2 has one job (no history)
    jobs = _jobs(
        [1, 1, 2, 1, 1], [0, 100, 200, 5000, 5300], [0, 2000, 200, 5000, 5300], [4, 4, 1, 4, 8], [1000] * 5
    )
    end = np.array([500.0, 3000.0, 250.0, np.inf, 9000.0])
    c = s.session_columns(jobs, end)
    assert c[0].tolist() == [0.0, 0.0, 0.0, -1.0, s.NONE, -1.0]
    assert c[2].tolist() == [0.0, 0.0, 0.0, -1.0, s.NONE, -1.0]
    # second job: one submit in the hour (4 x 1000 s), second of its burst, same script, the
    # previous job running for 100 s of its 1000
    assert np.allclose(c[1], [np.log(2), np.log1p(4000.0), 1.0, 1.0, s.RUNNING, 0.1])
    # fourth: a new burst after a 4,900 s gap; the previous job (submitted at 100) finished
    assert np.allclose(c[3], [0.0, 0.0, 0.0, 1.0, s.FINISHED, 1.0])
    # fifth: a job with no known end (inf) is running; another script (8 processors)
    assert np.allclose(c[4], [np.log(2), np.log1p(4000.0), 1.0, 0.0, s.RUNNING, 0.3])
    # a previous job not yet started at the submission is pending, with no ratio
    pending = s.session_columns(_jobs([1, 1], [0, 10], [50, 60], [1, 1], [100, 100]), np.array([80.0, 90.0]))
    assert pending[1, 4] == s.PENDING and pending[1, 5] == -1.0
    # changing a later job (its end, start, size) changes no earlier row
    later = _jobs(
        [1, 1, 2, 1, 1], [0, 100, 200, 5000, 5300], [0, 2000, 200, 5000, 9999], [4, 4, 1, 4, 64], [1000] * 5
    )
    again = s.session_columns(later, np.array([500.0, 3000.0, 250.0, np.inf, 1e6]))
    assert np.array_equal(c[:4], again[:4])


def test_fresh_outcome_is_a_same_script_job_ended_within_the_window_before_submit() -> None:
    s = _script()
    jobs = _jobs(
        [1, 1, 1, 1, 2, 1], [0, 100, 2000, 9000, 2000, 2100], [0] * 6, [4, 4, 4, 4, 4, 2], [1000] * 6
    )
    end = np.array([500.0, 1900.0, np.inf, 9500.0, 3000.0, 2150.0])
    runtime = np.array([500.0, 1800.0, 0.0, 500.0, 1000.0, 7.0])
    last, found = s.fresh_outcome(jobs, end, runtime)
    # the third job sees the second (ended at 1,900, 100 s before); the second does not see the
    # first (still running at 100); the fourth's last same-script end is 7,100 s old; another
    # user's or another script's outcome is not the job's
    assert found.tolist() == [False, False, True, False, False, False]
    assert last[2] == 1800.0 and np.isnan(last[[0, 1, 3, 4, 5]]).all()
    # a job that ends exactly at the submission is not yet known
    _, at_submit = s.fresh_outcome(
        _jobs([1, 1], [0, 100], [0, 0], [1, 1], [50, 50]), np.array([100.0, 200.0]), np.ones(2)
    )
    assert not at_submit.any()


def test_band_thresholds_use_only_jobs_ended_before_the_week() -> None:
    s = _script()
    rng = np.random.default_rng(3)
    n = 3000
    week = 7 * 86400.0
    submit = np.sort(rng.uniform(0, 10 * week, n))
    runtime = rng.lognormal(6, 2, n)
    end = submit + runtime
    request = runtime * rng.uniform(1, 40, n)
    divider = np.full(n, 400.0)
    proba = np.clip(1 / (1 + runtime / 400) + rng.normal(0, 0.2, n), 0, 1)
    proba[submit < week] = np.nan  # week 0 has no model
    first = s.band_thresholds(proba, runtime, divider, end, submit, request)
    assert np.all((first > 0) & (first < 1))
    # the last week's outcomes change no earlier week's threshold
    late = submit >= 9 * week
    moved = s.band_thresholds(proba, np.where(late, 1e9, runtime), divider, end, submit, request)
    assert np.array_equal(first[~late], moved[~late])
    # with fewer than MIN_BAND_JOBS judged jobs in a band, it takes the global threshold
    from rush.models.runtime_quantiles_walkforward import walkforward_thresholds

    overall = walkforward_thresholds(proba, runtime, divider, end, submit)
    spread = np.arange(n) % 20 == 0  # 150 jobs over the whole trace keep their requests
    tiny = np.where(spread, request, np.minimum(request, 4 * 400.0))
    banded = s.band_thresholds(proba, runtime, divider, end, submit, tiny)
    rare = s.band_of(tiny, divider) > 0
    assert rare.sum() > 50 and np.isfinite(proba[rare]).sum() < s.MIN_BAND_JOBS
    assert np.array_equal(banded[rare], overall[rare])
    assert not np.array_equal(banded[~rare], overall[~rare])  # band 0 has its own threshold


def test_stacked_columns_are_the_quantiles_against_the_divider_and_nan_without_a_model() -> None:
    s = _script()
    levels = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    quantiles = np.tile([10.0, 50.0, 100.0, 500.0, 900.0], (3, 1))
    features = np.zeros((3, REQUEST_COLUMN + 1))
    features[:, REQUEST_COLUMN] = np.log1p(1000.0)
    wf = SimpleNamespace(
        levels=levels, quantiles=quantiles, features=features, proba_small=np.array([np.nan, 0.5, 0.5])
    )
    c = s.stacked_columns(wf)(100.0)
    assert np.isnan(c[0]).all()  # week 0: no model, no row in the head's training
    assert np.allclose(c[1, :5], np.log1p(quantiles[1]) - np.log1p(100.0))
    assert np.isclose(c[1, 5], 0.5)  # the divider is the median's quantile


def test_crossfit_ceiling_predicts_each_block_without_its_own_outcomes() -> None:
    s = _script()
    rng = np.random.default_rng(5)
    n, weeks = 1500, 10
    week = np.sort(rng.integers(0, weeks, n))
    features = rng.normal(size=(n, 4))
    runtime = np.exp(5 + features[:, 0] + rng.normal(0, 0.5, n))
    wf = SimpleNamespace(
        features=features,
        runtime=runtime,
        end=np.arange(n, dtype=np.float64),
        week=week,
        proba_small=np.where(week == 0, np.nan, 0.5),
    )
    divider = np.where(week == 0, np.nan, 150.0 + week)

    def recent(d: float) -> np.ndarray:
        return np.full((n, 1), d)

    proba = s.crossfit_ceiling(wf, divider, recent, folds=3)
    assert np.isnan(proba[week == 0]).all() and np.isfinite(proba[week > 0]).all()
    # the last block's outcomes do not move its own predictions (they move the other blocks')
    last = week >= 7
    changed = SimpleNamespace(**vars(wf))
    changed.runtime = np.where(last, 1e6, runtime)
    again = s.crossfit_ceiling(changed, divider, recent, folds=3)
    assert np.array_equal(proba[last], again[last])
    assert not np.array_equal(proba[~last & (week > 0)], again[~last & (week > 0)])
