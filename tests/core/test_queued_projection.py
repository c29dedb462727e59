"""Rule L2 (issue 29, round 12): a queued job with predicted quantiles occupies the start
projection for max(its reservation estimate, Q(0.75) of its distribution), never above its
request; only the projection's time changes (decisions, and jobs started by the pass, keep the
estimate), and bad quantiles fall back with a reason."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.policies import parse_policy
from rush.core.remaining_runtime import (
    QUEUE_PROJECTION_LEVEL,
    REFUSED_LEVELS,
    REFUSED_NEGATIVE,
    REFUSED_NO_LIMIT,
    REFUSED_NOT_FINITE,
    conditional_quantile_runtime,
    quantile_knots,
    queued_projection_runtimes,
)
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, RuntimeQuantiles, Snapshot

MACHINE = 32
LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)


def _easy() -> CoreConfig:
    return CoreConfig(policy=parse_policy("FCFS"), backfill="easy", threshold=None)


def _queue(quantiles: RuntimeQuantiles | None, estimate: float = 600.0) -> Snapshot:
    """The machine held until t = 1000 by one running job; job 2 (whole machine, predicted
    ``estimate``) waits, then job 3 (whole machine) behind it."""
    running = (RunningJob(1, start=0.0, procs=MACHINE, requested_time=1000.0),)
    pending = (
        PendingJob(2, 10.0, MACHINE, 3600.0, estimate=estimate, runtime_quantiles=quantiles),
        PendingJob(3, 20.0, MACHINE, 3600.0, estimate=300.0),
    )
    return Snapshot(100.0, MACHINE, 0, pending, running)


def test_a_queued_job_is_projected_for_its_upper_quartile_and_decisions_do_not_change() -> None:
    q = RuntimeQuantiles(LEVELS, (200.0, 400.0, 900.0, 1800.0, 2500.0))
    plain = schedule(_queue(None), _easy())
    upper = schedule(_queue(q), _easy())
    assert plain.estimated_start[2] == upper.estimated_start[2] == 1000.0
    assert plain.estimated_start[3] == 1000.0 + 600.0  # on the estimate, as before
    assert upper.estimated_start[3] == pytest.approx(1000.0 + 1800.0)  # on Q(0.75)
    assert [(d.job_id, d.action, d.value) for d in plain.decisions] == [
        (d.job_id, d.action, d.value) for d in upper.decisions
    ]
    assert not upper.estimate_notes


def test_never_below_the_estimate_nor_above_the_request() -> None:
    low = RuntimeQuantiles(LEVELS, (50.0, 100.0, 200.0, 300.0, 400.0))
    assert schedule(_queue(low), _easy()).estimated_start[3] == 1000.0 + 600.0
    high = RuntimeQuantiles(LEVELS, (2000.0, 3000.0, 5000.0, 9000.0, 20000.0))
    assert schedule(_queue(high), _easy()).estimated_start[3] == pytest.approx(1000.0 + 3600.0)


def test_a_job_the_pass_starts_keeps_its_estimate() -> None:
    # The machine is free: job 2 starts now and job 3 waits for it to end on its estimate.
    q = RuntimeQuantiles(LEVELS, (200.0, 400.0, 900.0, 1800.0, 2500.0))
    snap = _queue(q)
    free = Snapshot(snap.now, MACHINE, MACHINE, snap.pending, ())
    d = schedule(free, _easy())
    assert d.estimated_start[2] == snap.now
    assert d.estimated_start[3] == snap.now + 600.0


@pytest.mark.parametrize(
    ("levels", "seconds", "why"),
    [
        (LEVELS, (200.0, math.nan, 900.0, 1800.0, 2500.0), REFUSED_NOT_FINITE),
        (LEVELS, (200.0, math.inf, 900.0, 1800.0, 2500.0), REFUSED_NOT_FINITE),
        (LEVELS, (-5.0, 400.0, 900.0, 1800.0, 2500.0), REFUSED_NEGATIVE),
        ((0.1, 0.5), (200.0, 900.0, 1800.0), REFUSED_LEVELS),
        ((0.5, 0.25, 0.1, 0.75, 0.9), (200.0, 400.0, 900.0, 1800.0, 2500.0), REFUSED_LEVELS),
        ((0.0, 0.25, 0.5, 0.75, 1.0), (200.0, 400.0, 900.0, 1800.0, 2500.0), REFUSED_LEVELS),
        ((), (), REFUSED_LEVELS),
    ],
)
def test_bad_quantiles_fall_back_to_the_estimate_with_a_reason(levels, seconds, why) -> None:
    d = schedule(_queue(RuntimeQuantiles(levels, seconds)), _easy())
    assert d.estimated_start[3] == 1000.0 + 600.0
    assert d.estimate_notes == {2: why}


def test_one_bad_job_does_not_spoil_the_others_nor_a_missing_limit() -> None:
    good = RuntimeQuantiles(LEVELS, (200.0, 400.0, 900.0, 1800.0, 2500.0))
    bad = RuntimeQuantiles(LEVELS, (200.0, 400.0, -1.0, 1800.0, 2500.0))
    pending = [
        PendingJob(1, 0.0, 1, 3600.0, runtime_quantiles=good),
        PendingJob(2, 0.0, 1, 3600.0, runtime_quantiles=bad),
        PendingJob(3, 0.0, 1, math.inf, runtime_quantiles=good),
        PendingJob(4, 0.0, 1, 3600.0),
    ]
    got, refused = queued_projection_runtimes(pending, np.array([600.0, 600.0, 600.0, 600.0]))
    assert got[0] == pytest.approx(1800.0)
    assert np.isnan(got[1:]).all()
    assert refused == {2: REFUSED_NEGATIVE, 3: REFUSED_NO_LIMIT}


@pytest.mark.parametrize("levels", [LEVELS, (0.1, 0.5, 0.9), (0.2, 0.4, 0.6, 0.8)])
def test_the_rule_reads_the_cores_quantile_function(levels) -> None:
    rng = np.random.default_rng(len(levels))
    n = 40
    request = rng.uniform(600.0, 1e5, n)
    seconds = rng.uniform(0.0, 1.3, (n, len(levels))) * request[:, None]  # unsorted, some above
    est = rng.uniform(0.05, 0.6, n) * request
    pending = [
        PendingJob(
            k, 0.0, 1, float(request[k]), runtime_quantiles=RuntimeQuantiles(levels, tuple(seconds[k]))
        )
        for k in range(n)
    ]
    got, refused = queued_projection_runtimes(pending, est)
    assert not refused and got is not None
    q = np.minimum(np.sort(seconds, axis=1), request[:, None])
    xs, ps = quantile_knots(np.log1p(q), np.asarray(levels), np.log1p(request))
    for k in range(n):
        upper = conditional_quantile_runtime(xs[k], ps, 0.0, QUEUE_PROJECTION_LEVEL)
        assert got[k] == pytest.approx(min(max(est[k], upper), request[k]), rel=1e-9)
        assert np.isfinite(got[k]) and est[k] <= got[k] <= request[k] + 1e-6


def test_no_quantiles_no_change() -> None:
    assert queued_projection_runtimes([PendingJob(1, 0.0, 1, 60.0)], np.array([30.0])) == (None, {})
