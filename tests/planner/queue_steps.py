"""Test helpers for the planner's queue-row tests: one random step of a small queue between
passes (running jobs end, pending ones that fit start, new ones arrive), and its read."""

from __future__ import annotations

import random
from dataclasses import replace

from rush.rjms.base import ClusterState, RJMSJob


def random_step(
    rng: random.Random, jobs: dict[int, RJMSJob], now: float, next_id: list[int], total: int
) -> None:
    """End some running jobs, start what fits of the pending ones on ``total`` processors, queue
    new ones (ids from ``next_id[0]`` on)."""
    busy = 0
    for job_id, job in sorted(jobs.items()):
        if job.state == "RUNNING" and rng.random() < 0.3:
            del jobs[job_id]
        elif job.state == "RUNNING":
            busy += job.procs
    for job_id, job in sorted(jobs.items()):
        if job.state == "PENDING" and busy + job.procs <= total and rng.random() < 0.2:
            jobs[job_id] = replace(job, state="RUNNING", start=now)
            busy += job.procs
    for _ in range(rng.randrange(4)):
        jobs[next_id[0]] = RJMSJob(next_id[0], "PENDING", now, rng.choice([1, 2, 4]), 900.0, user="v")
        next_id[0] += 1


def read_of(jobs: dict[int, RJMSJob], now: float, fresh: bool, total: int) -> ClusterState:
    """The queue as an RJMS read at ``now`` on ``total`` processors: ``fresh``, new objects equal
    to the last (the daemon's read); else the objects kept while unchanged (the Flux module's)."""
    busy = sum(j.procs for j in jobs.values() if j.state == "RUNNING")
    listed = tuple(replace(j) for j in jobs.values()) if fresh else tuple(jobs.values())
    return ClusterState(now, total, total - busy, listed)
