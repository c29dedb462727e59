"""The RJMS policy: the core orders by the RJMS's own priority (Flux urgency and priority
plugins, Slurm's multifactor priority), so an urgency change reorders rush's queue as it
reorders sched-backfill's."""

from __future__ import annotations

import math

import pytest

from rush.core.config import CoreConfig
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, Snapshot
from rush.errors import RushError


def _queue(priorities: list[float]) -> Snapshot:
    pending = tuple(PendingJob(k + 1, float(k), 4, 100.0, rjms_priority=p) for k, p in enumerate(priorities))
    return Snapshot(now=10.0, total_procs=4, free_procs=4, pending=pending)


def test_highest_rjms_priority_starts_first_and_ties_keep_submit_order() -> None:
    config = CoreConfig.from_names("RJMS", "easy", None)
    decisions = schedule(_queue([16, 16, 31, 0.5]), config)
    assert decisions.order == [3, 1, 2, 4]
    assert decisions.job_ids("start") == [3]
    # An urgency change (job 4 expedited) reorders the next pass.
    assert schedule(_queue([16, 16, 31, 1e9]), config).job_ids("start") == [4]


def test_a_non_finite_rjms_priority_is_refused() -> None:
    with pytest.raises(RushError, match="RJMS priority"):
        schedule(_queue([1.0, math.nan]), CoreConfig.from_names("RJMS", "easy", None))


def test_the_simulator_refuses_the_rjms_policy() -> None:
    from rush.simulator.engine import simulate
    from rush.workload.lublin import lublin_generate
    from rush.workload.model import workload_from_trace

    workload = workload_from_trace(lublin_generate(50, seed=1))
    with pytest.raises(RushError, match="RJMS's own priority"):
        simulate(workload, CoreConfig.from_names("RJMS", "easy", None))


# -- the RJMS's priority first, the policy among equal priorities (rush as Flux's scheduler) --
def _jobs(rows: list[tuple[float, float, float]]) -> Snapshot:
    """(submit, walltime, RJMS priority) per job; ids 1, 2, ... in that order."""
    pending = tuple(
        PendingJob(k + 1, submit, 4, walltime, rjms_priority=priority)
        for k, (submit, walltime, priority) in enumerate(rows)
    )
    return Snapshot(now=1000.0, total_procs=4, free_procs=4, pending=pending)


def test_rjms_priority_first_then_the_policy_among_equal_priorities() -> None:
    config = CoreConfig.from_names("SPF", "easy", None, rjms_priority_first=True)
    # Jobs 1-3 share Flux's default priority (16): SPF orders them (shortest first); job 4 was
    # expedited (31) and goes first although it is the longest; job 5 has a lower priority.
    snapshot = _jobs([(0, 300, 16), (1, 100, 16), (2, 200, 16), (3, 900, 31), (4, 10, 8)])
    decisions = schedule(snapshot, config)
    assert decisions.order == [4, 2, 3, 1, 5]
    assert decisions.job_ids("start") == [4]
    # Policy alone (the explicit opt-out): Flux's priority does not count.
    alone = schedule(snapshot, CoreConfig.from_names("SPF", "easy", None))
    assert alone.order == [5, 2, 3, 1, 4]


def test_equal_rjms_priorities_leave_the_policy_order_unchanged() -> None:
    rows = [(0, 300, 16), (1, 100, 16), (2, 200, 16), (3, 50, 16)]
    with_primary = schedule(_jobs(rows), CoreConfig.from_names("SPF", "easy", None, rjms_priority_first=True))
    alone = schedule(_jobs(rows), CoreConfig.from_names("SPF", "easy", None))
    assert with_primary.order == alone.order == [4, 2, 3, 1]
    assert with_primary.priority == alone.priority  # the values rush would send are the policy's


def test_starvation_counts_within_a_priority_not_across() -> None:
    config = CoreConfig.from_names("SPF", "easy", 500.0, rjms_priority_first=True)
    # Job 1 has waited 1000 s > T (starved), but job 3's priority is higher: it goes first;
    # among the priority-16 jobs the starved one goes ahead of the shorter job 2.
    decisions = schedule(_jobs([(0, 900, 16), (900, 10, 16), (950, 500, 20)]), config)
    assert decisions.order == [3, 1, 2]


def test_a_non_finite_priority_is_refused_as_primary_order() -> None:
    with pytest.raises(RushError, match="RJMS priority"):
        schedule(
            _jobs([(0, 1, 16), (1, 1, math.inf)]),
            CoreConfig.from_names("FCFS", "easy", None, rjms_priority_first=True),
        )
