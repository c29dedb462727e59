"""The journal's queue rows read from the pass's pending columns (rush/planner/queue_view.py over
rush.core.job_columns.PendingRows): the same rows as from the core jobs, and no core job made.

Over random queues (several seeds, cycles of one builder with its memo of row inputs): jobs with
no estimate, an estimate of their own, an estimate equal to their request (a row says 3600.0, not
"no estimate"), a fairshare factor or none, predicted runtime quantiles, running jobs, journal
records; estimates that appear, change and go between cycles. Each pending row's fields are
checked against the job's core job (made after the rows), and every row against the rows of the
same pass with the pending jobs given as a tuple of core jobs."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.job_columns import PendingRows
from rush.core.names import NEUTRAL_FAIRSHARE
from rush.core.policies import parse_policy
from rush.core.schedule import schedule
from rush.core.snapshot import RuntimeQuantiles
from rush.planner.journal import JobRecord, QueueRow
from rush.planner.queue_view import QueueView, queue_rows
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob
from tests.planner.set_answers import SetRuntimes, keep_latest

NOW = 1_700_000_000.0
POLICY = "LINEAR:p=1,q=100"
CONFIG = CoreConfig(policy=parse_policy(POLICY), threshold=None, backfill="easy")
FREE = 24  # processors free beside the running jobs (a bag, no nodes): most jobs wait


def _job(rng: np.random.Generator, job_id: int, now: float) -> RJMSJob:
    running = rng.random() < 0.15
    return RJMSJob(
        job_id,
        "RUNNING" if running else "PENDING",
        now - float(rng.integers(1, 20_000)),
        int(rng.integers(1, 9)),
        float(rng.choice([600.0, 3_600.0, 7_200.0])),
        start=now - float(rng.integers(1, 500)) if running else None,
        user=f"u{int(rng.integers(0, 5))}",
        tags={"class": "small"} if rng.random() < 0.2 else {},
        fairshare=None if rng.random() < 0.5 else float(rng.random()),
    )


def _set_runtime(
    rng: np.random.Generator, runtimes: SetRuntimes, job: RJMSJob, pending_quantiles: bool
) -> None:
    """No estimate, one of its own, or one equal to its request; quantiles for some jobs (pending
    ones too if ``pending_quantiles``)."""
    draw = rng.random()
    runtimes.estimate.pop(job.job_id, None)
    if draw < 0.3:
        runtimes.estimate[job.job_id] = job.requested_time
    elif draw < 0.6:
        runtimes.estimate[job.job_id] = float(rng.integers(60, int(job.requested_time)))
    runtimes.quantiles.pop(job.job_id, None)
    if rng.random() < 0.3 and (pending_quantiles or job.state == "RUNNING"):
        low = float(rng.integers(30, 300))
        runtimes.quantiles[job.job_id] = RuntimeQuantiles((0.25, 0.5, 0.75), (low, 2 * low, 4 * low))


@pytest.mark.parametrize("seed", range(6))
def test_queue_rows_from_the_columns_are_the_rows_from_the_core_jobs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    # A pending job's quantiles make the pass read every core job (its rule L2 reads them there),
    # as do priorities explained in words: in half the seeds only running jobs have quantiles and
    # no priority is explained (the Flux module's pass), so that the rows' reading none shows.
    pending_quantiles = seed % 2 == 0
    runtimes = SetRuntimes()
    builder = SnapshotBuilder(runtime=runtimes)
    jobs = [_job(rng, job_id, NOW) for job_id in range(1, 121)]
    for job in jobs:
        _set_runtime(rng, runtimes, job, pending_quantiles)
    records = {
        j.job_id: JobRecord(j.job_id, skips=int(rng.integers(0, 3))) for j in jobs if rng.random() < 0.3
    }
    from_columns: dict[int, QueueRow] = {}
    from_jobs: dict[int, QueueRow] = {}
    memo: dict = {}
    same_as_request = own = none = 0
    for cycle in range(1, 5):
        now = NOW + 60.0 * cycle
        busy = sum(j.procs for j in jobs if j.state == "RUNNING")
        state = ClusterState(now, busy + FREE, FREE, tuple(jobs))
        built = builder.build(state, records)
        pending = built.snapshot.pending
        assert isinstance(pending, PendingRows)
        decided = schedule(built.snapshot, CONFIG, explain_priorities=pending_quantiles)
        made = pending.made()
        assert pending_quantiles or made < len(pending) // 2
        rows = queue_rows(QueueView(cycle, now, state, built, decided, CONFIG, POLICY), from_columns, memo)
        assert pending.made() == made  # the rows read the columns: no core job made for them
        keep_latest(rows, from_columns)
        # The same pass with the pending jobs as their core jobs (made now, from the builder's entries).
        core_jobs = tuple(pending)
        as_jobs = dataclasses.replace(built, snapshot=dataclasses.replace(built.snapshot, pending=core_jobs))
        want = queue_rows(QueueView(cycle, now, state, as_jobs, decided, CONFIG, POLICY), from_jobs)
        assert rows == want, cycle
        keep_latest(want, from_jobs)
        # Each pending job's row, field by field, against its core job.
        for p in core_jobs:
            row = from_columns[p.job_id]
            if p.estimate is None:
                assert row.estimate is None, p.job_id
                none += 1
            else:
                assert type(row.estimate) is float and row.estimate == p.estimate, p.job_id
                same_as_request += p.estimate == p.requested_time
                own += p.estimate != p.requested_time
            assert row.runtime_class == int(p.runtime_class) and type(row.runtime_class) is int
            assert row.fairshare == p.fairshare and (row.fairshare is None) == (p.fairshare is None)
            stored = json.loads(row.priority_terms)["inputs"]
            assert stored["p"] == (p.requested_time if p.estimate is None else p.estimate), p.job_id
            fairshare = NEUTRAL_FAIRSHARE if p.fairshare is None else p.fairshare
            assert stored["fairshare"] == fairshare and stored["q"] == p.procs
        # Between cycles: some estimates appear, change or go; arrivals; some jobs leave.
        for job in jobs:
            if rng.random() < 0.2:
                _set_runtime(rng, runtimes, job, pending_quantiles)
        jobs = [j for j in jobs if rng.random() < 0.9]
        jobs += [_job(rng, 1_000 * cycle + k, now) for k in range(10)]
        for job in jobs[-10:]:
            _set_runtime(rng, runtimes, job, pending_quantiles)
    assert min(same_as_request, own, none) > 20  # each kind of estimate was written
