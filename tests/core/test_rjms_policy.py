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
