"""Resampling and the Lublin generator: deterministic under a seed, documented statistics."""

from __future__ import annotations

import numpy as np
from scipy.stats import spearmanr

from rush.workload.lublin import lublin_generate
from rush.workload.model import SWF_FIELDS
from rush.workload.resample import WEEK, resample_weekly, user_weekly_slices


def same(a, b) -> bool:
    return all(np.array_equal(a[f], b[f]) for f in SWF_FIELDS)


def test_lublin_deterministic_under_seed():
    assert same(lublin_generate(2000, 128, seed=5), lublin_generate(2000, 128, seed=5))
    assert not same(lublin_generate(2000, 128, seed=5), lublin_generate(2000, 128, seed=6))


def test_lublin_documented_statistics():
    trace = lublin_generate(10_000, 256, seed=1)
    q = trace["alloc_procs"]
    p = trace["runtime"].astype(float)
    s = trace["submit"].astype(float)
    # Serial share between the interactive (0.154) and batch (0.293) parameters.
    assert 0.15 <= (q == 1).mean() <= 0.30
    # Power-of-two emphasis: most parallel sizes are powers of two.
    parallel = q[q > 1]
    assert ((parallel & (parallel - 1)) == 0).mean() > 0.6
    assert q.max() <= 256 and q.min() >= 1
    # log(runtime) hyper-gamma means lie between ~3 and ~10; all runtimes below exp(12).
    assert 2.5 < np.log(np.maximum(p, 1)).mean() < 8 and p.max() <= np.exp(12)
    # Daily cycle: more arrivals in the working day than at night.
    hours = (s % 86400) // 3600
    assert ((hours >= 8) & (hours < 18)).mean() > 2 * (hours < 6).mean()
    # Runtime grows with size.
    assert spearmanr(q, p).correlation > 0.05
    assert (np.diff(s) >= 0).all()
    assert (trace["req_time"] >= trace["runtime"]).all()


def _kth_like(seed: int = 3):
    rng = np.random.default_rng(seed)
    trace = lublin_generate(3000, 64, seed=seed)
    trace.columns["user"] = rng.integers(0, 12, len(trace))
    return trace


def test_resample_deterministic_and_sorted():
    trace = _kth_like()
    a, b = resample_weekly(trace, 6, seed=9), resample_weekly(trace, 6, seed=9)
    assert same(a, b)
    assert (np.diff(a["submit"]) >= 0).all()
    assert a["job_id"].tolist() == list(range(1, len(a) + 1))
    assert a["submit"].max() < 6 * WEEK


def test_resample_keeps_user_job_properties():
    trace = _kth_like()
    new = resample_weekly(trace, 5, seed=1)
    original = {
        (u, r, q, t)
        for u, r, q, t in zip(
            trace["user"], trace["runtime"], trace["alloc_procs"], trace["req_time"], strict=True
        )
    }
    for row in zip(new["user"], new["runtime"], new["alloc_procs"], new["req_time"], strict=True):
        assert row in original


def test_resample_jobs_per_user_match_expectation():
    trace = _kth_like()
    slices = user_weekly_slices(trace)
    weeks = 200
    new = resample_weekly(trace, weeks, seed=4)
    for user, user_slices in slices.items():
        expected = weeks * sum(len(s) for s in user_slices) / len(user_slices)
        got = int((new["user"] == user).sum())
        # Sum of `weeks` draws: within 5 standard deviations of the slice-size spread.
        sd = np.std([len(s) for s in user_slices]) * np.sqrt(weeks)
        assert abs(got - expected) <= 5 * sd + 1, (user, got, expected)
