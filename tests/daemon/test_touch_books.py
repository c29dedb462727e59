"""The daemon's books marked and pruned without being read (``Planner._touch``, round 28, r31walks).

Every cycle each listed job's record moves its ``last_seen`` to the read's time, and records of
jobs gone longer than ``FORGET_AFTER`` (with no open intent) are forgotten. The journal does it
in one ``UPDATE`` and one ``SELECT`` instead of loading every record and saving each: the rows
must be what the record-by-record rule gave, in the journal and in dry-run's memory book alike.
"""

from __future__ import annotations

import pytest

import rush.planner.journal as journal_module
from rush.daemon.service import Daemon
from rush.planner.config import parse_config
from rush.planner.journal import DecisionRow, JobRecord, Journal, MemoryBook
from rush.planner.plan import FORGET_AFTER
from rush.rjms.base import ClusterState, RJMSJob
from tests.queue_backend import Queue

NOW = 100_000.0
# job id -> last_seen before the touch (None: never marked)
BOOK = {1: None, 2: 5.0, 3: NOW, 4: NOW - FORGET_AFTER - 1, 5: NOW - FORGET_AFTER, 6: 0.0, 7: None}


def records() -> list[JobRecord]:
    return [
        JobRecord(job_id, skips=job_id, last_site_factor=10 * job_id, last_seen=t)
        for job_id, t in BOOK.items()
    ]


def by_record(book: dict[int, JobRecord], listed: list[int], now: float) -> dict[int, JobRecord]:
    """The rule as it was written before: every listed record saved with ``last_seen = now``."""
    out = {k: JobRecord(**v.__dict__) for k, v in book.items()}
    for job_id in listed:
        if job_id in out:
            out[job_id].last_seen = now
    return out


@pytest.fixture(params=["journal", "journal without JSON1", "memory"])
def book(request, tmp_path, monkeypatch):
    if request.param == "memory":
        return MemoryBook({r.job_id: r for r in records()})
    if request.param == "journal without JSON1":
        monkeypatch.setattr(journal_module, "_has_json_each", lambda db: False)
    journal = Journal(tmp_path / "j.sqlite")
    for rec in records():
        journal.save_job(rec)
    return journal


def test_mark_seen_marks_only_the_listed_records(book):
    before = book.jobs()
    book.mark_seen([1, 2, 3, 99], NOW)
    assert book.jobs() == by_record(before, [1, 2, 3], NOW)  # 99 has no record and gets none


@pytest.mark.parametrize("json1", [True, False])
def test_mark_seen_rewrites_only_the_rows_that_change(tmp_path, monkeypatch, json1):
    if not json1:
        monkeypatch.setattr(journal_module, "_has_json_each", lambda db: False)
    journal = Journal(tmp_path / "j.sqlite")
    for rec in records():
        journal.save_job(rec)
    changes = journal.db.total_changes
    journal.mark_seen(list(BOOK), NOW)
    assert journal.db.total_changes - changes == len(BOOK) - 1  # job 3 was seen at NOW already
    changes = journal.db.total_changes
    journal.mark_seen(list(BOOK), NOW)
    assert journal.db.total_changes == changes


def test_seen_before_reads_never_as_zero(book):
    assert sorted(book.seen_before(NOW - FORGET_AFTER)) == [1, 2, 4, 6, 7]
    assert sorted(book.seen_before(0.0)) == []
    assert sorted(book.seen_before(NOW + 1)) == sorted(BOOK)


def pending(job_id: int) -> RJMSJob:
    return RJMSJob(job_id=job_id, state="PENDING", submit=0.0, procs=1, requested_time=600.0)


@pytest.mark.parametrize("dry_run", [False, True])
def test_touch_marks_the_listed_and_forgets_the_long_gone(tmp_path, dry_run):
    config = parse_config({"daemon": {"journal": str(tmp_path / "j.sqlite")}})
    daemon = Daemon(config, backend=Queue(), dry_run=dry_run)
    for rec in records():
        daemon.book.save_job(rec)
    # Job 2 is gone long since but has an open intent: kept until reconcile settles it.
    daemon.journal.record(DecisionRow(1, 2, "priority", "test", 5.0, None, "apply"), "intent")
    state = ClusterState(NOW, 8, 8, (pending(1), pending(3), pending(8)))
    daemon._touch(state)
    after = daemon.book.jobs()
    # 4, 6, 7 gone (never seen counts as long ago); 5 gone exactly FORGET_AFTER ago is kept.
    assert sorted(after) == [1, 2, 3, 5]
    assert {k: r.last_seen for k, r in after.items()} == {1: NOW, 2: 5.0, 3: NOW, 5: NOW - FORGET_AFTER}
    assert all(r.skips == k and r.last_site_factor == 10 * k for k, r in after.items())


def test_touch_does_not_load_the_book(tmp_path, monkeypatch):
    config = parse_config({"daemon": {"journal": str(tmp_path / "j.sqlite")}})
    daemon = Daemon(config, backend=Queue(), dry_run=False)
    for rec in records():
        daemon.journal.save_job(rec)

    def load_all() -> dict[int, JobRecord]:
        raise AssertionError("_touch read every record of the book")

    monkeypatch.setattr(daemon.journal, "jobs", load_all)
    daemon._touch(ClusterState(NOW, 8, 8, (pending(1),)))
    monkeypatch.undo()
    assert daemon.journal.job(1).last_seen == NOW
