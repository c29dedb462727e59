"""EASY on real Parallel Workloads Archive traces: properties on every job, and the plain
oracle (tests/core/reference.py) job by job on the whole trace.

Traces come from the mirror (RUSH_TRACE_MIRROR, ../shared/traces in CI); without it the
tests are skipped with the reason.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.sim.engine import simulate
from rush.workload.model import Workload, workload_from_trace
from tests.core.properties import assert_reservations_kept, assert_valid_schedule
from tests.core.reference import reference_schedule

MIRROR = Path(os.environ.get("RUSH_TRACE_MIRROR", Path(__file__).parents[3] / "shared" / "traces"))
TRACES = {
    "KTH-SP2": "KTH-SP2-1996-2.1-cln.swf.gz",
    "SDSC-SP2": "SDSC-SP2-1998-4.2-cln.swf.gz",
    "CTC-SP2": "CTC-SP2-1996-3.1-cln.swf.gz",
}
POLICIES = ("FCFS", "SPF", "SAF")


@cache
def real_workload(name: str) -> Workload:
    path = MIRROR / TRACES[name]
    if not path.exists():
        pytest.skip(f"trace {path} not available: set RUSH_TRACE_MIRROR to the traces directory")
    from rush.workload.swf import read_swf

    return workload_from_trace(read_swf(path))


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
