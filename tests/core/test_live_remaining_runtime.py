"""Live start estimates end a running job at its median runtime given its elapsed time (round 6's
H4, rush.core.remaining_runtime), from the predicted quantiles its snapshot carries: the same
estimates as the offline study's replay (rush.studies.estimate_accuracy_offline) for the same
state, and bad quantiles fall back with a reason, never a NaN or negative estimate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.policies import parse_policy
from rush.core.remaining_runtime import (
    REFUSED_LEVELS,
    REFUSED_NEGATIVE,
    REFUSED_NOT_FINITE,
    median_runtime_given_elapsed,
    quantile_knots,
)
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, RuntimeQuantiles, Snapshot
from rush.studies.estimate_accuracy_offline import (
    REMAINING_MEDIAN,
    RULE_EASY,
    ladder,
    projection,
    sweep_projected,
)

MACHINE = 64
LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)


def _easy() -> CoreConfig:
    return CoreConfig(policy=parse_policy("FCFS"), backfill="easy", threshold=None)


def _state(seed: int):
    """A moment of a machine: running jobs with predicted quantiles (some past their median),
    pending jobs in submit order with a predicted runtime below their limit."""
    rng = np.random.default_rng(seed)
    now = 100_000.0
    n_run, n_pend = int(rng.integers(3, 12)), int(rng.integers(5, 25))
    procs = rng.choice([1, 2, 4, 8, 16, 32], size=n_run + n_pend).astype(np.int64)
    while procs[:n_run].sum() > MACHINE:  # what runs fits the machine
        procs[int(np.argmax(procs[:n_run]))] //= 2
    limit = rng.integers(600, 36_000, size=n_run + n_pend).astype(float)
    start = now - rng.uniform(0.0, 1.0, n_run) * limit[:n_run]
    submit = np.concatenate([start - 10.0, now - np.sort(rng.uniform(1.0, 5000.0, n_pend))[::-1]])
    # Quantiles in a random order and some above the limit: the rule sorts and caps them.
    q = np.sort(rng.uniform(0.02, 1.3, (n_run + n_pend, len(LEVELS))), axis=1) * limit[:, None]
    q[::3] = q[::3, ::-1]
    predicted = np.minimum(np.median(q, axis=1), limit) * rng.uniform(0.8, 1.0, n_run + n_pend)
    return now, n_run, procs, limit, start, submit, q, predicted


def _snapshot(now, n_run, procs, limit, start, submit, q, predicted, last: int) -> Snapshot:
    running = tuple(
        RunningJob(
            job_id=k + 1,
            start=float(start[k]),
            procs=int(procs[k]),
            requested_time=float(limit[k]),
            runtime_quantiles=RuntimeQuantiles(LEVELS, tuple(q[k].tolist())),
        )
        for k in range(n_run)
    )
    pending = tuple(
        PendingJob(
            job_id=k + 1,
            submit=float(submit[k]),
            procs=int(procs[k]),
            requested_time=float(limit[k]),
            estimate=float(predicted[k]),
        )
        for k in range(n_run, last + 1)
    )
    free = MACHINE - int(procs[:n_run].sum())
    return Snapshot(now=now, total_procs=MACHINE, free_procs=free, pending=pending, running=running)


@pytest.mark.parametrize("seed", range(10))
def test_a_live_pass_estimates_as_the_offline_replay(seed: int) -> None:
    now, n_run, procs, limit, start, submit, q, predicted = _state(seed)
    n = len(procs)
    # The offline sweep: one query per pending job at `now`, the jobs ahead of it in FCFS order;
    # decisions read what the live pass decides on (limits of running jobs, the pending jobs'
    # estimates), time moves on the predictions and each running job's conditional median.
    decide = np.concatenate([limit[:n_run], predicted[n_run:]])
    capped = np.minimum(np.sort(q, axis=1), limit[:, None])
    knots = quantile_knots(np.log1p(capped), np.array(LEVELS), np.log1p(limit))
    ladders = ladder(predicted, None, limit)[None, :, :]
    pend = np.arange(n_run, n)
    offline = sweep_projected(
        np.full(len(pend), now),
        pend.astype(np.int64),
        (submit, np.concatenate([start, np.full(n - n_run, np.inf)]), np.full(n, np.inf), procs, MACHINE),
        np.ascontiguousarray(ladders),
        projection(RULE_EASY, decide, np.array([REMAINING_MEDIAN]), knots),
    )[0]
    for i, j in enumerate(pend.tolist()):
        live = schedule(_snapshot(now, n_run, procs, limit, start, submit, q, predicted, j), _easy())
        assert live.estimated_start[j + 1] == pytest.approx(offline[i], rel=0, abs=1e-6), (seed, j)
        assert not live.estimate_notes


def test_running_jobs_end_at_their_conditional_median_not_their_limit() -> None:
    # One running job holds the whole machine; the waiting job starts when it ends: at its
    # predicted median given the time it has run, not at its limit.
    levels = LEVELS
    q = (600.0, 900.0, 1200.0, 1800.0, 2400.0)
    running = (
        RunningJob(
            1, start=0.0, procs=MACHINE, requested_time=7200.0, runtime_quantiles=RuntimeQuantiles(levels, q)
        ),
    )
    pending = (PendingJob(2, submit=10.0, procs=MACHINE, requested_time=3600.0),)
    for now in (100.0, 1500.0, 3000.0):
        d = schedule(Snapshot(now, MACHINE, 0, pending, running), _easy())
        expected, why = median_runtime_given_elapsed(levels, q, 7200.0, now)
        assert why == ""
        assert d.estimated_start[2] == pytest.approx(expected)
        assert now < expected < 7200.0
    plain = schedule(Snapshot(100.0, MACHINE, 0, pending, (RunningJob(1, 0.0, MACHINE, 7200.0),)), _easy())
    assert plain.estimated_start[2] == 7200.0  # without quantiles: the limit, as before


@pytest.mark.parametrize(
    ("levels", "seconds", "why"),
    [
        (LEVELS, (600.0, math.nan, 1200.0, 1800.0, 2400.0), REFUSED_NOT_FINITE),
        (LEVELS, (600.0, math.inf, 1200.0, 1800.0, 2400.0), REFUSED_NOT_FINITE),
        (LEVELS, (-5.0, 900.0, 1200.0, 1800.0, 2400.0), REFUSED_NEGATIVE),
        ((0.1, 0.5), (600.0, 900.0, 1200.0), REFUSED_LEVELS),
        ((0.5, 0.25, 0.1, 0.75, 0.9), (600.0, 900.0, 1200.0, 1800.0, 2400.0), REFUSED_LEVELS),
        ((0.0, 0.25, 0.5, 0.75, 1.0), (600.0, 900.0, 1200.0, 1800.0, 2400.0), REFUSED_LEVELS),
        ((), (), REFUSED_LEVELS),
    ],
)
def test_bad_quantiles_fall_back_to_the_request_with_a_reason(levels, seconds, why) -> None:
    running = (
        RunningJob(
            1,
            start=0.0,
            procs=MACHINE,
            requested_time=7200.0,
            runtime_quantiles=RuntimeQuantiles(levels, seconds),
        ),
    )
    pending = (PendingJob(2, submit=10.0, procs=MACHINE, requested_time=3600.0),)
    d = schedule(Snapshot(100.0, MACHINE, 0, pending, running), _easy())
    assert d.estimated_start[2] == 7200.0  # the request: what the pass reads without quantiles
    assert d.estimate_notes == {1: why}


@pytest.mark.parametrize("seed", range(20))
def test_the_live_rule_is_never_nan_negative_nor_outside_elapsed_and_limit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    limit = float(rng.uniform(60, 1e5))
    q = rng.uniform(0.0, 2.0, len(LEVELS)) * limit  # unsorted, some above the limit, zeros allowed
    q[rng.integers(len(LEVELS))] = 0.0
    for elapsed in (-10.0, 0.0, limit / 3, limit, 2 * limit, math.nan):
        value, why = median_runtime_given_elapsed(LEVELS, q, limit, elapsed)
        assert why == ""
        assert np.isfinite(value) and value >= 0.0
        seen = elapsed if np.isfinite(elapsed) else 0.0
        assert value >= seen - 1e-6
        assert value <= max(limit, seen) + 1e-6
