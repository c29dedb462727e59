"""Live passes count skips as Fluxion does: only a cycle that read an RJMS event (an arrival,
an end, a node changing state) counts one; a cycle that read the same queue keeps the count.
The journal stores the core's count (the skip decision's value), never its own."""

from __future__ import annotations

from dataclasses import replace

from rush.core.resources import Node
from rush.daemon.service import Daemon
from rush.planner.config import parse_config
from rush.planner.pass_trigger import PassTrigger
from rush.rjms.base import ClusterState, RJMSJob
from tests.queue_backend import Queue


class FlagAll:
    name = "flag-all"

    def predict(self, jobs, now):
        return [True] * len(jobs)


def job(job_id: int, state: str = "PENDING") -> RJMSJob:
    start = 10.0 if state == "RUNNING" else None
    return RJMSJob(
        job_id=job_id,
        state=state,
        submit=0.0,
        procs=1,
        requested_time=600.0,
        start=start,
        tags={"wtype": "network"},
    )


def test_trigger_from_what_the_read_shows():
    trigger = PassTrigger()
    nodes = (Node("n1", 4), Node("n2", 4))
    first = ClusterState(100.0, 8, 4, (job(1), job(2, "RUNNING")), nodes=nodes)
    assert trigger.of(first) == "event"  # the first cycle after a start
    assert trigger.of(replace(first, taken_at=130.0)) == "periodic"
    # A job starting (pending -> running) is this scheduler's own doing, not an event.
    started = replace(first, jobs=(job(1, "RUNNING"), job(2, "RUNNING")))
    assert trigger.of(started) == "periodic"
    assert trigger.of(replace(started, jobs=(job(1, "RUNNING"),))) == "event"  # an end
    assert trigger.of(replace(started, jobs=(job(1, "RUNNING"), job(3)))) == "event"  # an arrival
    drained = replace(first, jobs=(job(1, "RUNNING"), job(3)), nodes=(Node("n1", 4, state="drain"), nodes[1]))
    assert trigger.of(drained) == "event"
    assert trigger.of(drained) == "periodic"


def test_daemon_counts_skips_only_in_event_cycles(tmp_path):
    config = parse_config({"daemon": {"journal": str(tmp_path / "j.sqlite")}, "policy": {"skip_limit": 5}})
    queue = Queue()
    daemon = Daemon(config, backend=queue, dry_run=False)
    daemon.variation = daemon.builder.variation = FlagAll()
    queue.state = ClusterState(1000.0, 8, 7, (job(1), job(9, "RUNNING")))

    def skips() -> int:
        return daemon.journal.job(1).skips

    assert daemon.run_cycle().ok
    assert daemon.journal.job(1).held_by_rush and skips() == 1
    queue.state = replace(queue.state, taken_at=1030.0)
    assert daemon.run_cycle().ok
    assert skips() == 1  # the same queue: a periodic cycle, the job stays held
    queue.state = replace(queue.state, taken_at=1060.0, jobs=(*queue.state.jobs, job(2)))
    assert daemon.run_cycle().ok
    assert skips() == 2  # job 2 arrived: an event
