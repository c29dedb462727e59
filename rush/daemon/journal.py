"""The decision journal: every decision with its reason, and per-job state, in SQLite (WAL).

Crash safety: an action is written as an *intent* before the RJMS is asked, and marked
done (or failed, with the RJMS's answer) after. On restart, an intent without an outcome
means the daemon died in between; for a requeue it is reconciled against the RJMS (a job
whose restart count or tags show the requeue happened is marked done), and a requeue is
never issued twice for the same run of a job.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from rush.errors import ConfigError

SCHEMA = """
PRAGMA journal_mode=WAL;
PRAGMA synchronous=FULL;
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY, time REAL NOT NULL, cycle INTEGER NOT NULL, job_id INTEGER NOT NULL,
    action TEXT NOT NULL, reason TEXT NOT NULL, value REAL, model_outputs TEXT,
    mode TEXT NOT NULL, status TEXT NOT NULL, answer TEXT);
CREATE INDEX IF NOT EXISTS decisions_job ON decisions (job_id, action);
CREATE TABLE IF NOT EXISTS jobs (
    job_id INTEGER PRIMARY KEY, skips INTEGER NOT NULL DEFAULT 0, held_by_rush INTEGER NOT NULL DEFAULT 0,
    requeues INTEGER NOT NULL DEFAULT 0, requeued_at_restart INTEGER NOT NULL DEFAULT -1,
    last_site_factor INTEGER, predicted_class INTEGER NOT NULL DEFAULT -1);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


@dataclass
class JobRecord:
    job_id: int
    skips: int = 0
    held_by_rush: bool = False
    requeues: int = 0
    requeued_at_restart: int = -1
    last_site_factor: int | None = None
    predicted_class: int = -1


class Journal:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
            self.db.executescript(SCHEMA)
        except (OSError, sqlite3.DatabaseError) as exc:
            raise ConfigError(
                f"cannot open the journal: {exc}",
                where=str(self.path),
                fix="check daemon.journal and its directory's permissions",
            ) from exc

    # -- cycles and decisions -------------------------------------------------------------
    def next_cycle(self) -> int:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'cycle'").fetchone()
        cycle = int(row[0]) + 1 if row else 1
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('cycle', ?)", (str(cycle),))
        return cycle

    def record(
        self,
        cycle: int,
        job_id: int,
        action: str,
        reason: str,
        value: float | None,
        model_outputs: dict | None,
        mode: str,
        status: str,
        answer: str = "",
    ) -> int:
        cur = self.db.execute(
            "INSERT INTO decisions (time, cycle, job_id, action, reason, value, model_outputs, mode, status, answer)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                time.time(),
                cycle,
                job_id,
                action,
                reason,
                value,
                json.dumps(model_outputs or {}),
                mode,
                status,
                answer,
            ),
        )
        return int(cur.lastrowid)

    def finish(self, decision_id: int, ok: bool, answer: str) -> None:
        self.db.execute(
            "UPDATE decisions SET status = ?, answer = ? WHERE id = ?",
            ("done" if ok else "failed", answer, decision_id),
        )

    def open_intents(self) -> list[tuple[int, int, str]]:
        return self.db.execute(
            "SELECT id, job_id, action FROM decisions WHERE status = 'intent' ORDER BY id"
        ).fetchall()

    def decisions(self, job_id: int | None = None) -> list[dict]:
        query = "SELECT id, time, cycle, job_id, action, reason, value, model_outputs, mode, status, answer FROM decisions"
        rows = self.db.execute(
            query + (" WHERE job_id = ?" if job_id is not None else "") + " ORDER BY id",
            (job_id,) if job_id is not None else (),
        )
        keys = (
            "id",
            "time",
            "cycle",
            "job_id",
            "action",
            "reason",
            "value",
            "model_outputs",
            "mode",
            "status",
            "answer",
        )
        return [dict(zip(keys, r, strict=True)) for r in rows]

    # -- per-job state --------------------------------------------------------------------
    def job(self, job_id: int) -> JobRecord:
        row = self.db.execute(
            "SELECT skips, held_by_rush, requeues, requeued_at_restart, last_site_factor, predicted_class FROM jobs WHERE job_id = ?",
            (job_id,),
        ).fetchone()
        if row is None:
            return JobRecord(job_id)
        return JobRecord(job_id, row[0], bool(row[1]), row[2], row[3], row[4], row[5])

    def jobs(self) -> dict[int, JobRecord]:
        rows = self.db.execute(
            "SELECT job_id, skips, held_by_rush, requeues, requeued_at_restart, last_site_factor, predicted_class FROM jobs"
        )
        return {r[0]: JobRecord(r[0], r[1], bool(r[2]), r[3], r[4], r[5], r[6]) for r in rows}

    def save_job(self, rec: JobRecord) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO jobs (job_id, skips, held_by_rush, requeues, requeued_at_restart, last_site_factor, predicted_class)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                rec.job_id,
                rec.skips,
                int(rec.held_by_rush),
                rec.requeues,
                rec.requeued_at_restart,
                rec.last_site_factor,
                rec.predicted_class,
            ),
        )

    def close(self) -> None:
        self.db.close()
