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

from functools import cached_property
from itertools import compress, repeat
from operator import attrgetter, eq

from rush.core.snapshot import Decision, Decisions
from rush.rjms.base import ClusterState, RJMSJob

EXPECTED = ("start", "backfill")
MAX_REPORTED = 20  # lines per cycle; the count says how many there were
_LISTED = ("PENDING", "RUNNING")  # a job the RJMS still lists as waiting or running
_JOB_ID = attrgetter("job_id")
_STATE = attrgetter("state")


class StartOrderRead:
    """The last cycle's decisions (``previous``) and this cycle's read (``state``) as the checks
    below read them. Each index is made once a cycle, at its first use, instead of once per
    check: one walk over the read's jobs (their ids and states), one rank of the last plan's
    order, the jobs listed as running. The checks ask about a few hundred jobs (those rush
    expected to start, those it released) and the running ones, not the whole queue."""

    def __init__(self, previous: Decisions, state: ClusterState) -> None:
        self.previous, self.state = previous, state

    @cached_property
    def expected(self) -> list[Decision]:
        """The jobs rush expected the RJMS to start (its ``start`` and ``backfill`` decisions)."""
        return self.previous.among(EXPECTED)

    @cached_property
    def released(self) -> list[Decision]:
        """The jobs rush read as infeasible and released to the RJMS (with a value)."""
        return [d for d in self.previous.of("infeasible") if d.value is not None]

    @cached_property
    def rank(self) -> dict[int, int]:
        """Each job's position in the last plan's order (a job listed twice: its last)."""
        order = self.previous.order
        return dict(zip(order, range(len(order)), strict=True))

    @cached_property
    def _ids_states(self) -> tuple[list[int], list[str]]:
        jobs = self.state.jobs
        return list(map(_JOB_ID, jobs)), list(map(_STATE, jobs))

    @cached_property
    def state_of(self) -> dict[int, str]:
        """Each listed job's state (a job listed twice: its last listing's)."""
        return dict(zip(*self._ids_states, strict=True))

    @cached_property
    def _unique(self) -> bool:  # each job listed once: its one state answers every question
        return len(self.state_of) == len(self.state.jobs)

    @cached_property
    def _pending(self) -> set[int]:
        ids, states = self._ids_states
        return set(compress(ids, map(eq, states, repeat("PENDING"))))

    @cached_property
    def _listed(self) -> set[int]:
        ids, states = self._ids_states
        return set(compress(ids, map(_LISTED.__contains__, states)))

    def is_pending(self, job_id: int) -> bool:
        """Whether the read lists the job as pending (in any of its listings)."""
        if self._unique:
            return self.state_of.get(job_id) == "PENDING"
        return job_id in self._pending

    def is_listed(self, job_id: int) -> bool:
        """Whether the read lists the job as pending or running (in any of its listings)."""
        if self._unique:
            return self.state_of.get(job_id, None) in _LISTED
        return job_id in self._listed

    @cached_property
    def running(self) -> list[RJMSJob]:
        """The jobs listed as running, in the read's order."""
        jobs, states = self.state.jobs, self._ids_states[1]
        return [jobs[k] for k in compress(range(len(jobs)), map(eq, states, repeat("RUNNING")))]


def started_out_of_order(read: StartOrderRead) -> list[str]:
    """One line per job the RJMS started ahead of a job rush expected it to start (``read``:
    the last cycle's decisions and this cycle's read)."""
    rank, now = read.rank, read.state_of
    expected = [d.job_id for d in read.expected]
    still_waiting = sorted((rank[j], j) for j in expected if j in rank and now.get(j) == "PENDING")
    if not still_waiting:
        return []
    started = sorted(
        (rank[job.job_id], job.job_id) for job in read.running if job.job_id in rank and job.start is not None
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


def expected_and_gone(read: StartOrderRead) -> list[int]:
    """The jobs rush expected the RJMS to start that this read no longer lists (ended, however
    briefly they ran: the shell tells which of them never started)."""
    return [d.job_id for d in read.expected if not read.is_listed(d.job_id)]


def ended_line(job_id: int, why: str) -> str:
    return f"job {job_id}, which rush expected the RJMS to start, ended without starting: {why}"


def released_and_gone(read: StartOrderRead) -> list[int]:
    """The jobs rush read as infeasible and released to the RJMS that this read no longer lists."""
    return [d.job_id for d in read.released if not read.is_listed(d.job_id)]


def released_line(job_id: int, why: str) -> str:
    return (
        f"job {job_id}, which rush read as infeasible and released to the RJMS, ended without "
        f"starting (the RJMS refused it too): {why}"
    )


def released_left_pending(read: StartOrderRead) -> dict[int, str]:
    """The jobs rush read as infeasible and released to the RJMS that this read finds still
    pending, with rush's reason."""
    return {d.job_id: d.reason for d in read.released if read.is_pending(d.job_id)}


def released_pending_line(job_id: int, reason: str) -> str:
    return (
        f"job {job_id}, which rush reads as infeasible ({reason}) and released to the RJMS at the "
        "lowest priority, is still pending: the RJMS has neither started nor refused it (it keeps "
        "the job, e.g. for nodes it expects to come back)"
    )


def left_pending(read: StartOrderRead) -> list[int]:
    """The jobs rush expected the RJMS to start that are still pending while no job rush ranked
    after them started (those :func:`started_out_of_order` names instead)."""
    rank = read.rank
    last_started = max((rank[job.job_id] for job in read.running if job.job_id in rank), default=-1)
    return [
        d.job_id for d in read.expected if read.is_pending(d.job_id) and rank.get(d.job_id, -1) > last_started
    ]


def rjms_started_any(read: StartOrderRead) -> bool:
    """Whether the RJMS started any job of the last plan's queue since the read before."""
    ranked = read.rank
    return any(job.job_id in ranked for job in read.running)


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
