"""Journal retention and bounded memory: the daemon's journal and the collector's reports stop
growing; old decisions, events and cycles go in batches, an open intent never does."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from rush.daemon.service import Daemon
from rush.errors import ConfigError
from rush.planner import journal as journal_module
from rush.planner.config import parse_config
from rush.planner.journal import DecisionRow, Journal
from rush.rjms.base import ClusterState, RJMSJob
from tests.queue_backend import Queue

HOUR = 3600.0


class Clock:
    def __init__(self, now: float = 1.7e9) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeQueue(Queue):
    """A fake RJMS (no Slurm in this test): two arrivals per read, nothing ever starts."""

    name = "fake"

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock, self.next_id, self.jobs = clock, 1, []

    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        for _ in range(2):
            self.jobs.append(RJMSJob(self.next_id, "PENDING", self.clock.now, 1, 600.0))
            self.next_id += 1
        self.jobs = self.jobs[-20:]  # jobs leave the queue (cancelled) after ten cycles
        return ClusterState(self.clock.now, 8, 8, tuple(self.jobs))


def test_300_cycles_keep_the_journal_bounded(tmp_path: Path) -> None:
    clock = Clock()
    config = parse_config({"daemon": {"journal": str(tmp_path / "j.sqlite"), "journal_retention": "1h"}})
    daemon = Daemon(config, backend=FakeQueue(clock), dry_run=True)
    daemon.journal.clock = clock
    assert daemon.journal.retention == HOUR
    step = 60.0
    counts = []
    for _ in range(300):  # five hours at one cycle a minute
        assert daemon.run_cycle().ok
        clock.now += step
        counts.append(daemon.journal.counts())
    keep = int(HOUR / step) + 1  # cycles younger than the retention
    # Decisions one cycle adds, measured before anything is old enough to go.
    per_cycle = max(b["decisions"] - a["decisions"] for a, b in zip(counts[:50], counts[1:51], strict=True))
    final = counts[-1]
    assert final["cycles"] <= keep
    assert final["decisions"] <= keep * per_cycle
    # Flat after the first hour: the last 100 cycles do not grow the tables.
    assert counts[-1]["decisions"] <= max(c["decisions"] for c in counts[150:200])
    oldest = daemon.journal.db.execute("SELECT min(time) FROM decisions").fetchone()[0]
    assert oldest >= clock.now - HOUR - step
    daemon.journal.close()


def test_prune_in_bounded_batches_never_drops_an_open_intent(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(journal_module, "PRUNE_BATCH", 10)
    clock = Clock()
    journal = Journal(tmp_path / "j.sqlite", retention=HOUR, clock=clock)
    with journal.transaction():
        intent = journal.record(DecisionRow(1, 7, "kill", "false small", None, {}, "apply"), "intent")
        for i in range(95):
            journal.record(DecisionRow(1, 100 + i, "priority", "order", i, {}, "apply"), "done")
            journal.event(1, "rjms_error", f"down {i}")
    journal.end_cycle(1, True, "apply")  # nothing is old yet
    assert journal.counts()["decisions"] == 96
    clock.now += 2 * HOUR
    # At most 3 batches of 10 rows in one call: a backlog drains over several cycles.
    deleted = journal.prune(max_batches=3)
    assert sum(deleted.values()) == 30 and journal.counts()["decisions"] == 66
    while sum(journal.prune().values()):
        pass
    assert journal.counts() == {"decisions": 1, "events": 0, "cycles": 0, "jobs": 0}
    assert [i.id for i in journal.open_intents()] == [intent]
    journal.close()


def test_retention_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="daemon.journal_retention"):
        Journal(tmp_path / "j.sqlite", retention=0)
    with pytest.raises(ConfigError, match="daemon.journal_retention"):
        Journal(tmp_path / "j.sqlite", retention=float("nan"))
    for bad in (0, -1, "0d", "forever", float("inf"), True, 60):
        with pytest.raises(ConfigError) as info:
            parse_config({"daemon": {"journal_retention": bad}})
        assert info.value.where.endswith("daemon.journal_retention")
    assert parse_config({}).daemon.journal_retention == 90 * 86400


def test_collector_run_keeps_only_recent_reports(tmp_path: Path) -> None:
    from rush.collect.config import collect_config_from_dict
    from rush.collect.service import CollectorService

    config = collect_config_from_dict(
        {"store": str(tmp_path / "f.sqlite"), "metrics_address": "", "interval": 0.1}
    )
    config.interval = 0.0  # no sleeping between the cycles of this test
    service = CollectorService(config)
    try:
        reports = service.run(cycles=250, keep_reports=50)
    finally:
        service.close()
    assert service.cycles == 250 and len(reports) == 50
    assert all(b.started >= a.started for a, b in zip(reports, list(reports)[1:], strict=False))


def test_feature_store_refuses_non_positive_retention(tmp_path: Path) -> None:
    from rush.collect.store import FeatureStore
    from rush.errors import CollectorError

    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(CollectorError, match="collect.retention"):
            FeatureStore(tmp_path / "f.sqlite", retention=bad)
    with FeatureStore(tmp_path / "f.sqlite", retention=60) as store:
        assert store.prune() == 0
