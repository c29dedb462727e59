"""The snapshot builder's pending jobs, field by field, against each field written out from what
the builder is given (the RJMS's job, its rush tags, the journal's record), by the rules its
docstring states: over random queues with tagged and untagged jobs, journaled and new ones, across
cycles of one builder (its kept jobs rebuilt when a record changes). The builder makes each
PendingJob positionally and takes a shortcut for untagged jobs with no record: a field out of
place, or a shortcut that differs from the full rule, fails here."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rush.core.resources import Request
from rush.core.runtime_classes import class_by_precedence
from rush.core.snapshot import PendingJob, RuntimeClass
from rush.models.users import user_key
from rush.planner.journal import JobRecord
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob

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


@pytest.mark.parametrize("seed", range(8))
def test_pending_jobs_field_by_field(seed: int) -> None:
    rng = np.random.default_rng(seed)
    builder = SnapshotBuilder()
    jobs = [random_job(rng, job_id) for job_id in range(1, 301)]
    records = {j.job_id: random_record(rng, j.job_id) for j in jobs if rng.random() < 0.4}
    shortcut = 0
    for cycle in range(5):
        built = builder.build(ClusterState(NOW + cycle, 512, 512, tuple(jobs)), records)
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
