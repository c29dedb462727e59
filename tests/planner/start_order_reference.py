"""The start-order checks as they were before :class:`rush.planner.start_order.StartOrderRead`
(each walking the read's jobs and ranking the last plan itself): the reference the checks on one
read are compared with (tests/planner/test_start_order_read.py)."""

from __future__ import annotations

from rush.core.snapshot import Decisions
from rush.rjms.base import ClusterState

EXPECTED = ("start", "backfill")


def started_out_of_order(previous: Decisions, state: ClusterState) -> list[tuple[int, int, list[int]]]:
    """(rank, job started, jobs it passed) per job the RJMS started ahead of an expected one."""
    rank = {job_id: k for k, job_id in enumerate(previous.order)}
    expected = [d.job_id for d in previous.among(EXPECTED)]
    now = {job.job_id: job.state for job in state.jobs}
    still_waiting = sorted((rank[j], j) for j in expected if j in rank and now.get(j) == "PENDING")
    if not still_waiting:
        return []
    started = sorted(
        (rank[job.job_id], job.job_id)
        for job in state.jobs
        if job.job_id in rank and job.state == "RUNNING" and job.start is not None
    )
    out = []
    for position, job_id in started:
        passed = [waiting for k, waiting in still_waiting if k < position]
        if passed:
            out.append((position, job_id, passed))
    return out


def expected_and_gone(previous: Decisions, state: ClusterState) -> list[int]:
    now = {job.job_id for job in state.jobs if job.state in ("PENDING", "RUNNING")}
    return [d.job_id for d in previous.among(EXPECTED) if d.job_id not in now]


def released_and_gone(previous: Decisions, state: ClusterState) -> list[int]:
    now = {job.job_id for job in state.jobs if job.state in ("PENDING", "RUNNING")}
    return [d.job_id for d in previous.of("infeasible") if d.value is not None and d.job_id not in now]


def released_left_pending(previous: Decisions, state: ClusterState) -> dict[int, str]:
    pending = {job.job_id for job in state.jobs if job.state == "PENDING"}
    return {
        d.job_id: d.reason for d in previous.of("infeasible") if d.value is not None and d.job_id in pending
    }


def left_pending(previous: Decisions, state: ClusterState) -> list[int]:
    rank = {job_id: k for k, job_id in enumerate(previous.order)}
    pending = {job.job_id for job in state.jobs if job.state == "PENDING"}
    last_started = max(
        (rank[job.job_id] for job in state.jobs if job.job_id in rank and job.state == "RUNNING"),
        default=-1,
    )
    return [
        d.job_id
        for d in previous.among(EXPECTED)
        if d.job_id in pending and rank.get(d.job_id, -1) > last_started
    ]


def rjms_started_any(previous: Decisions, state: ClusterState) -> bool:
    ranked = set(previous.order)
    return any(job.state == "RUNNING" and job.job_id in ranked for job in state.jobs)
