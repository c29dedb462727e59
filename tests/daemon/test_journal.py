"""The SQLite journal: atomic under kill -9, and open intents reconciled against the RJMS's state."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

from rush.planner.apply import Applier
from rush.planner.journal import DecisionRow, JobRecord, Journal, MemoryBook
from rush.planner.metrics import DaemonMetrics
from rush.rjms.base import ActionResult, Capabilities, ClusterState, RJMSJob

WRITER = textwrap.dedent(
    """
    import sys
    from rush.planner.journal import DecisionRow, Journal
    journal = Journal(sys.argv[1])
    cycle = 0
    while True:  # one transaction per cycle: a skip row and the job's count together
        cycle += 1
        with journal.transaction():
            rec = journal.job(42)
            rec.skips += 1
            journal.save_job(rec)
            row = DecisionRow(cycle, 42, "skip", "variable", rec.skips, {"m": 1}, "apply")
            journal.record(row, "done", "still held")
    """
)


def test_wal_mode_and_tables(tmp_path):
    journal = Journal(tmp_path / "j.sqlite")
    assert journal.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert journal.next_cycle() == 1 and journal.next_cycle() == 2
    journal.close()
    assert Journal(tmp_path / "j.sqlite").next_cycle() == 3  # the cycle id survives a restart


def test_kill_9_mid_transaction_keeps_counts_and_rows_consistent(tmp_path):
    path = tmp_path / "journal.sqlite"
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(path)])
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            time.sleep(0.2)
            if path.exists():
                try:
                    with sqlite3.connect(path, timeout=5) as db:
                        if db.execute("SELECT count(*) FROM decisions").fetchone()[0] >= 30:
                            break
                except sqlite3.OperationalError:
                    continue
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    journal = Journal(path)
    assert journal.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = journal.decisions(42, "skip")
    assert len(rows) >= 30
    # Never a row without its count, nor a count without its row.
    assert journal.job(42).skips == len(rows) == int(rows[-1]["value"])
    assert rows[-1]["model_outputs"] == {"m": 1}


def job(job_id: int, state: str = "RUNNING", **kw) -> RJMSJob:
    return RJMSJob(job_id, state, 1000.0, 2, 600.0, start=1100.0 if state == "RUNNING" else None, **kw)


def intent(journal: Journal, job_id: int, action: str, value: float | None = None, restarts: int = 0) -> int:
    """What Applier.apply commits before calling the backend."""
    with journal.transaction():
        if action == "kill":
            rec = journal.job(job_id)
            rec.requeues += 1
            rec.requeued_at_restart = restarts
            journal.save_job(rec)
        return journal.record(DecisionRow(1, job_id, action, "why", value, {}, "apply"), "intent")


class NoFollowUp:
    """Reconciling reaches the backend only to finish a confirmed requeue (nothing to do here)."""

    capabilities = Capabilities()  # requeues in place, as Slurm does

    def finish_requeue(self, job: RJMSJob) -> ActionResult:
        return ActionResult(ok=True, answer="nothing to finish")


def test_reconcile_requeues_never_reissued(tmp_path):
    journal = Journal(tmp_path / "j.sqlite")
    applier = Applier(backend=NoFollowUp(), journal=journal, metrics=DaemonMetrics())  # type: ignore[arg-type]
    intent(journal, 1, "kill", restarts=0)  # Slurm requeued it before the crash
    intent(journal, 2, "kill", restarts=0)  # the crash came before Slurm was asked
    intent(journal, 3, "kill", restarts=0)  # the job finished meanwhile
    state = ClusterState(2000.0, 8, 0, (job(1, "PENDING", restarts=1), job(2, restarts=0)))
    settled = {i.job_id: (status, answer) for i, status, answer in applier.reconcile(state)}
    assert settled[1][0] == "done" and "restart count 0 -> 1" in settled[1][1]
    assert settled[2][0] == "failed" and "decides again" in settled[2][1]
    assert settled[3][0] == "failed"
    # Job 1 keeps its requeue (the core will not kill it again); job 2's is rolled back.
    assert journal.job(1).requeues == 1 and journal.job(2).requeues == 0
    assert journal.open_intents() == [] and applier.reconcile(state) == []
    assert all(d["answer"].startswith("reconciled") for d in journal.decisions(action="kill"))


def test_reconcile_holds_releases_and_priorities(tmp_path):
    journal = Journal(tmp_path / "j.sqlite")
    applier = Applier(backend=None, journal=journal, metrics=DaemonMetrics())  # type: ignore[arg-type]
    journal.save_job(JobRecord(4, skips=1, held_by_rush=True))
    intent(journal, 1, "hold")
    intent(journal, 2, "hold")
    intent(journal, 3, "priority", 7)
    intent(journal, 4, "release")
    state = ClusterState(
        2000.0,
        8,
        0,
        (
            job(1, "PENDING", held=True),
            job(2, "PENDING"),
            job(3, "PENDING", site_factor=7),
            job(4, "PENDING"),
        ),
    )
    settled = {i.job_id: status for i, status, _ in applier.reconcile(state)}
    assert settled == {1: "done", 2: "failed", 3: "done", 4: "done"}
    assert journal.job(1).held_by_rush and journal.job(1).skips == 1
    assert not journal.job(2).held_by_rush and journal.job(2).skips == 0
    assert journal.job(3).last_site_factor == 7
    assert not journal.job(4).held_by_rush and journal.job(4).skips == 1


def test_memory_book_copies():
    book = MemoryBook({1: JobRecord(1, skips=2)})
    rec = book.job(1)
    rec.skips = 9  # not saved: the book is unchanged
    assert book.job(1).skips == 2
    book.save_job(rec)
    assert book.jobs()[1].skips == 9
    book.forget_jobs([1])
    assert book.jobs() == {}
