"""The snapshot's jobs read as columns once (rush.core.job_columns) and what schedule() builds
from them: the values each job gives, and decisions that do not depend on the order the RJMS
lists its jobs in or on how many jobs share one request shape."""

from __future__ import annotations

import math

import numpy as np

from rush.core.config import CoreConfig
from rush.core.job_columns import pending_columns, running_columns
from rush.core.names import NEUTRAL_FAIRSHARE
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, RuntimeClass, Snapshot


def test_columns_hold_each_jobs_values_with_defaults_for_the_unknown() -> None:
    pending = (
        PendingJob(7, 5.0, 4, 600.0, estimate=None, fairshare=None, skips=2, reserved_at=900.0),
        PendingJob(3, 1.0, 2, 300.0, estimate=120.0, runtime_class=RuntimeClass.SMALL, fairshare=0.25),
        PendingJob(9, 2.0, 1, 100.0, estimate=math.nan, idempotent=True, variable=True, rjms_priority=4.0),
    )
    columns = pending_columns(pending)
    assert columns.job_id.tolist() == [7, 3, 9]
    assert columns.estimate[:2].tolist() == [600.0, 120.0]  # none given: the request
    assert math.isnan(columns.estimate[2])  # a NaN given stays NaN, for the check to refuse
    assert columns.fairshare.tolist() == [NEUTRAL_FAIRSHARE, 0.25, NEUTRAL_FAIRSHARE]
    assert columns.runtime_class.tolist() == [int(RuntimeClass.UNKNOWN), int(RuntimeClass.SMALL), -1]
    assert columns.idempotent.tolist() == [False, False, True] and columns.variable.tolist() == [0, 0, 1]
    assert columns.skips.tolist() == [2, 0, 0] and columns.reserved_at[0] == 900.0
    assert columns.take(np.array([2, 0])).job_id.tolist() == [9, 7]
    assert columns.take(np.array([1])).request == (None,)
    running = running_columns((RunningJob(1, 10.0, 8, 50.0), RunningJob(2, 20.0, 4, 70.0, estimate=30.0)))
    assert running.estimate.tolist() == [50.0, 30.0] and running.start.tolist() == [10.0, 20.0]
    assert len(pending_columns(()).job_id) == 0


def _queue(rng: np.random.Generator) -> tuple[PendingJob, ...]:
    """Jobs sharing a handful of request shapes (equal shapes as distinct objects), some that
    can never run here, some without a request."""
    shapes = [None, Request(1, 4), Request(2, 8), Request(1, 8, exclusive=True), Request(9, 8), Request(0, 3)]
    jobs = []
    for job_id in range(1, 61):
        shape = shapes[int(rng.integers(0, len(shapes)))]
        request = (
            None if shape is None else Request(shape.nodes, shape.cores_per_node, exclusive=shape.exclusive)
        )
        procs = int(rng.integers(1, 9)) if request is None else request.procs(8)
        submit = float(rng.integers(0, 20))  # ties: ordered by job id
        jobs.append(PendingJob(job_id, submit, procs, float(rng.integers(50, 500)), request=request))
    return tuple(jobs)


def test_decisions_do_not_depend_on_the_order_jobs_are_listed_in() -> None:
    rng = np.random.default_rng(3)
    nodes = tuple(Node(f"n{i}", 8, leaf=i // 2, free_cores=0 if i < 2 else None) for i in range(6))
    running = (RunningJob(100, 0.0, 16, 400.0, allocation=(Slot(0, 8), Slot(1, 8))),)
    pending = _queue(rng)
    listed = tuple(pending[k] for k in rng.permutation(len(pending)))
    decided = []
    for jobs in (pending, listed):
        snapshot = Snapshot(
            now=30.0, total_procs=48, free_procs=32, pending=jobs, running=running, nodes=nodes
        )
        decided.append(schedule(snapshot, CoreConfig(backfill="easy")))
    assert decided[0] == decided[1]
    infeasible = {d.job_id for d in decided[0].decisions if d.action == "infeasible"}
    # 9 nodes on a machine of 6: never; everything else fits the machine.
    assert infeasible == {p.job_id for p in pending if p.request is not None and p.request.nodes == 9}
    assert infeasible and any(d.action in ("start", "backfill") for d in decided[0].decisions)
