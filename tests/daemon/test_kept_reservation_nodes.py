"""The daemon gives the core its last pass's record back (``Snapshot.kept``), so a standing
conservative reservation keeps its nodes from cycle to cycle and no longer moves later when
the free nodes fragment (issue 31, item 2; the core's rule: tests/core/test_kept_nodes_live.py).
"""

from __future__ import annotations

from rush.core.resources import Node, Request
from rush.daemon.service import Daemon
from rush.planner.config import parse_config
from rush.planner.hostlist_text import compress_hostlist, reservation_nodes
from rush.rjms.base import ClusterState, RJMSJob
from rush.rjms.flux.hostlist import expand_hostlist
from tests.queue_backend import Queue
from tests.rush_cli import rush

NOW = 10_000.0
# Partition p is n0 and n2: a two-node job of p needs exactly them.
NODES = (
    Node("n0", 1, partitions=("batch", "p")),
    Node("n1", 1, partitions=("batch",)),
    Node("n2", 1, partitions=("batch", "p")),
)


def _running(job_id: int, node: str, limit: float) -> RJMSJob:
    return RJMSJob(
        job_id, "RUNNING", 0.0, 1, limit, start=NOW - 100.0, request=Request(1, 1), allocation=((node, 1, 0),)
    )


def _state(now: float, running: tuple[RJMSJob, ...]) -> ClusterState:
    pending = (
        RJMSJob(100, "PENDING", 0.0, 1, 100.0, request=Request(1, 1)),
        RJMSJob(101, "PENDING", 1.0, 2, 10.0, partition="p", request=Request(2, 1, partition="p")),
    )
    return ClusterState(now, 3, 3 - len(running), (*pending, *running), nodes=NODES)


def test_the_daemon_keeps_a_reservation_on_its_nodes_between_cycles(tmp_path) -> None:
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "j.sqlite")},
            "policy": {"policy": "FCFS", "backfill": "conservative"},
        }
    )
    queue = Queue()
    daemon = Daemon(config, backend=queue, dry_run=False)
    # n0 busy until +100, n1 until +40, n2 until +50 (their limits).
    jobs = (_running(1, "n0", 200.0), _running(2, "n1", 140.0), _running(3, "n2", 150.0))
    queue.state = _state(NOW, jobs)
    assert daemon.run_cycle().ok
    first = daemon.last[2]
    assert first.reserved_at == {100: NOW + 40, 101: NOW + 100}
    # At +10 the job on n2 ends early: job 100 could take n2 now only over job 101's window.
    queue.state = _state(NOW + 10, jobs[:2])
    assert daemon.run_cycle().ok
    second = daemon.last[2]
    assert second.reserved_at == {100: NOW + 40, 101: NOW + 100}
    assert daemon.last[1].snapshot.kept is first.kept
    # A daemon started afresh on the journal has the times, not the record: the reservation
    # is re-placed from its time, and moves later.
    fresh = Daemon(config, backend=queue, dry_run=False)
    assert fresh.run_cycle().ok
    assert fresh.last[2].reserved_at[101] == NOW + 110


def test_the_journal_keeps_each_reservations_nodes_and_explain_shows_them(tmp_path) -> None:
    journal = tmp_path / "j.sqlite"
    config = parse_config(
        {"daemon": {"journal": str(journal)}, "policy": {"policy": "FCFS", "backfill": "conservative"}}
    )
    queue = Queue()
    daemon = Daemon(config, backend=queue, dry_run=False)
    jobs = (_running(1, "n0", 200.0), _running(2, "n1", 140.0), _running(3, "n2", 150.0))
    queue.state = _state(NOW, jobs)
    assert daemon.run_cycle().ok
    assert reservation_nodes(daemon.last[2].kept) == (("n0", "n1", "n2"), {100: (1,), 101: (0, 2)})
    records = daemon.journal.jobs()
    assert {j: (records[j].reserved_at, records[j].reserved_nodes) for j in (100, 101)} == {
        100: (NOW + 40, "n1"),
        101: (NOW + 100, "n[0,2]"),
    }
    # Job 101 leaves the queue; job 100 keeps its time and n1, and rush explain says where.
    queue.state = ClusterState(NOW + 10, 3, 0, (queue.state.jobs[0], *jobs), nodes=NODES)
    assert daemon.run_cycle().ok
    records = daemon.journal.jobs()
    assert (records[100].reserved_at, records[100].reserved_nodes) == (NOW + 40, "n1")
    out = rush("explain", "100", "--journal", str(journal))
    assert out.returncode == 0, out.stderr
    assert "on n1" in next(line for line in out.stdout.splitlines() if line.strip().startswith("reserved"))


def test_a_hostlist_names_exactly_the_nodes() -> None:
    cases = [
        ["n0", "n1", "n2", "n7"],
        ["n007", "n008", "n010"],
        ["login", "n3"],
        ["rack1-node9", "rack1-node10", "rack1-node11"],
        ["n01", "n1"],
        ["x"],
    ]
    for names in cases:
        text = compress_hostlist(names)
        assert sorted(expand_hostlist(text)) == sorted(names), (names, text)
    assert compress_hostlist(["n3", "n1", "n2", "n7"]) == "n[1-3,7]"
    assert compress_hostlist(["n007", "n008", "n010"]) == "n[007-008,010]"
