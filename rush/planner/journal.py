"""The decision journal: every decision with its reason, and per-job state, in SQLite (WAL).

Tables:

* ``decisions``: time, cycle, job, action, reason, value, model outputs (JSON), mode
  (``apply``/``dry-run``), status, and the RJMS's answer. Status is one of ``intent``
  (written *before* the RJMS is asked), ``done``, ``failed``, ``dry-run``, ``advice`` (the
  core's start/backfill/reserve view, the evidence for its order), ``refused`` (a rate
  limit or a guard said no) and ``skipped`` (rate-limited until a later cycle).
* ``jobs``: per-job state that must survive a restart: skip count, held-by-rush flag,
  requeue count (and the job's restart count when rush requeued it), the last site factor
  applied, the predicted class.
* ``cycles``: one row per cycle (ok or not, queue sizes, counts, error).
* ``events``: anything that went wrong besides a decision (RJMS down, bad model file, ...).
* ``queue``: the queue as rush last saw it, one row per job (pending, running, gone): who owns
  it, its inputs, the core's priority value, group and key, its estimated start, why, the job
  it waits behind, the first estimate made for it, and its start once seen running. Rows are
  rewritten only when they change, a row whose only change is its estimated start (and what
  comes with it: ``MOVING_COLUMNS``) in those columns only; ``rush explain`` and ``rush status``
  read it. Its priority terms (JSON) are computed within a budget per pass
  (``rush.planner.queue_view.TERMS_PER_PASS``); until then the row holds the time they are of
  (``{"terms_at": T}``), at which ``rush explain`` computes them.

Crash safety: an action's intent row (and, for a requeue, the job's new requeue count) is
committed before the backend is called; its outcome is committed after. An intent found
open at the next cycle means the daemon died in between (or the RJMS's answer was
unclear); :mod:`rush.planner.apply` reconciles it against a fresh read of the RJMS rather
than re-issuing it. ``synchronous=FULL``: a committed row survives a power cut.

The book (the ``jobs`` table) is read once and then kept in memory as the journal writes it
(:class:`KeptBook`): a daemon's cycle uses the whole book two or three times and writes it in
between. The file stays the truth: the copy is dropped on any failed write, rolled-back
transaction or other connection's commit, and read again at the next use.

Retention: with ``retention`` seconds set (``daemon.journal_retention``, default 90 days),
each :meth:`Journal.end_cycle` deletes decisions, events and cycles older than that, by
their ``time`` index, in batches of ``PRUNE_BATCH`` rows (one short transaction each, at
most ``PRUNE_BATCHES`` per cycle, so a large backlog drains over a few cycles without
holding the writer lock or the cycle long). An open intent is never deleted: it is the
evidence :mod:`rush.planner.apply` reconciles. Deleted pages are reused, and the WAL is
truncated after checkpoints (``journal_size_limit``), so the file stops growing.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from rush.errors import ConfigError

log = logging.getLogger("rush.planner.journal")

SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    id INTEGER PRIMARY KEY, time REAL NOT NULL, cycle INTEGER NOT NULL, job_id INTEGER NOT NULL,
    action TEXT NOT NULL, reason TEXT NOT NULL, value REAL, model_outputs TEXT,
    mode TEXT NOT NULL, status TEXT NOT NULL, answer TEXT);
CREATE INDEX IF NOT EXISTS decisions_job ON decisions (job_id, action);
CREATE INDEX IF NOT EXISTS decisions_status ON decisions (status);
CREATE INDEX IF NOT EXISTS decisions_time ON decisions (time);
CREATE TABLE IF NOT EXISTS jobs (
    job_id INTEGER PRIMARY KEY, skips INTEGER NOT NULL DEFAULT 0, held_by_rush INTEGER NOT NULL DEFAULT 0,
    requeues INTEGER NOT NULL DEFAULT 0, requeued_at_restart INTEGER NOT NULL DEFAULT -1,
    last_site_factor INTEGER, predicted_class INTEGER NOT NULL DEFAULT -1, last_seen REAL,
    reserved_at REAL, reserved_nodes TEXT);
CREATE TABLE IF NOT EXISTS cycles (
    cycle INTEGER PRIMARY KEY, time REAL NOT NULL, ok INTEGER NOT NULL, mode TEXT NOT NULL,
    pending INTEGER, running INTEGER, counts TEXT, seconds REAL, error TEXT);
CREATE INDEX IF NOT EXISTS cycles_time ON cycles (time);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY, time REAL NOT NULL, cycle INTEGER, kind TEXT NOT NULL, message TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS events_time ON events (time);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS queue (
    job_id INTEGER PRIMARY KEY, time REAL NOT NULL, cycle INTEGER NOT NULL, state TEXT NOT NULL,
    user TEXT, account TEXT, partition TEXT, submit REAL, procs INTEGER, requested_time REAL,
    estimate REAL, runtime_class INTEGER, fairshare REAL, priority INTEGER, priority_group INTEGER,
    priority_key REAL, estimated_start REAL, estimate_basis TEXT, waits_behind INTEGER,
    first_estimated_start REAL, first_estimated_at REAL, start REAL, model_outputs TEXT,
    priority_terms TEXT);
CREATE INDEX IF NOT EXISTS queue_gone ON queue (time) WHERE state = 'gone';
CREATE INDEX IF NOT EXISTS queue_state ON queue (state, priority);
"""
# The WAL's size kept after a checkpoint (bytes), the connection's page cache (KiB) and the WAL
# pages between automatic checkpoints (CHECKPOINT_PAGES frames of 4 KiB fit in WAL_LIMIT).
WAL_LIMIT = 16 * 1024 * 1024
PAGE_CACHE_KIB = 32 * 1024
CHECKPOINT_PAGES = 4000
# Retention deletes in batches of this many rows, at most this many batches per cycle.
PRUNE_BATCH = 2000
PRUNE_BATCHES = 50
# Tables pruned by age, with the rows that must survive any age.
PRUNED = (("decisions", "status != 'intent'"), ("events", "1"), ("cycles", "1"), ("queue", "state = 'gone'"))
DECISION_COLUMNS = (
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
JOB_COLUMNS = (
    "job_id",
    "skips",
    "held_by_rush",
    "requeues",
    "requeued_at_restart",
    "last_site_factor",
    "predicted_class",
    "last_seen",
    "reserved_at",
    "reserved_nodes",
)
QUEUE_COLUMNS = (
    "job_id",
    "time",
    "cycle",
    "state",
    "user",
    "account",
    "partition",
    "submit",
    "procs",
    "requested_time",
    "estimate",
    "runtime_class",
    "fairshare",
    "priority",
    "priority_group",
    "priority_key",
    "estimated_start",
    "estimate_basis",
    "waits_behind",
    "first_estimated_start",
    "first_estimated_at",
    "start",
    "model_outputs",
    "priority_terms",
)
# The columns of a queue row that move with its estimated start (every pass, for most of a
# queue), besides its time and cycle: a row whose other columns are as last written is
# rewritten in these only (no index holds them; retention's time index holds gone rows only).
MOVING_COLUMNS = (
    "estimated_start",
    "estimate_basis",
    "waits_behind",
    "first_estimated_start",
    "first_estimated_at",
)
_UPDATE_MOVED = (
    f"UPDATE queue SET time = ?, cycle = ?, {', '.join(c + ' = ?' for c in MOVING_COLUMNS)} WHERE job_id = ?"
)
# Columns added after a journal's first release, with their type: added when missing.
ADDED_JOB_COLUMNS = (("reserved_at", "REAL"), ("reserved_nodes", "TEXT"))
ADDED_QUEUE_COLUMNS = (("priority_terms", "TEXT"),)


class DecisionRow(NamedTuple):
    """One decision as the journal records it (its status and RJMS answer come apart)."""

    cycle: int
    job_id: int
    action: str
    reason: str
    value: float | None
    model_outputs: dict | None
    mode: str  # apply, dry-run...


@dataclass
class JobRecord:
    """What rush remembers about one job between cycles (and across restarts)."""

    job_id: int
    skips: int = 0
    held_by_rush: bool = False
    requeues: int = 0
    # The job's RJMS restart count when rush requeued it (-1: never): a later read with a
    # higher count proves the requeue happened.
    requeued_at_restart: int = -1
    last_site_factor: int | None = None
    predicted_class: int = -1
    last_seen: float | None = None
    # The core's standing conservative reservation for the job (None: none), given back to
    # the next pass as PendingJob.reserved_at.
    reserved_at: float | None = None
    # Its nodes, in hostlist form (n[0-3,7]), when the pass kept them (conservative on nodes):
    # what `rush explain` shows of where the job is reserved.
    reserved_nodes: str | None = None

    def row(self) -> tuple:
        return (
            self.job_id,
            self.skips,
            int(self.held_by_rush),
            self.requeues,
            self.requeued_at_restart,
            self.last_site_factor,
            self.predicted_class,
            self.last_seen,
            self.reserved_at,
            self.reserved_nodes,
        )

    @classmethod
    def of_row(cls, row: tuple) -> JobRecord:
        return cls(row[0], row[1], bool(row[2]), row[3], row[4], row[5], row[6], row[7], row[8], row[9])

    def copy(self) -> JobRecord:
        """A shallow copy (its fields are immutable values), made at a third of
        ``dataclasses.replace``'s cost: the kept book copies up to a record per job a cycle."""
        new = object.__new__(JobRecord)
        new.__dict__.update(self.__dict__)
        return new


_DUE = '{"terms_at": '


def terms_due(at: float) -> str:
    """What a row holds of its priority terms until they are computed: the time they are of
    (the time its key was computed). ``rush explain`` computes them at that time."""
    return f"{_DUE}{float(at)!r}}}"  # a numpy float's repr is not JSON (np.float64(...))


def due_at(stored: str) -> float | None:
    """The time in :func:`terms_due`'s text, None for computed terms."""
    return float(stored[len(_DUE) : -1]) if stored.startswith(_DUE) else None


def _moved_values(row: QueueRow) -> tuple:
    return (row.time, row.cycle, *row[16:21], row.job_id)


class QueueRow(NamedTuple):
    """One job as rush last saw it (see the ``queue`` table); times are unix seconds, an
    estimated start of inf is stored as NULL (not in sight)."""

    job_id: int
    time: float
    cycle: int
    state: str  # pending, running, gone
    user: str
    account: str
    partition: str
    submit: float
    procs: int
    requested_time: float
    estimate: float | None
    runtime_class: int
    fairshare: float | None
    priority: int | None
    priority_group: int | None
    priority_key: float | None
    estimated_start: float | None
    estimate_basis: str | None
    waits_behind: int | None
    first_estimated_start: float | None
    first_estimated_at: float | None
    start: float | None
    model_outputs: str | None  # JSON
    # JSON: the terms of its priority (rush.core.priority_terms) when the key was computed, so
    # that rush explain reads them without loading the compiled core.
    priority_terms: str | None = None


@dataclass(frozen=True)
class Intent:
    id: int
    cycle: int
    job_id: int
    action: str
    value: float | None
    answer: str


@dataclass
class MemoryBook:
    """Per-job state in memory: dry-run plays the bookkeeping here, never in the journal."""

    records: dict[int, JobRecord] = field(default_factory=dict)

    def job(self, job_id: int) -> JobRecord:
        rec = self.records.get(job_id)
        return JobRecord(**rec.__dict__) if rec else JobRecord(job_id)

    def jobs(self) -> dict[int, JobRecord]:
        return {k: JobRecord(**v.__dict__) for k, v in self.records.items()}

    def save_job(self, rec: JobRecord) -> None:
        self.records[rec.job_id] = JobRecord(**rec.__dict__)

    def forget_jobs(self, job_ids: list[int]) -> None:
        for job_id in job_ids:
            self.records.pop(job_id, None)

    def mark_seen(self, job_ids: list[int], now: float) -> None:
        for job_id in job_ids:
            rec = self.records.get(job_id)
            if rec is not None and rec.last_seen != now:
                rec.last_seen = now

    def seen_before(self, before: float) -> list[int]:
        return [k for k, rec in self.records.items() if (rec.last_seen or 0) < before]


# JOB_COLUMNS' SQLite affinity (INTEGER or REAL, else TEXT) and whether NULL is stored as NULL
# (False: NOT NULL, where INSERT OR REPLACE stores the column's default, or the rowid).
_JOB_AFFINITY = (
    ("INTEGER", False),
    ("INTEGER", False),
    ("INTEGER", False),
    ("INTEGER", False),
    ("INTEGER", False),
    ("INTEGER", True),
    ("INTEGER", False),
    ("REAL", True),
    ("REAL", True),
    ("TEXT", True),
)


def _stored_real(value: object) -> float | None:
    """What a REAL column gives back for ``value``, or None when not certain (NaN, text...)."""
    if isinstance(value, float | int) and value == value:  # bools and numpy floats too; NaN: no
        return float(value) + 0.0  # -0.0 is stored as the integer 0: read back 0.0
    return None


def _stored_row(row: tuple) -> tuple | None:
    """The jobs row a read gives back after ``row`` is written (each column's affinity), or None
    when that is not certain (a NULL in a NOT NULL column, a numpy integer, NaN, ...)."""
    out = []
    for value, (kind, nullable) in zip(row, _JOB_AFFINITY, strict=True):
        if value is None:
            if not nullable:
                return None
            out.append(None)
        elif kind == "INTEGER":
            if not isinstance(value, int):  # a float or numpy value: stored as it may be
                return None
            out.append(int(value))  # a bool is stored as 0 or 1
        elif kind == "REAL":
            real = _stored_real(value)
            if real is None:
                return None
            out.append(real)
        elif type(value) is str:
            out.append(value)
        else:
            return None
    return tuple(out)


class LentRecords(dict):
    """A dict of the book's records as :meth:`KeptBook.lend` hands it out: a plain dict that
    takes a weak reference, so that the kept book can tell whether any holder still has it."""

    __slots__ = ("__weakref__",)


class KeptBook:
    """The journal's book as last read, kept up to date by the journal's own writes of it
    (write-through), so that a cycle's uses of the whole book (the builder, ``plan_actions``)
    do not each read every record (13-20 ms a read at 10 000 records; round 29, r31jobs).

    The journal stays the truth: ``records`` is None (no copy) until a read, and is dropped on
    any doubt: a write that fails or whose stored value is not certain, a transaction rolled back,
    another connection's commit. A dict handed out by :meth:`lend` never changes while it is
    held: writes replace records, and ``last_seen`` is set in place only on a record no held lent
    dict holds (with none held, on every record: no copies; round 30, r31touch). A record taken
    out of a lent dict is to be read while the dict is held (keep a copy to keep it longer).
    """

    def __init__(self) -> None:
        self.records: dict[int, JobRecord] | None = None
        self.version = 0  # the file's PRAGMA data_version when read
        self._fresh: set[int] = set()  # records made since the last lend (no lent dict holds them)
        self._lent: list[weakref.ref] = []  # the dicts lent, while perhaps held
        self._top = 0  # the largest id; a smaller new one leaves the dict out of id order
        self._sorted = True

    def fill(self, records: dict[int, JobRecord], version: int) -> None:
        self.records, self.version = records, version
        self._fresh = set(records)
        self._top = max(records, default=0)
        self._sorted = True  # a rowid table is read in id order

    def drop(self) -> None:
        self.records = None
        self._fresh = set()

    def lend(self) -> dict[int, JobRecord]:
        """The book, in job-id order (as a read gives it), as a dict of its own."""
        assert self.records is not None
        if not self._sorted:
            self.records = dict(sorted(self.records.items()))
            self._sorted = True
        self._fresh = set()
        lent = LentRecords(self.records)
        self._lent = [ref for ref in self._lent if ref() is not None]
        self._lent.append(weakref.ref(lent))
        return lent

    def _held(self) -> bool:
        """Whether a holder still has a dict lent (the daemon's uses drop theirs at once)."""
        self._lent = [ref for ref in self._lent if ref() is not None]
        return bool(self._lent)

    @contextmanager
    def writing(self) -> Iterator[None]:
        """A write of the book: the statement, then the copy; either failing drops the copy."""
        try:
            yield
        except BaseException:
            self.drop()
            raise

    def save(self, row: tuple) -> None:
        if self.records is None:
            return
        stored = _stored_row(row)
        if stored is None:
            self.drop()
            return
        job_id = stored[0]
        if job_id not in self.records:
            if self.records and job_id < self._top:
                self._sorted = False
            self._top = max(self._top, job_id)
        self.records[job_id] = JobRecord.of_row(stored)
        self._fresh.add(job_id)

    def forget(self, job_ids: list[int]) -> None:
        if self.records is None:
            return
        for job_id in job_ids:
            if type(job_id) is not int:  # the statement's comparison of other types: not copied
                self.drop()
                return
            self.records.pop(job_id, None)

    def mark_seen(self, job_ids: list[int], now: float) -> None:
        records = self.records
        if records is None:
            return
        at = _stored_real(now)
        if at is None:
            self.drop()
            return
        if not {int}.issuperset(map(type, job_ids)):  # the statement's rule for other types: not copied
            self.drop()
            return
        if not self._held():  # no lent dict holds a record: each changed in place, none copied
            for rec in map(records.get, job_ids):
                if rec is not None:
                    rec.last_seen = at
            return
        fresh = self._fresh
        for job_id in job_ids:
            rec = records.get(job_id)
            if rec is not None and rec.last_seen != at:
                if job_id not in fresh:  # a lent dict holds it: replaced, not changed
                    rec = records[job_id] = rec.copy()
                    fresh.add(job_id)
                rec.last_seen = at


def _has_json_each(db: sqlite3.Connection) -> bool:
    """Whether this SQLite has the JSON1 table functions (built in since 3.38, optional before)."""
    try:
        db.execute("SELECT value FROM json_each('[]')").fetchall()
    except sqlite3.OperationalError:
        return False
    return True


class Journal:
    def __init__(
        self,
        path: str | Path,
        retention: float | None = None,
        clock: Callable[[], float] = time.time,
        synchronous: str = "FULL",
    ) -> None:
        """``retention``: seconds decisions, events and cycles are kept (None: forever);
        ``clock``: the time rows are stamped with (a soak test replays weeks in minutes);
        ``synchronous``: SQLite's FULL (every commit reaches the disk) or NORMAL (a commit
        survives a crash of the process, not of the machine: the Flux scheduler module, which
        commits per scheduling pass, uses it)."""
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
        if retention is not None and not retention > 0:  # also refuses NaN
            raise ConfigError(
                f"journal retention must be > 0 seconds, not {retention!r}",
                where="daemon.journal_retention",
                fix='e.g. "90d"',
            )
        self.path = Path(path)
        self.retention = retention
        self.clock = clock
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # One thread at a time uses it (the daemon's loop), not always the one that opened it.
            self.db = sqlite3.connect(
                str(self.path), timeout=30, isolation_level=None, check_same_thread=False
            )
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(f"PRAGMA synchronous={synchronous}")
            # Truncate the WAL back to this size after a checkpoint instead of keeping its peak.
            self.db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT}")
            # A cycle's pages kept between cycles: SQLite's 2 MiB cache is smaller than the
            # pages a cycle at 10 000 pending touches (queue rows, the book, decisions), which
            # were then read again each cycle (round 31, r31rq). Filled only as pages are read.
            self.db.execute(f"PRAGMA cache_size={-PAGE_CACHE_KIB}")
            # A checkpoint copies each page once however often it was written since it: after
            # 4 000 pages, not SQLite's 1 000 (a cycle at 10 000 pending writes about 800), so
            # fewer copies; 4 000 frames of 4 KiB stay within WAL_LIMIT.
            self.db.execute(f"PRAGMA wal_autocheckpoint={CHECKPOINT_PAGES}")
            self.db.executescript(SCHEMA)
            # A journal written by an earlier rush lacks the columns added since: add them.
            have = {row[1] for row in self.db.execute("PRAGMA table_info(jobs)")}
            for column, kind in ADDED_JOB_COLUMNS:
                if column not in have:
                    self.db.execute(f"ALTER TABLE jobs ADD COLUMN {column} {kind}")
            have = {row[1] for row in self.db.execute("PRAGMA table_info(queue)")}
            for column, kind in ADDED_QUEUE_COLUMNS:
                if column not in have:
                    self.db.execute(f"ALTER TABLE queue ADD COLUMN {column} {kind}")
            # An earlier rush's time index held every row (each moved estimate rewrote it):
            # retention reads gone rows only (queue_gone, made above); no query read its index
            # by user (status filters a user's rows as it reads them), an insert more per row.
            self.db.execute("DROP INDEX IF EXISTS queue_time")
            self.db.execute("DROP INDEX IF EXISTS queue_user")
            # Fixed for the connection: asked once, not at every mark_seen.
            self._json_each = _has_json_each(self.db)
        except (OSError, sqlite3.DatabaseError) as exc:
            raise ConfigError(
                f"cannot open the journal: {exc}",
                where=str(self.path),
                fix="check daemon.journal and its directory's permissions (a corrupt file: move it away)",
            ) from exc
        self._depth = 0
        self._kept = KeptBook()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All statements inside commit together (nested uses join the outer one). One that
        ends by an exception, or whose commit fails, drops the kept book: it may hold writes
        rolled back."""
        if self._depth:
            self._depth += 1
            try:
                yield
            except BaseException:
                self._kept.drop()
                raise
            finally:
                self._depth -= 1
            return
        self.db.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._kept.drop()
            self.db.execute("ROLLBACK")
            raise
        else:
            try:
                self.db.execute("COMMIT")
            except BaseException:
                self._kept.drop()
                raise
        finally:
            self._depth = 0

    # -- cycles, events -------------------------------------------------------------------
    def next_cycle(self) -> int:
        with self.transaction():
            row = self.db.execute("SELECT value FROM meta WHERE key = 'cycle'").fetchone()
            cycle = int(row[0]) + 1 if row else 1
            self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('cycle', ?)", (str(cycle),))
        return cycle

    def meta(self, key: str) -> str | None:
        """A value of the journal's key-value table (None when unset)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def meta_default(self, key: str, value: str) -> str:
        """The value of ``key``, set to ``value`` first if unset (kept across restarts)."""
        with self.transaction():
            self.db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))
        return self.meta(key) or value

    def end_cycle(
        self,
        cycle: int,
        ok: bool,
        mode: str,
        pending: int | None = None,
        running: int | None = None,
        counts: dict[str, int] | None = None,
        seconds: float | None = None,
        error: str = "",
    ) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO cycles (cycle, time, ok, mode, pending, running, counts, seconds, error)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (cycle, self.clock(), int(ok), mode, pending, running, json.dumps(counts or {}), seconds, error),
        )
        if self.retention is not None:
            try:
                self.prune()
            except sqlite3.Error as exc:  # e.g. locked by a reader for 30 s: retry next cycle
                log.warning("journal retention skipped this cycle: %s", exc)

    def prune(self, now: float | None = None, max_batches: int = PRUNE_BATCHES) -> dict[str, int]:
        """Delete rows older than ``now - retention`` in bounded batches; returns deletions per table."""
        deleted = {table: 0 for table, _ in PRUNED}
        if self.retention is None:
            return deleted
        cutoff = (self.clock() if now is None else now) - self.retention
        batches = 0
        for table, keep in PRUNED:
            while batches < max_batches:
                batches += 1
                with self.transaction():
                    cur = self.db.execute(
                        f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table}"
                        f" WHERE time < ? AND {keep} LIMIT ?)",
                        (cutoff, PRUNE_BATCH),
                    )
                deleted[table] += cur.rowcount
                if cur.rowcount < PRUNE_BATCH:
                    break
        return deleted

    def counts(self) -> dict[str, int]:
        """Rows per table (decisions, events, cycles, jobs)."""
        return {
            table: self.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("decisions", "events", "cycles", "jobs")
        }

    def cycles(self) -> list[dict[str, Any]]:
        rows = self.db.execute(
            "SELECT cycle, time, ok, mode, pending, running, counts, seconds, error FROM cycles ORDER BY cycle"
        )
        keys = ("cycle", "time", "ok", "mode", "pending", "running", "counts", "seconds", "error")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def event(self, cycle: int | None, kind: str, message: str) -> None:
        self.db.execute(
            "INSERT INTO events (time, cycle, kind, message) VALUES (?, ?, ?, ?)",
            (self.clock(), cycle, kind, message),
        )

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        query = "SELECT id, time, cycle, kind, message FROM events"
        rows = self.db.execute(
            query + (" WHERE kind = ?" if kind else "") + " ORDER BY id", (kind,) if kind else ()
        )
        return [dict(zip(("id", "time", "cycle", "kind", "message"), r, strict=True)) for r in rows]

    # -- decisions ------------------------------------------------------------------------
    def record(self, row: DecisionRow, status: str, answer: str = "") -> int:
        """Journal one decision with its status (``intent``, ``done``...); returns its id."""
        cycle, job_id, action, reason, value, model_outputs, mode = row
        cur = self.db.execute(
            "INSERT INTO decisions (time, cycle, job_id, action, reason, value, model_outputs, mode, status, answer)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                self.clock(),
                cycle,
                job_id,
                action,
                reason,
                value,
                json.dumps(model_outputs or {}, default=str),
                mode,
                status,
                answer,
            ),
        )
        return int(cur.lastrowid)

    def finish(self, decision_id: int, status: str, answer: str) -> None:
        """Settle a decision: ``done``/``failed``, or leave it an ``intent`` with the answer so far."""
        self.db.execute(
            "UPDATE decisions SET status = ?, answer = ? WHERE id = ?", (status, answer, decision_id)
        )

    def open_intents(self) -> list[Intent]:
        rows = self.db.execute(
            "SELECT id, cycle, job_id, action, value, answer FROM decisions WHERE status = 'intent' ORDER BY id"
        )
        return [Intent(*r) for r in rows]

    def decisions(self, job_id: int | None = None, action: str | None = None) -> list[dict[str, Any]]:
        where, args = [], []
        if job_id is not None:
            where.append("job_id = ?")
            args.append(job_id)
        if action is not None:
            where.append("action = ?")
            args.append(action)
        query = f"SELECT {', '.join(DECISION_COLUMNS)} FROM decisions"
        if where:
            query += " WHERE " + " AND ".join(where)
        rows = self.db.execute(query + " ORDER BY id", args)
        out = [dict(zip(DECISION_COLUMNS, r, strict=True)) for r in rows]
        for d in out:
            d["model_outputs"] = json.loads(d["model_outputs"] or "{}")
        return out

    # -- per-job state --------------------------------------------------------------------
    def _kept_book(self) -> dict[int, JobRecord] | None:
        """The kept book, if no other connection committed since it was read."""
        kept = self._kept
        if kept.records is not None and self.db.execute("PRAGMA data_version").fetchone()[0] != kept.version:
            kept.drop()
        return kept.records

    def job(self, job_id: int) -> JobRecord:
        records = self._kept_book()
        if records is not None:
            rec = records.get(job_id)
            return rec.copy() if rec is not None else JobRecord(job_id)
        row = self.db.execute(
            f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs WHERE job_id = ?", (job_id,)
        ).fetchone()
        return JobRecord.of_row(row) if row else JobRecord(job_id)

    def jobs(self) -> dict[int, JobRecord]:
        """Every record by job id, in id order: read once, then kept as the journal writes them
        (:class:`KeptBook`). The dict is the caller's and does not change while held; its records
        are to be read, not changed, and while the dict is held (copy one to change or keep it,
        or use :meth:`job`)."""
        if self._kept_book() is None:
            with self._kept.writing():
                version = self.db.execute("PRAGMA data_version").fetchone()[0]  # before the read
                rows = self.db.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM jobs")
                self._kept.fill({r[0]: JobRecord.of_row(r) for r in rows}, version)
        return self._kept.lend()

    def save_job(self, rec: JobRecord) -> None:
        row = rec.row()
        with self._kept.writing():
            self.db.execute(
                f"INSERT OR REPLACE INTO jobs ({', '.join(JOB_COLUMNS)}) VALUES ({', '.join('?' * len(JOB_COLUMNS))})",
                row,
            )
            self._kept.save(row)

    def forget_jobs(self, job_ids: list[int]) -> None:
        with self._kept.writing():
            self.db.executemany("DELETE FROM jobs WHERE job_id = ?", [(j,) for j in job_ids])
            self._kept.forget(job_ids)

    def mark_seen(self, job_ids: list[int], now: float) -> None:
        """The records of these jobs get ``last_seen = now`` where it differs; a job without a
        record gets none. One statement: a record saved each (the whole book every cycle, as
        ``last_seen`` moves with every read) cost about 6 us a record (round 28, r31walks)."""
        with self._kept.writing():
            if self._json_each:
                self.db.execute(
                    "UPDATE jobs SET last_seen = ? WHERE last_seen IS NOT ? AND job_id IN (SELECT value FROM json_each(?))",
                    (now, now, json.dumps(job_ids)),
                )
            else:  # an SQLite built without JSON1 (before 3.38 it was optional): a statement an id
                self.db.executemany(
                    "UPDATE jobs SET last_seen = ? WHERE job_id = ? AND last_seen IS NOT ?",
                    ((now, job_id, now) for job_id in job_ids),
                )
            self._kept.mark_seen(job_ids, now)

    def seen_before(self, before: float) -> list[int]:
        """The jobs whose record was last seen before ``before`` (never seen: as at 0)."""
        return [
            r[0]
            for r in self.db.execute("SELECT job_id FROM jobs WHERE COALESCE(last_seen, 0) < ?", (before,))
        ]

    # -- the queue as rush sees it -----------------------------------------------------------
    def record_queue(self, rows: list[QueueRow], moved: list[QueueRow] | None = None) -> None:
        """Write these rows (the caller passes only the rows that changed), and of the rows in
        ``moved`` (rows last written whole, changed since in MOVING_COLUMNS, time and cycle
        only) those columns, all in one transaction."""
        if not rows and not moved:
            return
        marks = ", ".join("?" * len(QUEUE_COLUMNS))
        with self.transaction():
            if rows:
                self.db.executemany(
                    f"INSERT OR REPLACE INTO queue ({', '.join(QUEUE_COLUMNS)}) VALUES ({marks})", rows
                )
            if moved:
                self.db.executemany(_UPDATE_MOVED, map(_moved_values, moved))

    def queue(self, states: tuple[str, ...] = ("pending", "running")) -> dict[int, QueueRow]:
        """The journaled queue rows in these states, by job id."""
        marks = ", ".join("?" * len(states))
        rows = self.db.execute(
            f"SELECT {', '.join(QUEUE_COLUMNS)} FROM queue WHERE state IN ({marks})", states
        )
        return {r[0]: QueueRow(*r) for r in rows}

    def close(self) -> None:
        self._kept.drop()
        self.db.close()
