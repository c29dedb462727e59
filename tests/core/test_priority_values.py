"""Absolute priority values: the core's order, and no churn when other jobs come and go."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core import CoreConfig, PendingJob, RuntimeClass, Snapshot
from rush.core.names import DYNAMIC_CODES, POLICY_CODES
from rush.core.policies import parse_policy, priority_key, quantised_wait
from rush.core.priority_values import BAND, LOWEST_VALUE, MAX_VALUE, key_levels, priority_values, scaled
from rush.core.resources import Node, Request
from rush.core.schedule import schedule

# LEARNED needs a heuristic file: tests/core/test_learned_policy.py checks its values.
STATIC = sorted(
    name for name, code in POLICY_CODES.items() if code not in DYNAMIC_CODES and name != "LEARNED"
)
DYNAMIC = ["SEXP", "LEXP", "WFP3", "UNICEF", "LINEAR:wait=-1,p=1e-3"]
ORIGIN = 1.7e9  # a live origin: Unix seconds


def _queue(rng, n: int, now: float, first_id: int = 1, classes: bool = False) -> list[PendingJob]:
    submit = now - rng.exponential(20_000.0, n)
    return [
        PendingJob(
            first_id + k,
            float(submit[k]),
            int(rng.integers(1, 512)),
            float(rng.choice([60.0, 600.0, 3600.0, 86400.0]) * rng.uniform(0.1, 1.0)),
            runtime_class=RuntimeClass(int(rng.integers(0, 2))) if classes else RuntimeClass.UNKNOWN,
        )
        for k in range(n)
    ]


def _decide(jobs, now, policy, **kw):
    config = CoreConfig.from_names(policy, "easy", threshold=50_000.0, **kw)
    snap = Snapshot(now=now, total_procs=512, free_procs=0, pending=tuple(jobs), time_origin=ORIGIN)
    return schedule(snap, config)


@pytest.mark.parametrize("policy", [*STATIC[:-1], *DYNAMIC])  # STATIC[-1] is LINEAR without weights
@pytest.mark.parametrize("classes", [False, True])
def test_values_never_invert_the_cores_order(policy, classes):
    rng = np.random.default_rng(3)
    now = ORIGIN + 5e6
    queue = _queue(rng, 400, now, classes=classes)
    decisions = _decide(queue, now, policy, use_classes=classes)
    values = [decisions.priority[j] for j in decisions.order]
    assert all(a >= b for a, b in zip(values, values[1:], strict=False))
    assert 1 <= min(values) and max(values) <= MAX_VALUE
    # Two jobs share a value only when their keys agree to about 5e-7 (relative).
    jobs = {j.job_id: j for j in queue}
    parsed = parse_policy(policy)
    for a, b in zip(decisions.order, decisions.order[1:], strict=False):
        if decisions.priority[a] == decisions.priority[b]:
            ka, kb = (
                priority_key(
                    parsed.code,
                    parsed.weight_array(),
                    now,
                    ORIGIN,
                    jobs[j].submit,
                    jobs[j].procs,
                    jobs[j].requested_time,
                )
                for j in (a, b)
            )
            assert ka == pytest.approx(kb, rel=2e-6, abs=1e-30), (a, b)


@pytest.mark.parametrize("policy", [name for name in STATIC if name != "LINEAR"] + ["LINEAR:q=1,r=2"])
def test_static_values_do_not_change_when_jobs_arrive_or_time_passes(policy):
    rng = np.random.default_rng(5)
    now = ORIGIN + 5e6
    queue = [j for j in _queue(rng, 300, now) if now - j.submit < 40_000]  # none starves below
    before = _decide(queue, now, policy).priority
    arrivals = _queue(rng, 100, now + 600, first_id=10_000)
    after = _decide(queue + arrivals, now + 600, policy).priority
    assert {j: after[j] for j in before} == before


def test_wfp3_values_change_only_when_the_quantised_wait_changes():
    rng = np.random.default_rng(8)
    now = ORIGIN + 5e6
    queue = [j for j in _queue(rng, 500, now) if now - j.submit < 40_000]
    before = _decide(queue, now, "WFP3", wait_quantum=60.0).priority
    later = now + 60.0
    after = _decide(queue, later, "WFP3", wait_quantum=60.0).priority
    crossed = {
        j.job_id
        for j in queue
        if quantised_wait(now - j.submit, 60.0) != quantised_wait(later - j.submit, 60.0)
    }
    changed = {j for j in before if before[j] != after[j]}
    assert changed <= crossed
    assert 0 < len(crossed) < len(queue) / 4  # most jobs keep their value over a cycle
    # Without the quantum, nearly every value moves every cycle: the churn this avoids.
    exact_before = _decide(queue, now, "WFP3").priority
    exact_after = _decide(queue, later, "WFP3").priority
    assert sum(exact_before[j] != exact_after[j] for j in exact_before) > len(queue) / 2


def test_a_starving_job_moves_to_the_top_band_once():
    job = PendingJob(1, ORIGIN + 1000.0, 4, 3600.0)
    other = PendingJob(2, ORIGIN + 50_000.0, 1, 60.0)
    young = _decide([job, other], ORIGIN + 40_000.0, "SPF").priority
    starved = _decide([job, other], ORIGIN + 60_000.0, "SPF").priority
    later = _decide([job, other], ORIGIN + 90_000.0, "SPF").priority
    assert young[2] > young[1]  # SPF: the short job first
    assert starved[1] > starved[2] and starved[1] > 2 * BAND  # waited > T: above everything
    assert later == starved


def test_key_levels_are_monotone_over_the_float_range():
    keys = np.array(
        [
            -np.inf,
            -1e300,
            -3.4e38,
            -1e10,
            -1.0,
            -1e-30,
            -0.0,
            0.0,
            1e-45,
            1e-30,
            1.0,
            1.0 + 1e-6,
            1e10,
            3.4e38,
            1e300,
            np.inf,
        ]
    )
    levels = key_levels(keys)
    assert np.all(np.diff(levels) >= 0)
    assert levels[6] == levels[7]  # -0.0 and 0.0 are the same key
    assert levels[10] < levels[11]  # a relative difference of 1e-6 is resolved
    values = priority_values(np.array([0, 1, 2] * 5 + [1]), keys, 6, 0.0)
    assert values.min() >= 1 and values.max() <= MAX_VALUE < 2**31


# -- site.priority_weight: scaled into [1, W] ------------------------------------------------
WEIGHTS = [1, 2, 3, 5, 7, 10, 1000, MAX_VALUE - 1, MAX_VALUE]


@pytest.mark.parametrize("weight", WEIGHTS)
def test_no_scaled_value_is_zero_and_the_order_is_kept(weight):
    """0 is Flux's hold (the plugin's ``combine = "replace"`` makes the value the priority) and
    Slurm's held total: every value rush gives a job it does not hold scales to at least 1, the
    lowest (a job released as infeasible) to 1 itself, the highest to the weight; monotone. Main
    scaled into [0, W]: ``LOWEST_VALUE`` and the low-ranked jobs to 0."""
    rng = np.random.default_rng(weight)
    values = np.unique(
        np.concatenate(
            [
                [LOWEST_VALUE, 2, 3, BAND - 1, BAND, BAND + 1, 2 * BAND, MAX_VALUE - 1, MAX_VALUE],
                rng.integers(1, MAX_VALUE + 1, 2000),
            ]
        )
    )
    out = scaled(values, weight)
    assert out.min() >= 1 and out.max() <= weight
    assert out[values == LOWEST_VALUE][0] == 1 and out[values == MAX_VALUE][0] == weight
    assert (np.diff(out) >= 0).all()  # order kept (near ties may merge)
    if weight == MAX_VALUE:
        assert (out == values).all()  # the full range: unchanged


@pytest.mark.parametrize("weight", [1, 2, 1000])
def test_a_released_infeasible_job_and_the_lowest_ranked_job_are_never_priority_zero(weight):
    """Through the core's decisions: with a small weight the last-ranked job (band 0: a
    predicted-large job) and a job read as infeasible (released at the lowest value) get 1."""
    now = ORIGIN + 1e5
    one = Request(nodes=1, cores_per_node=1)
    jobs = [
        PendingJob(1, now - 50, 1, 60.0, runtime_class=RuntimeClass.SMALL, request=one),
        PendingJob(2, now - 40, 1, 86_400.0, runtime_class=RuntimeClass.LARGE, request=one),
        PendingJob(3, now - 30, 3, 60.0, request=Request(nodes=3, cores_per_node=1)),  # 2 nodes here
    ]
    config = CoreConfig.from_names("SPF", "easy", use_classes=True, priority_weight=weight)
    nodes = (Node("n0", 4), Node("n1", 4))
    snap = Snapshot(
        now=now, total_procs=8, free_procs=8, pending=tuple(jobs), time_origin=ORIGIN, nodes=nodes
    )
    decisions = schedule(snap, config, explain_priorities=True)
    assert [d.job_id for d in decisions.of("infeasible")] == [3]
    assert decisions.priority[3] == 1 and decisions.of("infeasible")[0].value == 1
    assert decisions.order[-1] == 2 and decisions.priority[2] >= 1
    assert decisions.priority[1] >= decisions.priority[2]
