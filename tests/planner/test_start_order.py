"""Priority mode: a job the RJMS starts ahead of one rush expected it to start is journaled
with both jobs named (issue 30, bad input: "Fluxion refusing or reordering a job rush
expected to start"); a start in rush's order, and a shell that starts jobs itself, journal
nothing."""

from __future__ import annotations

from dataclasses import replace

from rush.planner.config import parse_config
from rush.planner.plan import Planner
from rush.rjms.base import ClusterState, RJMSJob
from tests.queue_backend import Queue


def _planner(tmp_path, backend: Queue) -> Planner:
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "journal.sqlite"), "dry_run": False},
            "policy": {"policy": "FCFS", "backfill": "easy"},
        }
    )
    return Planner(config, backend=backend)


def _queue() -> ClusterState:
    """8 processors, 4 free: FCFS expects job 1 (4 procs) to start now; 2 and 3 wait behind it."""
    jobs = (
        RJMSJob(9, "RUNNING", 900.0, 4, 3600.0, start=950.0),
        RJMSJob(1, "PENDING", 1001.0, 4, 600.0),
        RJMSJob(2, "PENDING", 1002.0, 4, 600.0),
        RJMSJob(3, "PENDING", 1003.0, 8, 600.0),
    )
    return ClusterState(taken_at=2000.0, total_procs=8, free_procs=4, jobs=jobs)


def _started(state: ClusterState, job_id: int) -> ClusterState:
    jobs = tuple(replace(j, state="RUNNING", start=2010.0) if j.job_id == job_id else j for j in state.jobs)
    return replace(state, taken_at=2020.0, free_procs=0, jobs=jobs)


def test_a_job_started_ahead_of_the_expected_one_is_journaled_with_both_named(tmp_path):
    backend = Queue(_queue())
    planner = _planner(tmp_path, backend)
    assert planner.run_cycle().ok
    expected = [d.job_id for d in planner.last[2].decisions if d.action in ("start", "backfill")]
    assert expected == [1]
    backend.state = _started(backend.state, 2)  # the RJMS started job 2, not job 1
    assert planner.run_cycle().ok
    lines = [e["message"] for e in planner.journal.events("rjms_order")]
    assert len(lines) == 1
    assert lines[0].startswith("job 2 (rush's rank 2) started ahead of job(s) 1,")


def test_starts_in_rushs_order_journal_nothing(tmp_path):
    backend = Queue(_queue())
    planner = _planner(tmp_path, backend)
    assert planner.run_cycle().ok
    backend.state = _started(backend.state, 1)
    assert planner.run_cycle().ok
    assert planner.journal.events("rjms_order") == []


def test_a_shell_that_starts_jobs_itself_is_not_checked(tmp_path):
    class StartsJobs(Queue):
        capabilities = replace(Queue.capabilities, starts_jobs=True)

    backend = StartsJobs(_queue())
    planner = _planner(tmp_path, backend)
    assert planner.run_cycle().ok
    backend.state = _started(backend.state, 2)
    assert planner.run_cycle().ok
    assert planner.journal.events("rjms_order") == []


def _pending_lines(planner: Planner) -> list[str]:
    return [e["message"] for e in planner.journal.events("rjms_order") if "is still pending" in e["message"]]


def test_an_expected_job_left_pending_is_journaled_once_per_episode(tmp_path):
    """Job 1 is expected and stays pending while nothing starts: one line, not one per cycle.
    The episode ends when the RJMS starts a job behind it (that is journaled as such); when
    rush expects job 1 again and it stays pending again, a new line."""
    backend = Queue(_queue())
    planner = _planner(tmp_path, backend)
    for _ in range(3):
        assert planner.run_cycle().ok
    assert _pending_lines(planner) == [
        "job 1, which rush expected the RJMS to start, is still pending and the RJMS started no job "
        "rush ranked after it (a constraint or reservation rush does not read)"
    ]
    backend.state = _started(backend.state, 2)  # ahead of job 1: its episode ends
    assert planner.run_cycle().ok
    assert len(_pending_lines(planner)) == 1
    jobs = tuple(j for j in backend.state.jobs if j.job_id != 2)  # job 2 ends: 4 free again
    backend.state = replace(backend.state, taken_at=2030.0, free_procs=4, jobs=jobs)
    for _ in range(3):
        assert planner.run_cycle().ok  # rush expects job 1 again; it stays pending again
    assert len(_pending_lines(planner)) == 2


def test_a_job_the_rjms_had_not_yet_reached_at_the_next_read_is_not_reported(tmp_path):
    """Job 1 is expected; the next read still finds it pending (the RJMS had not got to it:
    slower than one cycle), the read after finds it started: no "left pending" line."""
    backend = Queue(_queue())
    planner = _planner(tmp_path, backend)
    for _ in range(2):
        assert planner.run_cycle().ok
    backend.state = _started(backend.state, 1)
    assert planner.run_cycle().ok
    assert planner.journal.events("rjms_order") == []


def _three_small() -> ClusterState:
    """8 processors, 6 free: FCFS expects jobs 1, 2 and 3 (2 procs each) to start now."""
    jobs = (
        RJMSJob(9, "RUNNING", 900.0, 2, 3600.0, start=950.0),
        *(RJMSJob(k, "PENDING", 1000.0 + k, 2, 600.0) for k in (1, 2, 3)),
    )
    return ClusterState(taken_at=2000.0, total_procs=8, free_procs=6, jobs=jobs)


def test_a_job_left_pending_while_the_rjms_still_starts_jobs_ahead_of_it_is_reported_once_it_settles(
    tmp_path,
):
    """The RJMS starts rush's expected jobs one per cycle (still working through the queue):
    job 3, found pending at two reads while job 2 started ahead of it, is not reported; once
    a cycle passes in which the RJMS starts nothing and job 3 is still pending, one line."""
    backend = Queue(_three_small())
    planner = _planner(tmp_path, backend)
    assert planner.run_cycle().ok
    assert [d.job_id for d in planner.last[2].decisions if d.action in ("start", "backfill")] == [1, 2, 3]
    for job_id, free in ((1, 4), (2, 2)):
        backend.state = replace(_started(backend.state, job_id), free_procs=free)
        assert planner.run_cycle().ok
        assert _pending_lines(planner) == []
    for _ in range(3):  # the RJMS starts nothing more: job 3 is left pending, reported once
        assert planner.run_cycle().ok
    assert _pending_lines(planner) == [
        "job 3, which rush expected the RJMS to start, is still pending and the RJMS started no job "
        "rush ranked after it (a constraint or reservation rush does not read)"
    ]


def test_an_expected_job_that_ended_unstarted_is_journaled_with_the_rjms_reason(tmp_path):
    class Refusing(Queue):
        asked: list[int] = []

        def ended_unstarted(self, job_id):
            self.asked.append(job_id)
            return 'exception type=alloc severity=0: alloc denied due to type="unsatisfiable"'

    backend = Refusing(_queue())
    planner = _planner(tmp_path, backend)
    assert planner.run_cycle().ok
    jobs = tuple(j for j in backend.state.jobs if j.job_id != 1)  # the RJMS ended job 1
    backend.state = replace(backend.state, taken_at=2020.0, jobs=jobs)
    assert planner.run_cycle().ok
    assert backend.asked == [1]  # only the job rush expected to start is asked about
    assert [e["message"] for e in planner.journal.events("rjms_order")] == [
        "job 1, which rush expected the RJMS to start, ended without starting: "
        'exception type=alloc severity=0: alloc denied due to type="unsatisfiable"'
    ]


def test_a_request_rush_cannot_read_is_journaled_once_per_job(tmp_path):
    state = _queue()
    jobs = tuple(
        replace(j, request_note="jobspec has no slot with cores") if j.job_id == 3 else j for j in state.jobs
    )
    backend = Queue(replace(state, jobs=jobs))
    planner = _planner(tmp_path, backend)
    for _ in range(2):
        assert planner.run_cycle().ok
    assert [e["message"] for e in planner.journal.events("request")] == [
        "job 3: rush cannot read its resource request (jobspec has no slot with cores); read as its 8 cores anywhere"
    ]
