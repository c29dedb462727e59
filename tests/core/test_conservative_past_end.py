"""Conservative backfilling on processor counts with running jobs past their estimated end
(:mod:`rush.core.conservative`): such a job is expected to end one second from now, so its
processors come after those of a job ending within the second, whatever order the ends came in."""

from __future__ import annotations

from rush.core.config import CoreConfig
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, Snapshot

NOW = 100.0
CONSERVATIVE = CoreConfig.from_names("FCFS", "conservative", None)


def _reservations(running: tuple[RunningJob, ...]) -> dict[int, float]:
    pending = (
        PendingJob(job_id=10, submit=0.0, procs=4, requested_time=10.0),
        PendingJob(job_id=11, submit=1.0, procs=8, requested_time=10.0),
    )
    snapshot = Snapshot(now=NOW, total_procs=8, free_procs=0, pending=pending, running=running)
    decided = schedule(snapshot, CONSERVATIVE, explain_priorities=False, estimate_starts_too=False)
    return dict(decided.reserved_at)


def test_a_job_past_its_end_frees_its_processors_after_one_ending_within_the_second() -> None:
    past = RunningJob(job_id=1, start=0.0, procs=4, requested_time=50.0)  # ended at 50: now + 1
    soon = RunningJob(job_id=2, start=0.0, procs=4, requested_time=NOW + 0.5)
    for running in ((past, soon), (soon, past)):
        reserved = _reservations(running)
        assert reserved[10] == NOW + 0.5  # the job ending within the second frees 4 first
        assert reserved[11] == NOW + 10.5  # all eight once job 10 ends (the past one's at now + 1)
