"""The daemon's per-pass batch (issue 13: 10,000 pending jobs): the vectorised paths give the
same bits as one job at a time, and the compiled trees the same scores in parallel, serially,
from threads and in a forked child."""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest

from rush.models import runtime_class, trees
from rush.models.history import SUBMITS_KEPT, JobColumns, RuntimeHistory, _distinct_pairs
from rush.models.runtime_features import Clock, temporal_features

DAY = 86400.0
NOON = 20000 * DAY + 12 * 3600


def filled_history(clock: Clock, rng: np.random.Generator) -> RuntimeHistory:
    history = RuntimeHistory(clock)
    for k in range(600):
        user = int(rng.integers(0, 12))
        procs = int(rng.choice([1, 4, 64, 2**40]))  # 2**40: a procs range too wide for the table
        request = float(rng.choice([600.0, 3600.0, 86400.0, 0.0]))
        submit = NOON - 5 * DAY + k * 600.0
        history.observe_finished(user, procs, request, submit, float(rng.uniform(0, 20_000)))
    return history


def pending_jobs(rng: np.random.Generator, n: int, spread: float) -> JobColumns:
    return JobColumns(
        rng.integers(0, 15, n),  # users 12-14 have no history
        rng.choice([1, 4, 64, 2**40, 7], n),
        rng.choice([600.0, 3600.0, 86400.0, 0.0, -0.0, 5.5], n),
        NOON + rng.uniform(0, spread, n),
    )


@pytest.mark.parametrize("spread", [3600.0, 3 * DAY, 400 * DAY])  # within the fast tables and beyond
@pytest.mark.parametrize("zone", ["Europe/Stockholm", None])
def test_batch_features_equal_one_job_at_a_time(spread, zone):
    rng = np.random.default_rng(1)
    history = filled_history(Clock(zone), rng)
    jobs = pending_jobs(rng, 300, spread)
    history.observe_submitted(jobs.user, jobs.submit)
    for divider in (1000.0, 5000.0):
        batch = history.features(jobs, divider)
        history._cache.clear()  # one at a time, from a cold cache
        single = np.vstack([history.features(jobs.subset(np.array([k])), divider) for k in range(len(jobs))])
        assert np.array_equal(batch.view(np.int64), single.view(np.int64))
        assert np.array_equal(history.features(jobs, divider), batch)  # warm cache: same values
    assert history.features(jobs.subset(np.arange(0)), 1000.0).shape == (0, batch.shape[1])


def test_temporal_features_per_day_table_equals_per_job():
    rng = np.random.default_rng(2)
    local = NOON + rng.uniform(-3 * DAY, 3 * DAY, 500)  # few days: the per-day table
    table = temporal_features(local)
    one_by_one = np.vstack([temporal_features(local[k : k + 1]) for k in range(len(local))])
    assert np.array_equal(table, one_by_one)
    wide = np.array([0.0, 3.2e10])  # 1970-01-01 (a Thursday) and year 2984: no table
    assert temporal_features(wide)[0].tolist() == [0.0, 3.0, 1.0, 1.0, 1.0, 1.0]
    assert np.array_equal(temporal_features(wide)[1], temporal_features(wide[1:])[0])


def test_distinct_pairs_match_python_sets():
    rng = np.random.default_rng(3)
    user_code = np.sort(rng.integers(0, 6, 200))
    for values in (
        rng.integers(0, 30, 200),  # a small range: the table
        rng.integers(-(2**62), 2**62, 200),  # a wide range: sorted
        rng.choice([0.0, 1.5, 3600.0, 1e9], 200),  # floats: ranked first
    ):
        users, value, inverse = _distinct_pairs(user_code, 6, values)
        pairs = sorted(set(zip(user_code.tolist(), values.tolist(), strict=True)))
        assert list(zip(users.tolist(), value.tolist(), strict=True)) == pairs
        assert [pairs[k] for k in inverse.tolist()] == list(
            zip(user_code.tolist(), values.tolist(), strict=True)
        )


def test_resent_pending_jobs_leave_the_submission_stream_as_it_was():
    rng = np.random.default_rng(4)
    history = RuntimeHistory()
    users = rng.integers(0, 5, 2000)
    submits = NOON + rng.integers(0, 5000, 2000).astype(float)
    history.observe_submitted(users, submits)
    for user in range(5):
        expected = np.unique(submits[users == user])[-SUBMITS_KEPT:]
        assert np.array_equal(history.submits[user], expected)
    before = {user: times.copy() for user, times in history.submits.items()}
    history.observe_submitted(users[:500], submits[:500])  # the next pass re-sends pending jobs
    assert all(np.array_equal(history.submits[u], before[u]) for u in before)
    history.observe_submitted([3, 9], [NOON + 10_000.5, NOON])  # one new time, one new user
    assert history.submits[3][-1] == NOON + 10_000.5 and len(history.submits[3]) == len(before[3]) + 1
    assert history.submits[9].tolist() == [NOON]


def fitted_boosting():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 6))
    y = (X[:, 0] + X[:, 2] > 0).astype(int)
    model = runtime_class.RuntimeClassifier(estimator="hgb", n_estimators=20, threshold=0.4).fit(X, y)
    X[::13, 2] = np.nan  # missing values take each node's missing side
    return model, X


def test_parallel_serial_and_threaded_trees_equal_scikit_learn():
    model, X = fitted_boosting()
    compiled = model.compiled_
    expected = model.model_.predict_proba(X)
    assert len(X) >= trees.PARALLEL_ROWS  # the parallel kernel
    assert np.array_equal(compiled.predict_proba(X), expected)
    assert np.array_equal(compiled.predict_proba(X[:100]), expected[:100])  # the serial one
    with trees.PARALLEL:  # another thread in the parallel kernel: the serial one
        assert np.array_equal(compiled.predict_proba(X), expected)
    results: list[np.ndarray] = []
    threads = [threading.Thread(target=lambda: results.append(compiled.predict_proba(X))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(np.array_equal(r, expected) for r in results)


def _child_predicts(model, X, expected) -> None:
    raise SystemExit(0 if np.array_equal(model.compiled_.predict_proba(X), expected) else 3)


def test_forked_child_predicts_after_its_parent_did():
    # GNU OpenMP, numba's default threading layer where libgomp exists, kills such a child.
    model, X = fitted_boosting()
    expected = model.compiled_.predict_proba(X)  # the parent runs the parallel kernel first
    child = multiprocessing.get_context("fork").Process(target=_child_predicts, args=(model, X, expected))
    child.start()
    child.join(120)
    assert child.exitcode == 0
