"""The journal's book read once and kept as the journal writes it (``KeptBook``, round 29, r31jobs).

The daemon's cycle uses the whole book two or three times (the builder, ``plan_actions``,
``_observe_completions``) and writes it in between (classes, reservations, ``last_seen``,
forgotten records, settled actions). Each use must see what a read of the file at that moment
gives, in the same order and with the same types, while the file is read once, not at each use;
a failed write or a rolled-back transaction must leave no copy that the file does not hold.
"""

from __future__ import annotations

import dataclasses
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import rush.planner.journal as journal_module
from rush.daemon.service import Daemon
from rush.planner.config import parse_config
from rush.planner.journal import JOB_COLUMNS, JobRecord, Journal
from rush.rjms.base import ClusterState, RJMSJob
from tests.queue_backend import Queue

LOAD = f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs"  # the whole book's read


def read(path: Path) -> dict[int, JobRecord]:
    """The book as another connection reads it."""
    with sqlite3.connect(path) as db:
        return {r[0]: JobRecord.of_row(r) for r in db.execute(LOAD)}


def on_file(path: Path) -> list[tuple[int, list[tuple[type, object]]]]:
    """:func:`read`'s records as (id, [(type, value) per field]), in read order."""
    return typed(read(path))


def typed(records: dict[int, JobRecord]) -> list[tuple[int, list[tuple[type, object]]]]:
    return [(k, [(type(v), v) for v in dataclasses.astuple(r)]) for k, r in records.items()]


def states(cycles: int) -> list[ClusterState]:
    """A queue that moves: arrivals, starts, ends, long-gone jobs (forgotten), and small
    idempotent runs past the divider (false-small kills)."""
    rng = random.Random(31)
    pending = list(range(1, 25))
    running: dict[int, float] = {}
    out, next_id = [], 25
    for c in range(cycles):
        now = 20_000.0 + 1_500.0 * c
        for job_id in rng.sample(pending, 3):
            pending.remove(job_id)
            running[job_id] = now
        for job_id in [j for j, since in running.items() if now - since > 2_500.0]:
            del running[job_id]
        pending += range(next_id, next_id + 3)
        next_id += 3
        jobs = [
            RJMSJob(j, "PENDING", 1_000.0 * (j % 7), 1 + j % 4, 300.0 + 400.0 * (j % 5), user=f"u{j % 3}")
            for j in pending
        ]
        jobs += [
            RJMSJob(
                j, "RUNNING", 0.0, 1 + j % 4, 600.0 + 200.0 * (j % 3), start=since, tags={"idempotent": "1"}
            )
            for j, since in running.items()
        ]
        busy = sum(j.procs for j in jobs if j.state == "RUNNING")
        out.append(ClusterState(now, 64, max(64 - busy, 0), tuple(jobs)))
    return out


# Every kind of write of the book: classes, reservations, priorities, kills, last_seen, forgetting.
BUSY = {
    "policy": {"policy": "WFP3", "backfill": "conservative", "kill_false_small": True, "divider": 900},
    "models": {"small_below": 900},
}
# None but last_seen and forgetting: the records a dry run holds are the ones it started with.
QUIET = {"policy": {"policy": "RJMS", "backfill": "easy"}}


def daemon_on(tmp_path: Path, sections: dict, dry_run: bool = False) -> tuple[Daemon, Queue]:
    config = parse_config({"daemon": {"journal": str(tmp_path / "j.sqlite")}, **sections})
    queue = Queue()
    return Daemon(config, backend=queue, dry_run=dry_run), queue


def test_each_use_sees_what_a_read_gives_and_the_book_is_read_once(tmp_path, monkeypatch):
    daemon, queue = daemon_on(tmp_path, BUSY)
    path = tmp_path / "j.sqlite"
    lent = daemon.journal.jobs
    uses: list[list] = []

    def checked() -> dict[int, JobRecord]:
        records = lent()
        assert typed(records) == on_file(path), "a use saw other records than the file holds"
        uses[-1].append(typed(records))
        return records

    monkeypatch.setattr(daemon.journal, "jobs", checked)
    loads: list[int] = []
    daemon.journal.db.set_trace_callback(lambda sql: loads.__setitem__(-1, loads[-1] + (sql == LOAD)))
    for state in states(8):
        queue.state = state
        uses.append([])
        loads.append(0)
        assert daemon.run_cycle().ok
    assert all(len(u) >= 2 for u in uses)  # the builder and plan_actions at least
    # Written between two uses of one cycle (classes, reservations, last_seen): seen by the later.
    assert sum(u[0] != u[-1] for u in uses) >= 6
    counts = daemon.journal.counts()
    assert counts["jobs"] > 20 and {"kill", "priority"} <= {d["action"] for d in daemon.journal.decisions()}
    assert max(loads) <= 1, f"the book was read more than once in a cycle: {loads}"
    assert sum(loads[1:]) == 0, f"the book was read again after the first cycle: {loads}"


def test_a_dry_run_plays_its_book_on_copies(tmp_path):
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    for job_id in range(1, 25):
        journal.save_job(JobRecord(job_id, skips=job_id % 3, last_seen=5.0))
    journal.close()
    for sections in (QUIET, BUSY):
        daemon, queue = daemon_on(tmp_path, sections, dry_run=True)
        for state in states(4):
            queue.state = state
            assert daemon.run_cycle().ok
        assert daemon.book.jobs() != daemon.journal.jobs()  # the memory book moved on
        assert typed(daemon.journal.jobs()) == on_file(path)  # the journal's did not
        daemon.journal.close()


REAL_VALUES = (None, 0.0, -0.0, 7, True, 1.5, float("inf"), np.float64(2.5), float("nan"), "x")
INT_VALUES = (0, 3, True, False, -1, None, 2.0, np.int64(4))


def random_record(rng: random.Random) -> JobRecord:
    return JobRecord(
        rng.choice((rng.randrange(1, 40), rng.randrange(1, 40), True)),
        skips=rng.choice(INT_VALUES),
        held_by_rush=rng.choice((True, False, 1, 0)),
        requeues=rng.choice((0, 1, 2)),
        requeued_at_restart=rng.choice((-1, 0, 3)),
        last_site_factor=rng.choice(INT_VALUES),
        predicted_class=rng.choice((-1, 0, 1)),
        last_seen=rng.choice(REAL_VALUES),
        reserved_at=rng.choice(REAL_VALUES),
        reserved_nodes=rng.choice((None, "n[0-3]", 5)),
    )


def step(journal: Journal, path: Path, rng: random.Random) -> None:
    """One of the journal's writes of the book, or another connection's, at random."""
    ids = [rng.randrange(1, 40) for _ in range(rng.randrange(0, 12))]
    kind = rng.randrange(7)
    if kind <= 1:
        journal.save_job(random_record(rng))
    elif kind == 2:
        journal.mark_seen(ids, rng.choice(REAL_VALUES))
    elif kind == 3:
        journal.forget_jobs(ids)
    elif kind == 4:  # a transaction that fails after its writes: rolled back
        with pytest.raises(RuntimeError), journal.transaction():
            journal.save_job(JobRecord(rng.randrange(1, 40), skips=9))
            journal.mark_seen(ids, 1.0)
            raise RuntimeError("the cycle failed")
    elif kind == 5:  # another connection (a second daemon, an operator) writes the file
        with sqlite3.connect(path) as other:
            other.execute("UPDATE jobs SET skips = skips + 1 WHERE job_id IN (1, 2, 3, 4, 5)")
    else:
        with journal.transaction():
            journal.save_job(JobRecord(rng.randrange(1, 40), reserved_at=float(rng.randrange(5))))
            journal.mark_seen(ids, 2.0)


@pytest.mark.parametrize("json1", [True, False])
def test_the_kept_book_follows_every_write_as_a_read_would(tmp_path, monkeypatch, json1):
    if not json1:
        monkeypatch.setattr(journal_module, "_has_json_each", lambda db: False)
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    rng = random.Random(29)
    for _ in range(400):
        try:
            step(journal, path, rng)
        except (sqlite3.Error, TypeError, OverflowError):
            pass  # a value SQLite refuses: the file is still the truth
        assert typed(journal.jobs()) == on_file(path)
        job_id = rng.randrange(1, 40)
        assert typed({0: journal.job(job_id)}) == typed({0: read(path).get(job_id, JobRecord(job_id))})


def test_a_lent_book_does_not_change_under_its_holder(tmp_path):
    journal = Journal(tmp_path / "j.sqlite")
    for job_id in (5, 1, 3):
        journal.save_job(JobRecord(job_id, last_seen=1.0))
    lent = journal.jobs()
    before = typed(lent)
    assert [k for k, _ in before] == [1, 3, 5]  # id order, as a read gives it
    journal.mark_seen([1, 3, 5], 2.0)
    journal.save_job(JobRecord(3, skips=4))
    journal.forget_jobs([5])
    rec = journal.job(1)
    rec.skips = 7  # a caller's own copy
    assert typed(lent) == before
    assert journal.jobs()[1].skips == 0


def test_a_write_that_fails_half_way_leaves_no_copy_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(journal_module, "_has_json_each", lambda db: False)  # one UPDATE an id
    path = tmp_path / "j.sqlite"
    journal = Journal(path)
    for job_id in (1, 2, 3):
        journal.save_job(JobRecord(job_id, last_seen=1.0))
    journal.jobs()
    with pytest.raises(sqlite3.Error):  # 1 and 2 are marked (each its own commit), then it fails
        journal.mark_seen([1, 2, object(), 3], 2.0)  # type: ignore[list-item]
    assert typed(journal.jobs()) == on_file(path)
    assert [r.last_seen for r in journal.jobs().values()] == [2.0, 2.0, 1.0]


def test_json1_is_asked_once_per_journal(tmp_path, monkeypatch):
    journal = Journal(tmp_path / "j.sqlite")
    journal.save_job(JobRecord(1))

    def asked(db) -> bool:
        raise AssertionError("asked at mark_seen")

    monkeypatch.setattr(journal_module, "_has_json_each", asked)
    journal.mark_seen([1], 3.0)
    assert journal.job(1).last_seen == 3.0
