"""Round 9's class rules of the runtime-prediction study (``estimates/class_history.py``): the
history columns a shell has at submit, no future data, and the reference head is round 7's."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from rush.models.runtime_features import Clock
from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_features import QuantileJobs
from rush.models.runtime_quantiles_walkforward import predict_quantiles_walkforward
from tests.models.fixtures import HEADER, SMALL_QUANTILE_MODEL, synthetic_workload
from tests.script_module import load_script

FOLDER = Path(__file__).resolve().parents[2] / "sim" / "runtime_predictions" / "estimates"


def _script():
    return load_script(FOLDER / "class_history.py", "class_history")


def _jobs(user, submit, runtime, request, procs=None) -> tuple[QuantileJobs, np.ndarray, np.ndarray]:
    user = np.asarray(user, dtype=np.int64)
    submit = np.asarray(submit, dtype=np.float64)
    runtime = np.asarray(runtime, dtype=np.float64)
    request = np.asarray(request, dtype=np.float64)
    procs = np.ones(len(user), dtype=np.int64) if procs is None else np.asarray(procs, dtype=np.int64)
    end = submit + np.nan_to_num(runtime)
    jobs = QuantileJobs(user, procs, request, submit, runtime=runtime, end=end, start=submit)
    return jobs, end, runtime


def test_recent_shares_read_only_jobs_finished_before_the_submission() -> None:
    h = _script()
    # user 1: three small (10 s) then a job submitted while a large one (1000 s) still runs
    jobs, end, runtime = _jobs(
        [1, 1, 1, 1, 1], [0, 20, 40, 60, 1100], [10, 10, 10, 1000, 10], [100, 100, 100, 5000, 100]
    )
    columns = h.recent_columns(jobs, Clock(), end, runtime)(divider=100.0)
    # the first job has no history; the fourth sees three small jobs; the fifth (submitted at
    # 1100, after the large job ended at 1060) sees 3 small of 4 and a streak of one large
    assert np.all(columns[0, :4] == -1) and columns[0, 4] == 0  # no streak yet
    assert columns[3, 0] == 1.0 and columns[3, 4] == 3.0
    assert columns[4, 0] == 3 / 4 and columns[4, 4] == -1.0
    # a job still running at the submission leaks nothing: the fourth job is unknown to the fourth
    later, end_later, runtime_later = _jobs([1, 1], [0, 5], [1000, 10], [5000, 100])
    assert h.recent_columns(later, Clock(), end_later, runtime_later)(100.0)[1, 0] == -1


def test_recent_columns_keep_only_the_last_k_jobs() -> None:
    h = _script()
    n = 12  # two large jobs, then ten small ones, then the job asked about
    runtime = [1000.0, 1000.0] + [10.0] * 10 + [10.0]
    submit = np.arange(n + 1) * 2000.0
    jobs, end, rt = _jobs([7] * (n + 1), submit, runtime, [5000.0] * (n + 1))
    columns = h.recent_columns(jobs, Clock(), end, rt)(100.0)
    assert columns[n, 0] == 1.0  # the last 5: all small
    assert columns[n, 1] == 1.0  # the last 10: all small
    assert columns[n, 4] == 10.0  # streak of ten small jobs
    assert columns[6, 1] == 4 / 6  # six finished before job 6: two large, four small


def test_streaks_and_same_request_on_bad_input() -> None:
    h = _script()
    runs = h.signed_runs(np.array([True, True, False, True, False]), np.array([0, 0, 0, 1, 1]))
    assert runs.tolist() == [1, 2, -1, 1, -1]
    assert h.signed_runs(np.zeros(0, bool), np.zeros(0, np.int64)).size == 0
    equal = h.previous_request_equal(np.array([3, 4, 3, 3]), np.array([60.0, 60.0, 60.0, np.nan]))
    assert equal.tolist() == [-1.0, -1.0, 1.0, 0.0]  # a NaN request equals nothing
    # NaN, negative and zero runtimes, a user with one job: finite columns, no crash
    jobs, end, runtime = _jobs([1, 1, 1, 2], [0, 10, 20, 30], [np.nan, -5, 0, 10], [100, 100, 100, 100])
    end = np.where(np.isfinite(runtime) & (runtime >= 0), end, np.inf)
    columns = h.recent_columns(jobs, Clock(), end, runtime)(50.0)
    assert np.isfinite(columns).all()
    assert columns[3].tolist() == [-1.0, -1.0, -1.0, -1.0, 0.0, -1.0]


def test_reference_head_threshold_window_and_cold_start_use_no_future_data() -> None:
    h = _script()
    rules = load_script(FOLDER / "class_rules.py", "class_rules")
    w = synthetic_workload(900)
    wf = predict_quantiles_walkforward(w, HEADER, RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL))
    params = {"max_iter": 15, "min_samples_leaf": 5}
    ours = rules.head_proba(wf, rules.WEEK_SECONDS, head_params=params)
    divider = np.where(np.isfinite(wf.divider), wf.divider, np.nanmin(wf.divider))
    mine = h.head_proba(wf, divider, max_iter=15, leaves=15, min_leaf=5)
    assert np.allclose(ours, mine, equal_nan=True, atol=1e-9)
    # changing the runtimes of the last week's jobs changes no earlier week's P(small)
    last_week = wf.week == wf.week.max()
    changed = SimpleNamespace(**vars(wf))
    changed.runtime = np.where(last_week, 1.0, wf.runtime)
    again = h.head_proba(changed, divider, max_iter=15, leaves=15, min_leaf=5)
    assert np.allclose(mine[~last_week], again[~last_week], equal_nan=True)
    # the windowed threshold and the cold start (one walk-forward for both: it is the slow part)
    proba = np.where(np.isfinite(wf.proba_small), wf.proba_small, np.nan)
    first = h.windowed_thresholds(proba, wf.runtime, divider, wf.end, wf.submit, weeks=4)
    assert np.all((first > 0) & (first < 1))
    late = wf.week == wf.week.max()
    moved = h.windowed_thresholds(proba, np.where(late, 1e9, wf.runtime), divider, wf.end, wf.submit, weeks=4)
    assert np.array_equal(first[~late], moved[~late])
    # cold start: only the model-less (week 0) jobs change, and nothing from after their day
    has_model = np.isfinite(wf.proba_small)
    warm, cold_threshold = h.cold_start(wf, wf.proba_small, first)
    assert np.array_equal(warm[has_model], wf.proba_small[has_model])
    assert np.array_equal(cold_threshold[has_model], first[has_model])
    assert np.isfinite(warm[~has_model]).any()  # a day's finished jobs suffice here
    # a job's cold-start P(small) is the same when later jobs' runtimes change
    day = (wf.submit - wf.submit[0]) // 86400
    later = SimpleNamespace(**vars(wf))
    later.runtime = np.where(day >= day[~has_model].max(), 1.0, wf.runtime)
    again, _ = h.cold_start(later, wf.proba_small, first)
    early = ~has_model & (day < day[~has_model].max())
    assert np.allclose(warm[early], again[early], equal_nan=True)


def test_scores_count_the_masked_jobs_only() -> None:
    h = _script()
    called = np.array([True, True, False, False, True])
    small = np.array([True, False, False, True, True])
    mask = np.array([True, True, True, True, False])
    row = h.score(called, small, mask)
    assert row == {"jobs": 4, "accuracy": 0.5, "precision": 0.5, "recall": 0.5}
    none_called = h.score(np.zeros(5, bool), small, mask)
    assert np.isnan(none_called["precision"]) and none_called["recall"] == 0.0


def test_wide_recent_columns_add_the_request_category_and_twenty_jobs() -> None:
    h = _script()
    # one user alternating two requests: the (user, request) category sees only its own jobs
    n = 30
    request = np.where(np.arange(n) % 2 == 0, 100.0, 5000.0)
    runtime = np.where(request == 100.0, 10.0, 1000.0)
    jobs, end, rt = _jobs([5] * n, np.arange(n) * 3000.0, runtime, request)
    wide = h.recent_columns(jobs, Clock(), end, rt, wide=True)(100.0)
    assert wide.shape == (n, 11)
    last = n - 2  # a 100 s request: its category's last 20 are all small, the user's half
    assert wide[last, 8] == 1.0 and wide[last, 2] == 0.5
