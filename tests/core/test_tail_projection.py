"""Rule T (issue 29, round 30): under ``estimate_rule = "T"`` a queued job with predicted
quantiles occupies the start projection for max(L2's length, its tail-carried mean), the mean of
its distribution with the mass above the top predicted quantile put at its request, never above
the request; the default stays L2, decisions never change, bad quantiles fall back as under L2.
The tail-carried mean is checked against a brute-force integral of the quantile function."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.names import ESTIMATE_RULE_L2, ESTIMATE_RULE_T, ESTIMATE_RULES
from rush.core.policies import parse_policy
from rush.core.remaining_runtime import (
    REFUSED_NEGATIVE,
    conditional_mean_runtime,
    quantile_knots,
    queued_projection_runtimes,
    rule_upper,
    tail_carried_mean,
)
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, RuntimeQuantiles, Snapshot
from rush.errors import PolicyError

MACHINE = 32
LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)
REQUEST = 36_000.0


def _config(rule: str | None = None) -> CoreConfig:
    config = CoreConfig(policy=parse_policy("FCFS"), backfill="easy", threshold=None)
    return config if rule is None else dataclasses.replace(config, estimate_rule=rule)


def _queue(quantiles: RuntimeQuantiles | None, estimate: float = 600.0) -> Snapshot:
    """The machine held until t = 1000 by one running job; job 2 (whole machine, predicted
    ``estimate``, request :data:`REQUEST`) waits, then job 3 (whole machine) behind it."""
    running = (RunningJob(1, start=0.0, procs=MACHINE, requested_time=1000.0),)
    pending = (
        PendingJob(2, 10.0, MACHINE, REQUEST, estimate=estimate, runtime_quantiles=quantiles),
        PendingJob(3, 20.0, MACHINE, REQUEST, estimate=300.0),
    )
    return Snapshot(100.0, MACHINE, 0, pending, running)


def _brute_force(seconds, levels, request: float, points: int = 400_000) -> float:
    """The mean of the core's quantile function (sorted, capped by the request) with every
    level above the top predicted one read as the request: a midpoint sum."""
    q = np.minimum(np.sort(np.asarray(seconds, dtype=np.float64)), request)
    xs, ps = quantile_knots(np.log1p(q)[None, :], np.asarray(levels), np.log1p([request]))
    u = (np.arange(points) + 0.5) / points
    values = np.expm1(np.interp(u, ps, xs[0]))
    values[u > levels[-1]] = request
    return float(values.mean())


def test_the_tail_carried_mean_is_the_integral_with_the_tail_at_the_request() -> None:
    rng = np.random.default_rng(30)
    for levels in (LEVELS, (0.1, 0.5, 0.9), (0.2, 0.4, 0.6, 0.8)):
        for _ in range(25):
            request = float(rng.uniform(600.0, 2e5))
            seconds = rng.uniform(0.0, 1.2, len(levels)) * request  # unsorted, some above the request
            q = np.minimum(np.sort(seconds), request)
            xs, ps = quantile_knots(np.log1p(q)[None, :], np.asarray(levels), np.log1p([request]))
            got = tail_carried_mean(xs[0], ps)
            assert got == pytest.approx(_brute_force(seconds, levels, request), rel=2e-4)
            # Never below the distribution's own mean (the log-linear tail), never above the request.
            assert conditional_mean_runtime(xs[0], ps, 0.0) - 1e-6 <= got <= request + 1e-6


def test_a_known_case_by_hand() -> None:
    # Every quantile at 100 s, request 1000 s: 0.9 of the mass at 100 s, 0.1 at the request.
    q = np.full(5, 100.0)
    xs, ps = quantile_knots(np.log1p(q)[None, :], np.asarray(LEVELS), np.log1p([1000.0]))
    assert tail_carried_mean(xs[0], ps) == pytest.approx(0.9 * 100.0 + 0.1 * 1000.0)


def test_rule_t_projects_the_queue_for_the_tail_carried_mean_and_decisions_do_not_change() -> None:
    q = RuntimeQuantiles(LEVELS, (200.0, 400.0, 900.0, 1800.0, 2500.0))
    l2 = schedule(_queue(q), _config())
    t = schedule(_queue(q), _config(ESTIMATE_RULE_T))
    tail = _brute_force(q.seconds, LEVELS, REQUEST)
    assert tail > 1800.0  # the tail at the request outweighs Q(0.75) here
    assert l2.estimated_start[3] == pytest.approx(1000.0 + 1800.0)  # L2: Q(0.75)
    assert t.estimated_start[3] == pytest.approx(1000.0 + tail, rel=2e-4)
    assert l2.estimated_start[2] == t.estimated_start[2] == 1000.0
    assert [(d.job_id, d.action, d.value) for d in l2.decisions] == [
        (d.job_id, d.action, d.value) for d in t.decisions
    ]


def test_the_default_is_l2() -> None:
    assert CoreConfig().estimate_rule == ESTIMATE_RULE_L2
    q = RuntimeQuantiles(LEVELS, (200.0, 400.0, 900.0, 1800.0, 2500.0))
    assert (
        schedule(_queue(q), _config()).estimated_start
        == schedule(_queue(q), _config(ESTIMATE_RULE_L2)).estimated_start
    )


def test_never_below_l2_nor_above_the_request() -> None:
    rng = np.random.default_rng(7)
    n = 60
    request = rng.uniform(600.0, 1e5, n)
    seconds = rng.uniform(0.0, 1.3, (n, len(LEVELS))) * request[:, None] ** rng.uniform(0.5, 1.0, (n, 1))
    est = rng.uniform(0.01, 0.9, n) * request
    pending = [
        PendingJob(
            k, 0.0, 1, float(request[k]), runtime_quantiles=RuntimeQuantiles(LEVELS, tuple(seconds[k]))
        )
        for k in range(n)
    ]
    l2, _ = queued_projection_runtimes(pending, est)
    t, refused = queued_projection_runtimes(pending, est, rule=ESTIMATE_RULE_T)
    assert not refused and l2 is not None and t is not None
    assert np.all(t >= l2 - 1e-9) and np.all(t <= request + 1e-6)
    tails = np.array([_brute_force(seconds[k], LEVELS, request[k], 100_000) for k in range(n)])
    np.testing.assert_allclose(t, np.minimum(np.maximum(l2, tails), request), rtol=1e-3)
    assert np.any(t > l2 * 1.01)  # the rule acts somewhere


@pytest.mark.parametrize(
    "seconds", [(200.0, math.nan, 900.0, 1800.0, 2500.0), (200.0, 400.0, -1.0, 1800.0, 2500.0)]
)
def test_bad_quantiles_fall_back_to_the_estimate_as_under_l2(seconds) -> None:
    d = schedule(_queue(RuntimeQuantiles(LEVELS, seconds)), _config(ESTIMATE_RULE_T))
    assert d.estimated_start[3] == 1000.0 + 600.0
    assert set(d.estimate_notes) == {2}
    assert all(math.isfinite(v) and v >= 0 for v in d.estimated_start.values())


def test_a_missing_limit_is_refused_not_projected() -> None:
    good = RuntimeQuantiles(LEVELS, (200.0, 400.0, 900.0, 1800.0, 2500.0))
    bad = RuntimeQuantiles(LEVELS, (200.0, 400.0, -1.0, 1800.0, 2500.0))
    pending = [
        PendingJob(1, 0.0, 1, math.inf, runtime_quantiles=good),
        PendingJob(2, 0.0, 1, 3600.0, runtime_quantiles=bad),
    ]
    got, refused = queued_projection_runtimes(pending, np.array([600.0, 600.0]), rule=ESTIMATE_RULE_T)
    assert got is not None and np.isnan(got).all()
    assert refused[2] == REFUSED_NEGATIVE and 1 in refused


def test_an_unknown_rule_is_refused_with_the_fix() -> None:
    with pytest.raises(PolicyError) as exc:
        CoreConfig(estimate_rule="T2")
    assert exc.value.where == "policy.estimate_rule"
    assert all(rule in exc.value.fix for rule in ESTIMATE_RULES)
    with pytest.raises(ValueError, match="unknown estimate rule"):
        rule_upper(np.ones(1), np.ones(1), "mean")
