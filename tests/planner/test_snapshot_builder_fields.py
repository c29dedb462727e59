"""The snapshot builder's pending jobs, field by field, against each field written out from what
the builder is given (the RJMS's job, its rush tags, the journal's record), by the rules its
docstring states: over random queues with tagged and untagged jobs, journaled and new ones, across
cycles of one builder (its kept jobs rebuilt when a record changes). The builder makes each
PendingJob positionally and takes a shortcut for untagged jobs with no record: a field out of
place, or a shortcut that differs from the full rule, fails here. The builder writes the pass's
pending columns itself (rush.core.job_columns.PendingRows): each column against the same values
written out, the rows it writes again against the jobs that arrived or changed, and the core
jobs it makes against those the pass reads."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rush.core import CoreConfig
from rush.core.job_columns import PendingRows, pending_columns
from rush.core.resources import Node, Request
from rush.core.runtime_classes import class_by_precedence
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RuntimeClass
from rush.models.users import user_key
from rush.planner.journal import JobRecord
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob
from tests.planner.live_cycles import assert_same_decisions

NOW = 1_700_000_000.0
CLASS_TAGS = {"small": 0, "large": 1}
CLASS_NAMES = {0: "small", 1: "large", -1: "unknown"}


def random_job(rng: np.random.Generator, job_id: int) -> RJMSJob:
    tags: dict[str, str] = {}
    if rng.random() < 0.5:  # half the jobs carry some of rush's tags
        if rng.random() < 0.5:
            tags["idempotent"] = str(rng.choice(["1", "yes", "no", "TRUE"]))
        if rng.random() < 0.4:
            tags["class"] = str(rng.choice(["small", "large", "other"]))
        if rng.random() < 0.4:
            tags["requeues"] = str(int(rng.integers(0, 3)))
        if rng.random() < 0.3:
            tags["wtype"] = "network"
    return RJMSJob(
        job_id,
        "PENDING",
        NOW - float(rng.integers(1, 50_000)),
        int(rng.integers(1, 64)),
        float(rng.integers(60, 86_400)),
        user=f"user{int(rng.integers(0, 9))}",
        tags=tags,
        priority=float(rng.integers(0, 1_000)),
        fairshare=None if rng.random() < 0.5 else float(rng.random()),
        request=None if rng.random() < 0.5 else Request(int(rng.integers(1, 4)), int(rng.integers(1, 9))),
    )


def random_record(rng: np.random.Generator, job_id: int) -> JobRecord:
    return JobRecord(
        job_id,
        skips=int(rng.integers(0, 4)),
        requeues=int(rng.integers(0, 2)),
        predicted_class=int(rng.integers(-1, 2)),
        reserved_at=None if rng.random() < 0.5 else NOW + float(rng.integers(0, 9_000)),
    )


def expected(job: RJMSJob, rec: JobRecord | None) -> tuple[PendingJob, dict]:
    """The job's snapshot entry and journal outputs, each field from its documented source."""
    rec = rec or JobRecord(job.job_id)
    requeues = max(rec.requeues, int(job.tags.get("requeues", 0)))
    cls, source = class_by_precedence(
        requeues, CLASS_TAGS.get(job.tags.get("class", "")), rec.predicted_class, -1
    )
    want = PendingJob(
        job_id=job.job_id,
        submit=job.submit,
        procs=job.procs,
        requested_time=job.requested_time,
        estimate=None,
        runtime_class=RuntimeClass(cls),
        idempotent=job.tags.get("idempotent", "").lower() in ("1", "yes", "true"),
        variable=False,
        skips=rec.skips,
        user=user_key(job.user),
        requeues=requeues,
        reserved_at=math.inf if rec.reserved_at is None else rec.reserved_at,
        request=job.request,
        rjms_priority=job.priority,
        fairshare=job.fairshare,
    )
    outputs = {"runtime_class": CLASS_NAMES[cls], "class_source": "none" if source == "model" else source}
    return want, {**outputs, "variable": False}


def assert_columns_are(rows: PendingRows, wanted: list[PendingJob]) -> None:
    """The builder's columns, field by field, against the core's reader over ``wanted``."""
    read = pending_columns(wanted)
    for field in dataclasses.fields(read):
        got, want = getattr(rows.columns, field.name), getattr(read, field.name)
        if isinstance(want, np.ndarray):
            assert got.dtype == want.dtype, field.name
            np.testing.assert_array_equal(got, want, err_msg=field.name)
        else:
            assert tuple(got) == tuple(want), field.name


def record_values(rec: JobRecord | None) -> tuple | None:
    return None if rec is None else (rec.skips, rec.requeues, rec.predicted_class, rec.reserved_at)


@pytest.mark.parametrize("seed", range(8))
def test_pending_jobs_field_by_field(seed: int) -> None:
    rng = np.random.default_rng(seed)
    builder = SnapshotBuilder()
    jobs = [random_job(rng, job_id) for job_id in range(1, 301)]
    records = {j.job_id: random_record(rng, j.job_id) for j in jobs if rng.random() < 0.4}
    shortcut = 0
    last: dict[int, tuple] = {}
    for cycle in range(5):
        built = builder.build(ClusterState(NOW + cycle, 512, 512, tuple(jobs)), records)
        rows = built.snapshot.pending
        assert isinstance(rows, PendingRows) and rows.made() == 0  # nothing read yet
        # Its columns are written before any core job is made, from the same sources.
        assert_columns_are(rows, [expected(j, records.get(j.job_id))[0] for j in jobs])
        # Only the rows of jobs that arrived or whose record changed are written again.
        now = {j.job_id: (j, record_values(records.get(j.job_id))) for j in jobs}
        assert builder.rows_read == sum(last.get(job_id) != inputs for job_id, inputs in now.items())
        last = now
        assert [p.job_id for p in built.snapshot.pending] == [j.job_id for j in jobs]
        for job, got in zip(jobs, built.snapshot.pending, strict=True):
            want, outputs = expected(job, records.get(job.job_id))
            for field in dataclasses.fields(PendingJob):
                assert getattr(got, field.name) == getattr(want, field.name), (cycle, job.job_id, field.name)
            assert type(got.runtime_class) is RuntimeClass
            assert built.outputs[job.job_id] == outputs, (cycle, job.job_id)
            shortcut += not job.tags and job.job_id not in records
        # Between cycles: arrivals, departures, journal changes (a rebuilt entry), a new record.
        jobs = [j for j in jobs if rng.random() < 0.9]
        jobs += [random_job(rng, 1_000 * (cycle + 1) + k) for k in range(20)]
        for job_id in rng.choice([j.job_id for j in jobs], size=15, replace=False).tolist():
            records[job_id] = random_record(rng, job_id)
    assert shortcut > 100  # the untagged, unjournaled path was exercised


@pytest.mark.parametrize("seed", range(4))
def test_the_core_makes_jobs_only_for_its_decisions_and_decides_as_with_every_job(seed: int) -> None:
    """A pass over the builder's columns makes core jobs only for the jobs its decisions name,
    and decides as over the same jobs given as a tuple; listed out of submit order and across
    cycles (rows kept), on nodes and with conservative reservations."""
    rng = np.random.default_rng(100 + seed)
    nodes = tuple(Node(f"n{i}", 8) for i in range(16))
    builder = SnapshotBuilder()
    jobs = [random_job(rng, job_id) for job_id in range(1, 201)]
    rng.shuffle(jobs)  # the RJMS lists them in another order: the core reorders the rows
    records = {j.job_id: random_record(rng, j.job_id) for j in jobs if rng.random() < 0.3}
    for cycle in range(3):
        state = ClusterState(NOW + cycle, 128, 128, tuple(jobs), nodes=nodes)
        for backfill in ("easy", "conservative"):
            config = CoreConfig(backfill=backfill)
            rows = builder.build(state, records).snapshot
            decided = schedule(rows, config, explain_priorities=False)
            named = {d.job_id for d in decided.decisions}
            assert 0 < rows.pending.made() <= len(named)
            if backfill == "easy":  # (conservative names every job it reserves)
                assert rows.pending.made() < len(jobs) // 4
            every = dataclasses.replace(rows, pending=tuple(rows.pending))
            assert_same_decisions(schedule(every, config, explain_priorities=False), decided)
        jobs = [j for j in jobs if rng.random() < 0.9] + [
            random_job(rng, 1_000 + 10 * cycle + k) for k in range(5)
        ]


@pytest.mark.parametrize("seed", range(6))
def test_columns_of_a_shared_row_and_of_none_equal_the_columns_read_job_by_job(seed: int) -> None:
    # A first cycle of untagged jobs with no record shares one row: its columns are made whole
    # (rush.core.job_columns.Same), as is a column of None (no job with a fair-share factor);
    # against the core's reader over the same jobs, with every factor, none, or some given.
    rng = np.random.default_rng(seed)
    fairshare = ("none", "all", "some")[seed % 3]
    jobs = []
    for job_id in range(1, int(rng.integers(1, 200)) + 1):
        job = dataclasses.replace(random_job(rng, job_id), tags={})
        given = fairshare == "all" or (fairshare == "some" and rng.random() < 0.5)
        jobs.append(dataclasses.replace(job, fairshare=float(rng.random()) if given else None))
    built = SnapshotBuilder().build(ClusterState(NOW, 512, 512, tuple(jobs)), {})
    assert isinstance(built.snapshot.pending, PendingRows)
    assert_columns_are(built.snapshot.pending, [expected(j, None)[0] for j in jobs])
