"""The daemon settles the cyclic collector once its start-up is done (rush.planner.collector):
what start-up loaded is frozen, the youngest threshold is raised, and a job the RJMS no longer
reports is still released (nothing per cycle is kept out of the collector's reach)."""

from __future__ import annotations

import gc
import subprocess
import weakref

import pytest

from rush.core.resources import Request
from rush.daemon.service import Daemon
from rush.planner.collector import YOUNG_THRESHOLD
from rush.planner.config import parse_config
from rush.rjms.base import ClusterState, RJMSJob
from tests.queue_backend import Queue


@pytest.fixture
def collector_restored():
    """The test process's collector as it was: the daemon's rule is process-wide."""
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


class Reads(Queue):
    """The RJMS's successive reads, one per cycle (the last one repeats)."""

    def __init__(self, *states: ClusterState) -> None:
        super().__init__(states[0])
        self.states = list(states)

    def read_state(self, partitions=()):
        self.state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return self.state


def test_the_daemon_freezes_start_up_and_still_releases_ended_jobs(tmp_path, collector_restored) -> None:
    config = parse_config({"daemon": {"journal": str(tmp_path / "j.sqlite")}})
    gone = RJMSJob(7, "PENDING", 900.0, 1, 100.0, request=Request(1, 1))
    stays = RJMSJob(8, "PENDING", 901.0, 1, 100.0, request=Request(1, 1))
    # Job 7 is alive at start-up (so frozen with the rest), then the RJMS stops reporting it.
    queue = Reads(
        *(ClusterState(1000.0 + 10 * k, 8, 8, jobs) for k, jobs in enumerate(((gone, stays), (stays,))))
    )
    ended = weakref.ref(gone)
    del gone
    daemon = Daemon(config, backend=queue, dry_run=True)
    daemon.next_delay = lambda: 0.0  # no waiting between this test's cycles
    gc.unfreeze()
    daemon.run(cycles=3)
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] >= YOUNG_THRESHOLD
    assert [job.job_id for job in daemon.last[1].snapshot.pending] == [8]
    # Once no cycle holds it, refcounting frees it although it was frozen: no leak per job.
    assert ended() is None


def test_the_daemon_compiles_its_kernels_in_a_child_before_loading_them(
    tmp_path, collector_restored, monkeypatch
) -> None:
    """The start compiles in a child (round 30, r31cold: a process that compiled keeps the
    compiler's state and cycles 13-17 ms slower), with the daemon's own core configuration,
    before the collector is settled; then loads in-process."""
    import rush.daemon.service as service

    order: list[str] = []
    monkeypatch.setattr(service, "warm_live_pass_in_child", lambda config: order.append(config.backfill))
    monkeypatch.setattr(service, "settle_collector", lambda: order.append("settled") or "settled")
    config = parse_config({"daemon": {"journal": str(tmp_path / "j.sqlite")}})
    queue = Reads(ClusterState(1000.0, 8, 8, ()))
    daemon = Daemon(config, backend=queue, dry_run=True)
    daemon.run(cycles=1, warm_in_child=True)
    assert order == [daemon.core_config.backfill, "settled"]
    # A few cycles in one process (tests, replays driving run()) skip the child by default.
    order.clear()
    Daemon(config, backend=queue, dry_run=True).run(cycles=1)
    assert order == ["settled"]


def test_a_child_that_fails_leaves_the_daemon_compiling_in_process(
    tmp_path, collector_restored, monkeypatch, caplog
) -> None:
    import rush.daemon.service as service

    def broken(config):
        raise subprocess.CalledProcessError(1, ["python", "-m", "rush.daemon.warm_child"])

    warmed: list[str] = []
    monkeypatch.setattr(service, "warm_live_pass_in_child", broken)
    monkeypatch.setattr(service, "warm_live_pass", lambda config: warmed.append(config.backfill) or 0)
    config = parse_config({"daemon": {"journal": str(tmp_path / "j.sqlite")}})
    daemon = Daemon(config, backend=Reads(ClusterState(1000.0, 8, 8, ())), dry_run=True)
    with caplog.at_level("WARNING", logger=service.log.name):
        daemon.run(cycles=1, warm_in_child=True)
    assert "compiling them here" in caplog.text
    assert warmed == [daemon.core_config.backfill]  # compiled in-process after all
