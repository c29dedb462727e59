"""EASY on real Parallel Workloads Archive traces: properties on every job, and the plain
oracle (tests/core/reference.py) job by job on the whole trace.

Traces come from the mirror (RUSH_TRACE_MIRROR, ../shared/traces in CI); without it the
tests are skipped with the reason.
"""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.simulator.engine import simulate
from tests.core.properties import assert_reservations_kept, assert_valid_schedule
from tests.core.real_traces import TRACES, real_workload
from tests.core.reference import reference_schedule

POLICIES = ("FCFS", "SPF", "SAF")


@pytest.mark.parametrize("trace", sorted(TRACES))
@pytest.mark.parametrize("policy", POLICIES)
def test_easy_properties_on_full_trace(trace, policy):
    w = real_workload(trace)
    result = simulate(w, CoreConfig.from_names(policy, "easy", 200_000))
    assert_valid_schedule(result)
    assert result.backfilled.sum() > 0
    if policy == "FCFS":
        # FCFS keeps the head the head, so every promised shadow time is kept.
        assert_reservations_kept(result)


@pytest.mark.parametrize("trace", sorted(TRACES))
def test_fcfs_without_backfilling_preserves_order(trace):
    result = simulate(real_workload(trace), CoreConfig.from_names("FCFS", "none", 200_000))
    assert_valid_schedule(result)
    assert (np.diff(result.start) >= 0).all()
    assert not result.backfilled.any()


@pytest.mark.parametrize("trace", sorted(TRACES))
def test_conservative_properties_on_full_trace(trace):
    result = simulate(real_workload(trace), CoreConfig.from_names("FCFS", "conservative", 200_000))
    assert_valid_schedule(result)
    assert_reservations_kept(result)


ORACLE_JOBS = 400_000  # whole traces; the oracle takes a few seconds each


@pytest.mark.parametrize("trace", sorted(TRACES))
@pytest.mark.parametrize("policy", POLICIES)
def test_easy_start_times_match_oracle(trace, policy):
    w = real_workload(trace)
    prefix = w.subset(np.arange(min(ORACLE_JOBS, len(w))))
    result = simulate(prefix, CoreConfig.from_names(policy, "easy", 200_000))
    keys = {
        "FCFS": lambda j, t: prefix.submit[j],
        "SPF": lambda j, t: prefix.requested_time[j],
        "SAF": lambda j, t: prefix.requested_time[j] * prefix.procs[j],
    }
    expected_start, expected_backfilled = reference_schedule(
        prefix.submit.tolist(),
        prefix.runtime.tolist(),
        prefix.requested_time.tolist(),
        prefix.procs.tolist(),
        prefix.machine_procs,
        keys[policy],
        200_000.0,
        True,
    )
    mismatched = np.flatnonzero(result.start != np.asarray(expected_start))
    assert len(mismatched) == 0, (
        f"{len(mismatched)} start times differ, first job {prefix.job_id[mismatched[:3]]}"
    )
    assert result.backfilled.tolist() == expected_backfilled
