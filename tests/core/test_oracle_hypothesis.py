"""The compiled core against the plain oracle on random workloads (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.helpers import run, workload
from tests.core.properties import assert_reservations_kept, assert_valid_schedule
from tests.core.reference import reference_schedule

KEYS = {
    "FCFS": lambda w: lambda j, t: w.submit[j],
    "SPF": lambda w: lambda j, t: w.requested_time[j],
    "SAF": lambda w: lambda j, t: w.requested_time[j] * w.procs[j],
}


@st.composite
def workloads(draw):
    machine = draw(st.integers(1, 16))
    n = draw(st.integers(1, 25))
    jobs = []
    for _ in range(n):
        submit = draw(st.integers(0, 200))
        procs = draw(st.integers(1, machine))
        requested = draw(st.integers(1, 100))
        # Runtimes at, below and above the request (the latter are killed at p~).
        runtime = draw(st.one_of(st.just(requested), st.integers(0, 150)))
        jobs.append((submit, procs, runtime, requested))
    return machine, jobs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case=workloads(),
    policy=st.sampled_from(sorted(KEYS)),
    backfill=st.sampled_from(["easy", "none"]),
    threshold=st.sampled_from([None, 0.0, 30.0, 200000.0]),
)
def test_core_matches_oracle(case, policy, backfill, threshold):
    machine, jobs = case
    w = workload(machine, jobs)
    result = run(w, policy=policy, backfill=backfill, threshold=threshold)
    expected_start, expected_backfilled = reference_schedule(
        w.submit.tolist(),
        w.runtime.tolist(),
        w.requested_time.tolist(),
        w.procs.tolist(),
        machine,
        KEYS[policy](w),
        threshold,
        backfill == "easy",
    )
    assert result.start.tolist() == expected_start
    assert result.backfilled.tolist() == expected_backfilled
    assert_valid_schedule(result)
    if policy == "FCFS":
        assert_reservations_kept(result)
    if backfill == "none" and policy == "FCFS":
        assert (np.diff(result.start) >= 0).all(), "FCFS without backfilling preserves order"


@settings(max_examples=200, deadline=None)
@given(case=workloads(), policy=st.sampled_from(["FCFS", "SPF", "SAF", "WFP3", "F1", "UNICEF"]))
def test_conservative_properties(case, policy):
    machine, jobs = case
    w = workload(machine, jobs)
    result = run(w, policy=policy, backfill="conservative", threshold=None)
    assert_valid_schedule(result)
    if policy == "FCFS":
        # With FCFS every later arrival queues behind: reservations only move earlier.
        assert_reservations_kept(result)
