"""Did the RJMS start jobs in rush's order? (priority mode: rush ranks, the RJMS starts.)

A cycle's ``start`` and ``backfill`` decisions are the jobs rush expects the RJMS to start
before the next cycle; the decisions' ``order`` is rush's ranking. When the next read shows
a job started while a job rush expected to start, ranked ahead of it, is still pending, the
RJMS reordered or refused that job (Fluxion's own reservation or match, a queue limit, a
constraint rush does not read): the journal says so with both jobs named, so that a site sees
where its scheduler and rush disagree. Nothing else changes: the next cycle ranks again.
"""

from __future__ import annotations

from rush.core.snapshot import Decisions
from rush.rjms.base import ClusterState

EXPECTED = ("start", "backfill")
MAX_REPORTED = 20  # lines per cycle; the count says how many there were


def started_out_of_order(previous: Decisions, state: ClusterState) -> list[str]:
    """One line per job the RJMS started ahead of a job rush expected it to start
    (``previous``: the last cycle's decisions; ``state``: this cycle's read)."""
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
    lines = []
    for position, job_id in started:
        passed = [waiting for k, waiting in still_waiting if k < position]
        if passed:
            shown = ", ".join(str(j) for j in passed[:5]) + (" ..." if len(passed) > 5 else "")
            lines.append(
                f"job {job_id} (rush's rank {position + 1}) started ahead of job(s) {shown}, which rush "
                "expected the RJMS to start; they are still pending (the RJMS reordered or refused them)"
            )
    return lines
