"""The live history learns only real runtimes: a run rush killed (false-small) is left out.

On Flux the killed job leaves the queue (a replacement is submitted), so without this rule it
would be fed to the runtime classifier's history as a job that finished at the divider.
"""

from __future__ import annotations

from rush.daemon.service import Daemon
from rush.planner.config import parse_config
from rush.planner.journal import JobRecord
from rush.planner.plan import _killed_by_rush
from rush.rjms.base import ClusterState, RJMSJob
from tests.queue_backend import Queue


class History:
    name, version, divider = "recording", "1", None

    def __init__(self) -> None:
        self.seen: list[int] = []

    def predict(self, jobs, killable=None):
        return [-1] * len(jobs)

    def observe_finished(self, job, end):
        self.seen.append(job.job_id)

    def save(self):
        pass


def running(job_id: int, **tags: str) -> RJMSJob:
    return RJMSJob(
        job_id=job_id, state="RUNNING", submit=0.0, procs=1, requested_time=600.0, start=10.0, tags=tags
    )


def test_killed_by_rush_compares_the_journal_with_the_run():
    assert not _killed_by_rush(running(1), None)
    assert _killed_by_rush(running(1), JobRecord(1, requeues=1))
    # The replacement runs with requeues=1: it is not a killed run.
    assert not _killed_by_rush(running(1, requeues="1"), JobRecord(1, requeues=1))
    assert _killed_by_rush(running(1, requeues="junk"), JobRecord(1, requeues=1))


def test_a_killed_run_is_not_fed_to_the_history(tmp_path):
    config = parse_config({"daemon": {"journal": str(tmp_path / "j.sqlite")}, "rjms": {"backend": "flux"}})
    queue = Queue()
    daemon = Daemon(config, backend=queue, dry_run=False)
    daemon.classifier = history = History()
    queue.state = ClusterState(1000.0, 8, 6, (running(1), running(2)))
    daemon.run_cycle()
    rec = daemon.journal.job(2)
    rec.requeues = 1  # rush killed job 2 (its replacement is another job on Flux)
    daemon.journal.save_job(rec)
    queue.state = ClusterState(1010.0, 8, 8, ())
    daemon.run_cycle()
    assert history.seen == [1]
