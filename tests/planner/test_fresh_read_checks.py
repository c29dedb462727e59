"""The snapshot builder's checks on a daemon's fresh read, against the rules they replace
(issue 31 item 3, round 30): the kept job served again only when it equals the fresh one by
RJMSJob's own ``==`` (the builder compares two plain jobs by their field dicts), and the
words' selection asking ``keep`` with Python ints whatever the value column's dtype."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rush.core.priority_explanations import PriorityExplanations
from rush.core.resources import Request
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob

NOW = 1_700_000_000.0


@dataclasses.dataclass(frozen=True)
class TaggedJob(RJMSJob):
    """A subclass: compared by its own ``==`` (never equal to a plain RJMSJob)."""


# A different value for each field a pending job can change and stay pending.
CHANGES = {
    "submit": lambda j: j.submit + 1.0,
    "procs": lambda j: j.procs + 1,
    "requested_time": lambda j: j.requested_time + 60.0,
    "start": lambda j: 5.0,
    "user": lambda j: j.user + "x",
    "account": lambda j: "acct",
    "partition": lambda j: "debug",
    "name": lambda j: "renamed",
    "tags": lambda j: {**j.tags, "app": "lammps"},
    "reason": lambda j: "Priority",
    "site_factor": lambda j: j.site_factor + 1,
    "restarts": lambda j: j.restarts + 1,
    "priority": lambda j: math.nan,  # a fresh NaN: unequal, as in the tuples' comparison
    "fairshare": lambda j: 0.25 if j.fairshare is None else None,
    "request": lambda j: Request(3, 7),
    "request_note": lambda j: "unread",
    "allocation": lambda j: (("n0", 1, 0),),
}


def first_read(rng: np.random.Generator, n: int) -> list[RJMSJob]:
    jobs = []
    for job_id in range(1, n + 1):
        kind = TaggedJob if rng.random() < 0.1 else RJMSJob
        jobs.append(
            kind(
                job_id,
                "PENDING",
                NOW - float(rng.integers(1, 50_000)),
                int(rng.integers(1, 64)),
                float(rng.integers(60, 86_400)),
                user=f"user{int(rng.integers(0, 9))}",
                tags={"class": "small"} if rng.random() < 0.3 else {},
                priority=math.nan if rng.random() < 0.1 else float(rng.integers(0, 1_000)),
                request=None
                if rng.random() < 0.4
                else Request(int(rng.integers(1, 4)), int(rng.integers(1, 9))),
            )
        )
    return jobs


def fresh_copy(rng: np.random.Generator, job: RJMSJob) -> RJMSJob:
    """The job as a new read gives it: a new object, equal (values rebuilt, or the same objects),
    unequal in one field, or read as the other class."""
    roll = rng.random()
    if roll < 0.35:  # equal, every container and string rebuilt
        request = job.request if job.request is None else Request(*dataclasses.astuple(job.request))
        return dataclasses.replace(job, user="".join(job.user), tags=dict(job.tags), request=request)
    if roll < 0.55:  # equal, the same value objects (a NaN priority too: the same object)
        return dataclasses.replace(job)
    if roll < 0.65:  # the other class, the same fields
        kind = RJMSJob if type(job) is TaggedJob else TaggedJob
        return kind(**{f.name: getattr(job, f.name) for f in dataclasses.fields(job)})
    name = str(rng.choice(sorted(CHANGES)))
    return dataclasses.replace(job, **{name: CHANGES[name](job)})


@pytest.mark.parametrize("seed", range(8))
def test_the_kept_job_is_served_only_when_equal_by_its_own_eq(seed: int) -> None:
    rng = np.random.default_rng(seed)
    builder = SnapshotBuilder()
    jobs = first_read(rng, int(rng.integers(20, 120)))
    builder.build(ClusterState(NOW, 1_000, 1_000, tuple(jobs)), {})
    for cycle in range(4):
        fresh = [fresh_copy(rng, j) for j in jobs]
        built = builder.build(ClusterState(NOW + cycle + 1, 1_000, 1_000, tuple(fresh)), {})
        # The reference: RJMSJob's dataclass __eq__ (a subclass's own), asked job by job.
        served = {old.job_id for old, new in zip(jobs, fresh, strict=True) if old == new}
        assert set(built.kept_jobs) == served
        assert all(built.kept_jobs[i] is old for i, old in ((j.job_id, j) for j in jobs) if i in served)
        jobs = [built.kept_jobs.get(j.job_id, j) for j in fresh]


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64])
def test_the_words_selection_asks_with_python_ints(dtype) -> None:
    rng = np.random.default_rng(3)
    n = 200
    values = rng.integers(-50, 50, n)
    explained = PriorityExplanations(
        np.arange(1, n + 1, dtype=np.int64),
        rng.integers(0, 3, n).astype(np.int64),
        rng.uniform(0.0, 100.0, n),
        values.astype(dtype),
        ("starved", "first", "second"),
        "FCFS",
        "submit",
    )
    asked = []

    def keep(ids, vals):
        asked.extend(vals)
        return (v % 3 != 0 for v in vals)

    sent, later = explained.split_where(keep, 40)
    assert asked == values.tolist() and all(type(v) is int for v in asked)
    kept = [int(k) for k in np.argsort(-values, kind="stable") if values[k] % 3 != 0]
    assert [d.job_id for d in sent] == [k + 1 for k in kept[:40]]
    assert later == [(k + 1, int(values[k])) for k in kept[40:]]
