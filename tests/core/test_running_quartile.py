"""Rule R (issue 29, round 30, helper r29run): under ``estimate_rule = "R"`` a running job with
predicted quantiles ends, in the start estimates, at its 0.75 quantile given its elapsed time,
Q(F(e) + 0.75 (1 - F(e))), instead of L2's median; the queue stays L2's, decisions never change,
refused quantiles fall back as under L2. The expected ends are read off the quantile function by
interpolation here, not by the core's function."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.names import ESTIMATE_RULE_L2, ESTIMATE_RULE_R, ESTIMATE_RULE_T
from rush.core.policies import parse_policy
from rush.core.remaining_runtime import (
    QUEUE_PROJECTION_LEVEL,
    REFUSED_NEGATIVE,
    quantile_knots,
    running_level,
    running_median_runtimes,
)
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, RuntimeQuantiles, Snapshot

MACHINE = 32
LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)
SECONDS = (200.0, 400.0, 900.0, 1800.0, 2500.0)
REQUEST = 36_000.0
NOW = 1000.0


def _config(rule: str) -> CoreConfig:
    config = CoreConfig(policy=parse_policy("FCFS"), backfill="easy", threshold=None)
    return dataclasses.replace(config, estimate_rule=rule)


def _held(quantiles: RuntimeQuantiles | None, elapsed: float) -> Snapshot:
    """The whole machine held by job 1 (``quantiles``, run ``elapsed`` s at :data:`NOW`); job 2
    (whole machine, with the same quantiles) waits, then job 3 (whole machine, none)."""
    running = (RunningJob(1, NOW - elapsed, MACHINE, REQUEST, estimate=600.0, runtime_quantiles=quantiles),)
    pending = (
        PendingJob(2, 10.0, MACHINE, REQUEST, estimate=600.0, runtime_quantiles=quantiles),
        PendingJob(3, 20.0, MACHINE, REQUEST, estimate=300.0),
    )
    return Snapshot(NOW, MACHINE, 0, pending, running)


def _given_elapsed(elapsed: float, level: float) -> float:
    """Q(F(e) + level (1 - F(e))) on the core's knots, by interpolation of the inverse."""
    xs, ps = quantile_knots(np.log1p(np.asarray(SECONDS))[None, :], np.asarray(LEVELS), np.log1p([REQUEST]))
    reached = float(np.interp(np.log1p(elapsed), xs[0], ps))
    return float(np.expm1(np.interp(reached + level * (1.0 - reached), ps, xs[0])))


def test_the_levels_of_the_rules() -> None:
    assert running_level(ESTIMATE_RULE_R) == QUEUE_PROJECTION_LEVEL == 0.75
    assert running_level(ESTIMATE_RULE_L2) == running_level(ESTIMATE_RULE_T) == 0.5
    with pytest.raises(ValueError, match="unknown estimate rule"):
        running_level("r")


@pytest.mark.parametrize("elapsed", [0.0, 300.0, 1200.0, 3000.0])
def test_rule_r_ends_the_running_job_at_its_conditional_upper_quartile(elapsed: float) -> None:
    q = RuntimeQuantiles(LEVELS, SECONDS)
    l2 = schedule(_held(q, elapsed), _config(ESTIMATE_RULE_L2))
    r = schedule(_held(q, elapsed), _config(ESTIMATE_RULE_R))
    median, upper = _given_elapsed(elapsed, 0.5), _given_elapsed(elapsed, 0.75)
    assert elapsed < median < upper < REQUEST
    assert l2.estimated_start[2] == pytest.approx(NOW - elapsed + median, rel=1e-9)
    assert r.estimated_start[2] == pytest.approx(NOW - elapsed + upper, rel=1e-9)
    # The queue is L2's under R: job 3 follows job 2's L2 length (its Q(0.75), 1800 s) either way.
    for out in (l2, r):
        assert out.estimated_start[3] == pytest.approx(out.estimated_start[2] + 1800.0, rel=1e-9)
    assert [(d.job_id, d.action, d.value) for d in l2.decisions] == [
        (d.job_id, d.action, d.value) for d in r.decisions
    ]


def test_never_below_the_elapsed_time_nor_above_the_request() -> None:
    q = RuntimeQuantiles(LEVELS, SECONDS)
    for elapsed in (0.0, 10.0, 2400.0, 30_000.0, REQUEST, 2 * REQUEST):
        job = RunningJob(1, NOW - elapsed, 1, REQUEST, runtime_quantiles=q)
        out, refused = running_median_runtimes([job], NOW, running_level(ESTIMATE_RULE_R))
        assert not refused and out is not None
        assert np.isfinite(out[0]) and elapsed <= out[0] <= max(REQUEST, elapsed)


def test_refused_quantiles_fall_back_as_under_l2() -> None:
    bad = RuntimeQuantiles(LEVELS, (-5.0, 400.0, 900.0, 1800.0, 2500.0))
    l2 = schedule(_held(bad, 300.0), _config(ESTIMATE_RULE_L2))
    r = schedule(_held(bad, 300.0), _config(ESTIMATE_RULE_R))
    assert r.estimate_notes.get(1) == l2.estimate_notes.get(1) == REFUSED_NEGATIVE
    assert r.estimated_start == l2.estimated_start
