"""Did the RJMS start jobs in rush's order? (priority mode: rush ranks, the RJMS starts.)

A cycle's ``start`` and ``backfill`` decisions are the jobs rush expects the RJMS to start
before the next cycle; the decisions' ``order`` is rush's ranking. When the next read shows
a job started while a job rush expected to start, ranked ahead of it, is still pending, the
RJMS reordered or refused that job (Fluxion's own reservation or match, a queue limit, a
constraint rush does not read): the journal says so with both jobs named, so that a site sees
where its scheduler and rush disagree. Nothing else changes: the next cycle ranks again.

Two more disagreements are journaled, each naming the job:

* a job rush expected to start left the queue without starting (Fluxion refused it outright,
  ``unsatisfiable``): :func:`expected_and_gone` names the candidates (at most the jobs rush
  expected to start), the shell says whether and why each ended unstarted
  (``RJMSBackend.ended_unstarted``), :func:`ended_line` words it;
* a job rush read as infeasible and released to the RJMS at the lowest priority (the core's
  ``infeasible`` decision with a value) left the queue without starting (the RJMS refused it,
  as rush read it would): :func:`released_and_gone`, worded by :func:`released_line`;
* a job rush expected to start is still pending while the RJMS started no job rush ranked
  after it (:func:`left_pending`), reported only once it is a refusal rather than a job the
  RJMS has not yet got to (:class:`PendingEpisodes`): the job is so found at two consecutive
  reads (it stayed pending across a whole cycle), and at the later one the RJMS started
  nothing of rush's queue since the read before (it has settled: a scheduler still working
  through the jobs ranked ahead of it may not have reached it). Once per job per episode, an
  episode being the consecutive cycles in which the job is so found, not every cycle;
* a job rush read as infeasible and released to the RJMS that the RJMS keeps pending, neither
  starting nor refusing it (:func:`released_left_pending`, worded by
  :func:`released_pending_line`): Fluxion's backfilling queue policies (``easy``, ``hybrid``,
  ``conservative``) answer a request for more nodes than are up with EBUSY, not
  ``unsatisfiable``, and keep the job blocked until the resources change, as if down nodes
  might come back, even when the instance has no more nodes. Reported by the same rule as a
  job left pending (its own :class:`PendingEpisodes`): once per episode, once settled.
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


def expected_and_gone(previous: Decisions, state: ClusterState) -> list[int]:
    """The jobs rush expected the RJMS to start that this read no longer lists (ended, however
    briefly they ran: the shell tells which of them never started)."""
    now = {job.job_id for job in state.jobs if job.state in ("PENDING", "RUNNING")}
    return [d.job_id for d in previous.among(EXPECTED) if d.job_id not in now]


def ended_line(job_id: int, why: str) -> str:
    return f"job {job_id}, which rush expected the RJMS to start, ended without starting: {why}"


def released_and_gone(previous: Decisions, state: ClusterState) -> list[int]:
    """The jobs rush read as infeasible and released to the RJMS that this read no longer lists."""
    now = {job.job_id for job in state.jobs if job.state in ("PENDING", "RUNNING")}
    return [d.job_id for d in previous.of("infeasible") if d.value is not None and d.job_id not in now]


def released_line(job_id: int, why: str) -> str:
    return (
        f"job {job_id}, which rush read as infeasible and released to the RJMS, ended without "
        f"starting (the RJMS refused it too): {why}"
    )


def released_left_pending(previous: Decisions, state: ClusterState) -> dict[int, str]:
    """The jobs rush read as infeasible and released to the RJMS that this read finds still
    pending, with rush's reason."""
    pending = {job.job_id for job in state.jobs if job.state == "PENDING"}
    return {
        d.job_id: d.reason for d in previous.of("infeasible") if d.value is not None and d.job_id in pending
    }


def released_pending_line(job_id: int, reason: str) -> str:
    return (
        f"job {job_id}, which rush reads as infeasible ({reason}) and released to the RJMS at the "
        "lowest priority, is still pending: the RJMS has neither started nor refused it (it keeps "
        "the job, e.g. for nodes it expects to come back)"
    )


def left_pending(previous: Decisions, state: ClusterState) -> list[int]:
    """The jobs rush expected the RJMS to start that are still pending while no job rush ranked
    after them started (those :func:`started_out_of_order` names instead)."""
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
    """Whether the RJMS started any job of the last plan's queue since the read before."""
    ranked = set(previous.order)
    return any(job.state == "RUNNING" and job.job_id in ranked for job in state.jobs)


PENDING_READS = 2  # consecutive reads that find a job left pending before it is reported


class PendingEpisodes:
    """Which jobs :func:`left_pending` finds are refusals to report, once per episode.

    A job the RJMS has not yet got to when the next cycle reads (its scheduler slower than
    one cycle, or still starting the jobs ranked ahead of it) is not a refusal: a job is
    reported when it has been found at :data:`PENDING_READS` consecutive reads and, at the
    read that reports it, the RJMS started nothing of the last plan's queue (it has settled
    and still leaves the job pending). A job not found ends its episode; found again later, it
    starts a new one."""

    def __init__(self) -> None:
        self._reads: dict[int, int] = {}  # job -> consecutive reads that found it
        self._reported: set[int] = set()  # jobs reported in their current episode

    def update(self, found: list[int], settled: bool) -> list[int]:
        """The jobs to report now, of the jobs ``found`` this cycle; ``settled``: the RJMS
        started no job of the last plan's queue since the read before."""
        self._reads = {j: self._reads.get(j, 0) + 1 for j in found}
        self._reported &= set(found)
        due = [j for j in found if self._reads[j] >= PENDING_READS and settled and j not in self._reported]
        self._reported.update(due)
        return due


def pending_line(job_id: int) -> str:
    return (
        f"job {job_id}, which rush expected the RJMS to start, is still pending and the RJMS "
        "started no job rush ranked after it (a constraint or reservation rush does not read)"
    )
