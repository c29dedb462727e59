"""Read-only questions to the journal: one job's story (``rush explain``) and the queue as rush
sees it (``rush status``), and who may see which job.

The journal is opened read-only (a ``mode=ro`` URI: never created, migrated or written) with a
short busy timeout, so a query never waits long behind the daemon and never changes anything.
A missing file or a file that is not a journal is a :class:`~rush.errors.ConfigError` (a wrong
path: CLI exit 2); a corrupt or locked one a :class:`JournalUnavailable`.

A job's decisions can number tens of thousands (an advice row per cycle for a week): runs of the
same action with the same status, answer and reason shape (the reason with its numbers taken
out: a shadow time or a rank moves each cycle) are collapsed into one line with their first and
last time and count, and the lines kept are bounded (:data:`MAX_HISTORY_LINES`).

Visibility (:func:`may_see`) follows the RJMS: on Slurm every user sees every job unless
``PrivateData=jobs``; root, SlurmUser and Slurm operators/administrators see all. On Flux the
instance owner sees all and a guest only their own jobs.

The ``--json`` keys (:meth:`JobView.to_json`, :func:`status_json`) are stable: new keys may be
added, none renamed or removed.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple
from urllib.parse import quote

from rush.errors import ConfigError, RushError
from rush.planner.journal import QUEUE_COLUMNS, due_at

if TYPE_CHECKING:  # the core (numba) is imported only to compute priority terms
    from rush.core.config import CoreConfig

# Seconds a query waits for a lock held by the daemon before giving up (it commits in ms).
BUSY_TIMEOUT = 2.0
# History lines kept per job after collapsing: the first ones and the most recent ones.
MAX_HISTORY_LINES = 200
HISTORY_HEAD = 20
# Actions whose rows are a skip of the job (a hold, then one ``skip`` per cycle it stays held).
SKIP_ACTIONS = ("hold", "skip")
REQUIRED_TABLES = ("decisions", "jobs", "meta", "queue")
# A standing conservative reservation: its time and, when the pass kept them, its nodes (hostlist).
RESERVATION_COLUMNS = ("reserved_at", "reserved_nodes")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


class JournalUnavailable(RushError):
    """The journal exists but cannot be read now: locked beyond the timeout, or corrupt."""


class JobNotFound(RushError):
    """The job id is not in the journal (never seen by rush, or pruned by retention)."""


class JobNotVisible(RushError):
    """The caller may not see this job under the RJMS's rules."""


# -- who may see which job ------------------------------------------------------------------
@dataclass(frozen=True)
class Viewer:
    """Who asks: the OS uid (kernel-verified through a socket) and its user name."""

    uid: int
    name: str | None


@dataclass(frozen=True)
class VisibilityRules:
    """The RJMS's notion of who may see which job."""

    rjms: Literal["slurm", "flux"]
    # Slurm's PrivateData=jobs: a user sees only their own jobs.
    private_jobs: bool = False
    # uids that see every job: root, SlurmUser and Slurm operators/admins; Flux's instance owner.
    privileged: frozenset[int] = frozenset({0})


def may_see(rules: VisibilityRules, viewer: Viewer, owner: str | None) -> bool:
    """Whether ``viewer`` may see a job of ``owner`` (a user name, or a uid on Flux)."""
    if viewer.uid in rules.privileged:
        return True
    if rules.rjms == "slurm" and not rules.private_jobs:
        return True  # as squeue: everyone sees everyone's jobs
    return owner is not None and owner in (viewer.name, str(viewer.uid))


EVERYONE = VisibilityRules("slurm")


# -- what a query answers ---------------------------------------------------------------------
@dataclass(frozen=True)
class HistoryLine:
    """A run of one action with the same status, answer and reason shape."""

    action: str
    status: str
    mode: str
    reason: str  # the last row's
    answer: str
    value: float | None  # the last row's
    first_time: float
    last_time: float
    first_cycle: int
    last_cycle: int
    count: int
    model_outputs: dict[str, Any] | None = None  # the last row's, for skips and kills


@dataclass
class JobView:
    job_id: int
    row: dict[str, Any] | None  # the queue row (QUEUE_COLUMNS), model_outputs decoded
    rank: int | None  # among pending jobs, 1 first
    pending: int  # pending jobs in rush's view
    terms: dict[str, Any] | None  # priority_terms, None when not computable
    terms_error: str | None
    waits_behind: dict[str, Any] | None  # job_id (None when hidden), predicted_end
    record: dict[str, Any] | None  # the jobs table row (skips, requeues, held by rush)
    skips: int
    skip_predictions: list[HistoryLine] = field(default_factory=list)
    kills: list[HistoryLine] = field(default_factory=list)
    history: list[HistoryLine] = field(default_factory=list)
    history_rows: int = 0
    history_omitted: int = 0  # lines left out in the middle (MAX_HISTORY_LINES)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class StatusLine(NamedTuple):
    """One line of ``rush status`` (a NamedTuple: 10 000 of them turn into JSON cheaply)."""

    job_id: int
    user: str | None
    state: str
    priority: int | None
    rank: int | None
    estimated_start: float | None
    estimate_basis: str | None
    runtime_class: str | None
    skips: int


def status_json(lines: Iterable[StatusLine]) -> list[dict[str, Any]]:
    return [line._asdict() for line in lines]


def job_view_of_json(data: dict[str, Any]) -> JobView:
    """A JobView from its JSON (the query socket's answer)."""
    lines = {k: [HistoryLine(**h) for h in data[k]] for k in ("skip_predictions", "kills", "history")}
    return JobView(**{**data, **lines})


# -- the query layer --------------------------------------------------------------------------
class JournalQuery:
    """A read-only connection to a journal; use as a context manager."""

    def __init__(self, path: str | Path, busy_timeout: float = BUSY_TIMEOUT) -> None:
        self.path = Path(path)
        try:
            problem = (
                None if self.path.is_file() else "no journal here" if not self.path.exists() else "not a file"
            )
        except OSError as exc:  # e.g. a directory the caller may not cross
            problem = f"cannot read the journal ({exc.strerror})"
        if problem is not None:
            raise ConfigError(
                problem,
                where=str(self.path),
                fix="give the daemon's journal (daemon.journal in rush.toml), e.g. --journal "
                "/var/lib/rush/journal.sqlite, or ask through the daemon's socket (--socket)",
            )
        try:
            uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
            self.db = sqlite3.connect(uri, uri=True, timeout=busy_timeout, check_same_thread=False)
            tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            missing = [t for t in REQUIRED_TABLES if t not in tables]
            if not missing:
                have = {r[1] for r in self.db.execute("PRAGMA table_info(queue)")}
                missing = [f"queue.{c}" for c in QUEUE_COLUMNS if c not in have]
        except sqlite3.Error as exc:
            raise _unavailable(self.path, exc) from exc
        if missing:
            self.db.close()
            raise ConfigError(
                f"not a rush journal of this version (missing {', '.join(missing)})",
                where=str(self.path),
                fix="give the daemon's journal (daemon.journal); a journal of an older rush gets its "
                "queue table when this version's daemon runs one cycle",
            )

    def __enter__(self) -> JournalQuery:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def _rows(self, query: str, args: tuple = ()) -> list[tuple]:
        try:
            return self.db.execute(query, args).fetchall()
        except sqlite3.Error as exc:
            raise _unavailable(self.path, exc) from exc

    # -- one job ------------------------------------------------------------------------------
    def owner(self, job_id: int) -> str | None:
        rows = self._rows("SELECT user FROM queue WHERE job_id = ?", (job_id,))
        return rows[0][0] if rows else None

    def job_view(
        self, job_id: int, viewer: Viewer | None = None, rules: VisibilityRules = EVERYONE
    ) -> JobView:
        """Everything rush knows about ``job_id``; JobNotFound / JobNotVisible when it may not say."""
        if not 0 <= job_id < 2**63:  # SQLite's integers; no RJMS numbers a job beyond them
            raise JobNotFound(
                f"job {job_id} is not a job id rush can have seen (ids are 0 to 2**63 - 1)",
                where=str(self.path),
                fix="check the id (squeue / flux jobs); `rush status` lists the jobs rush sees",
            )
        found = self._rows(f"SELECT {', '.join(QUEUE_COLUMNS)} FROM queue WHERE job_id = ?", (job_id,))
        row = dict(zip(QUEUE_COLUMNS, found[0], strict=True)) if found else None
        decisions = self._rows(
            "SELECT id, time, cycle, action, reason, value, model_outputs, mode, status, answer"
            " FROM decisions WHERE job_id = ? ORDER BY id",
            (job_id,),
        )
        if row is None and not decisions:
            raise JobNotFound(
                f"job {job_id} is not in rush's journal (never seen by rush, or older than the "
                "journal's retention)",
                where=str(self.path),
                fix="check the id (squeue / flux jobs); `rush status` lists the jobs rush sees",
            )
        if viewer is not None and not may_see(rules, viewer, None if row is None else row["user"]):
            raise JobNotVisible(
                f"job {job_id} belongs to another user, and {_rule_words(rules)}",
                fix="ask about your own jobs (`rush status` lists them), or ask your administrator",
            )
        stored_terms = None
        if row is not None:
            row["model_outputs"] = _json(row["model_outputs"])
            stored_terms = row.pop("priority_terms", None)
        record = self._record(job_id)
        lines = collapse(decisions)
        skip_lines = [h for h in lines if h.action in SKIP_ACTIONS]
        view = JobView(
            job_id=job_id,
            row=row,
            rank=None,
            pending=self._rows("SELECT count(*) FROM queue WHERE state = 'pending'")[0][0],
            terms=None,
            terms_error=None,
            waits_behind=None,
            record=record,
            skips=record["skips"] if record else sum(h.count for h in skip_lines),
            skip_predictions=skip_lines[-MAX_HISTORY_LINES:],
            kills=[h for h in lines if h.action == "kill"][-MAX_HISTORY_LINES:],
            history_rows=len(decisions),
        )
        view.history, view.history_omitted = _bounded(lines)
        if row is not None and row["state"] == "pending":
            view.rank = self._rank(row)
            view.terms, view.terms_error = self._terms(row, stored_terms)
        if row is not None and row["waits_behind"] is not None:
            view.waits_behind = self._waited_for(int(row["waits_behind"]), viewer, rules)
        return view

    def _record(self, job_id: int) -> dict[str, Any] | None:
        # A journal of an older rush lacks the reservation columns until its daemon runs a cycle.
        have = {r[1] for r in self._rows("PRAGMA table_info(jobs)")}
        reservation = [c for c in RESERVATION_COLUMNS if c in have]
        rows = self._rows(
            f"SELECT {', '.join(['skips', 'held_by_rush', 'requeues', 'last_site_factor', *reservation])}"
            " FROM jobs WHERE job_id = ?",
            (job_id,),
        )
        if not rows:
            return None
        skips, held, requeues, factor, *stored = rows[0]
        record = {
            "skips": skips,
            "held_by_rush": bool(held),
            "requeues": requeues,
            "last_site_factor": factor,
        }
        return record | dict.fromkeys(RESERVATION_COLUMNS) | dict(zip(reservation, stored, strict=True))

    def _rank(self, row: dict[str, Any]) -> int | None:
        """1 + the pending jobs ahead: a higher RJMS priority value, or (scheduler mode, no
        value) a smaller (group, key)."""
        if row["priority"] is not None:
            ahead = self._rows(
                "SELECT count(*) FROM queue WHERE state = 'pending' AND priority > ?", (row["priority"],)
            )
        elif row["priority_group"] is not None and row["priority_key"] is not None:
            ahead = self._rows(
                "SELECT count(*) FROM queue WHERE state = 'pending' AND (priority_group < ?"
                " OR (priority_group = ? AND priority_key < ?))",
                (row["priority_group"], row["priority_group"], row["priority_key"]),
            )
        else:
            return None
        return int(ahead[0][0]) + 1

    def core_config(self) -> tuple[CoreConfig, float]:
        """The core's configuration and time origin the daemon last ran with."""
        meta = dict(self._rows("SELECT key, value FROM meta WHERE key IN ('core_config', 'time_origin')"))
        if "core_config" not in meta:
            raise RushError("the journal has no core configuration (written by an older daemon)")
        if "time_origin" not in meta:
            raise RushError(
                "the journal has no time origin (r = submit - origin): the terms cannot be recomputed"
            )
        return core_config_of(meta["core_config"]), float(meta["time_origin"])

    def _terms(self, row: dict[str, Any], stored: str | None) -> tuple[dict[str, Any] | None, str | None]:
        at = float(row["time"])  # the terms at the time the core computed the job's priority, not now
        due = None if not stored else due_at(stored)
        if due is not None:  # not computed yet by the daemon (its budget per pass): their time
            at, stored = due, None
        if stored:
            # Written by the daemon with the key: no need to load the compiled core here.
            try:
                return json.loads(stored), None
            except ValueError as exc:
                return None, f"unreadable priority terms in the journal: {exc}"
        # A row written without its terms: compute them with the core (numba is imported).
        from rush.jit_cache import skip_numba_blas_probe

        skip_numba_blas_probe()
        from rush.core.priority_terms import JobInputs, PriorityTerms, priority_terms

        try:
            config, origin = self.core_config()
            job = JobInputs(
                submit=float(row["submit"]),
                procs=int(row["procs"]),
                estimate=float(row["estimate"] if row["estimate"] is not None else row["requested_time"]),
                runtime_class=int(row["runtime_class"]),
                fairshare=row["fairshare"],
            )
            terms: PriorityTerms = priority_terms(config, job, at, origin)
        except (RushError, ValueError, TypeError, OSError) as exc:
            return None, str(exc)
        out = asdict(terms)
        out["policy"] = config.policy.name
        out["policy_text"] = json.loads(
            self._rows("SELECT value FROM meta WHERE key = 'core_config'")[0][0]
        ).get("policy")
        return out, None

    def _waited_for(self, job_id: int, viewer: Viewer | None, rules: VisibilityRules) -> dict[str, Any]:
        """The job waited behind and its predicted end (start + estimate, else its limit)."""
        rows = self._rows(
            "SELECT state, user, start, estimated_start, estimate, requested_time FROM queue WHERE job_id = ?",
            (job_id,),
        )
        shown = viewer is None or (bool(rows) and may_see(rules, viewer, rows[0][1]))
        out: dict[str, Any] = {"job_id": job_id if shown else None, "state": None, "predicted_end": None}
        if rows:
            state, _, start, estimated_start, estimate, limit = rows[0]
            began = start if state == "running" else estimated_start
            length = estimate if estimate is not None else limit
            out["state"] = state
            if began is not None and length is not None:
                out["predicted_end"] = float(began) + float(length)
        return out

    # -- the queue ----------------------------------------------------------------------------
    def queue_view(
        self, viewer: Viewer | None = None, rules: VisibilityRules = EVERYONE, user: str | None = None
    ) -> list[StatusLine]:
        """One line per pending or running job, pending first in rank order; jobs the viewer
        may not see are left out (ranks still count them: they are ahead all the same)."""
        rows = self._rows(
            "SELECT q.job_id, q.user, q.state, q.priority, q.priority_group, q.priority_key,"
            " q.estimated_start, q.estimate_basis, q.model_outputs, q.runtime_class, j.skips"
            " FROM queue q LEFT JOIN jobs j ON j.job_id = q.job_id WHERE q.state IN ('pending', 'running')"
        )
        ranks = _ranks([r for r in rows if r[2] == "pending"])
        lines = []
        for job_id, owner, state, prio, _, _, est, basis, outputs, cls, skips in rows:
            if user is not None and owner != user:
                continue
            if viewer is not None and not may_see(rules, viewer, owner):
                continue
            lines.append(
                StatusLine(
                    job_id,
                    owner,
                    state,
                    prio,
                    ranks.get(job_id),
                    est,
                    basis,
                    _class_name(outputs, cls),
                    skips or 0,
                )
            )
        lines.sort(key=lambda s: (s.state != "pending", s.rank or math.inf, s.job_id))
        return lines


def core_config_of(text: str) -> CoreConfig:
    """The CoreConfig the journal's ``core_config`` meta describes (queue_view.describe_core)."""
    from rush.core.config import CoreConfig
    from rush.models.policies.heuristic_file import parse_policy_text

    fields = json.loads(text)
    policy = parse_policy_text(fields.pop("policy"))
    backfill = fields.pop("backfill", "easy")
    threshold = fields.pop("threshold", None)
    known = set(CoreConfig.__dataclass_fields__)
    return CoreConfig.from_names(
        policy, backfill, threshold, **{k: v for k, v in fields.items() if k in known}
    )


def collapse(rows: list[tuple]) -> list[HistoryLine]:
    """Decision rows (id, time, cycle, action, reason, value, model_outputs, mode, status,
    answer), in id order, as runs: a row extends the run of its action when status, mode,
    answer and the reason's shape are the same, else starts a new one."""
    runs: list[list] = []  # [first row, last row, count], mutable: tens of thousands of rows
    open_run: dict[str, tuple[list, tuple]] = {}  # action -> (its run, signature)
    for row in rows:
        _, _, _, action, reason, _, _, mode, status, answer = row
        signature = (status, mode, answer or "", _NUMBER.sub("#", reason))
        run = open_run.get(action)
        if run is not None and run[1] == signature:
            run[0][1] = row
            run[0][2] += 1
        else:
            new = [row, row, 1]
            runs.append(new)
            open_run[action] = (new, signature)
    lines = []
    for first, last, count in runs:
        _, time, cycle, action, reason, value, outputs, mode, status, answer = last
        # Model outputs are decoded only for the lines that show them (one per line, not per row).
        shown = _json(outputs) or None if action in (*SKIP_ACTIONS, "kill") else None
        lines.append(
            HistoryLine(
                action,
                status,
                mode,
                reason,
                answer or "",
                value,
                first[1],
                time,
                first[2],
                cycle,
                count,
                shown,
            )
        )
    return lines


def _bounded(lines: list[HistoryLine]) -> tuple[list[HistoryLine], int]:
    if len(lines) <= MAX_HISTORY_LINES:
        return lines, 0
    tail = MAX_HISTORY_LINES - HISTORY_HEAD
    return lines[:HISTORY_HEAD] + lines[-tail:], len(lines) - MAX_HISTORY_LINES


def _ranks(pending: list[tuple]) -> dict[int, int]:
    """Rank of each pending row (job_id, user, state, priority, group, key, ...): ties share one."""
    out: dict[int, int] = {}
    valued = sorted((r for r in pending if r[3] is not None), key=lambda r: -r[3])
    keyed = sorted((r for r in pending if r[3] is None and r[4] is not None), key=lambda r: (r[4], r[5]))
    for ordered, sort_key in ((valued, lambda r: r[3]), (keyed, lambda r: (r[4], r[5]))):
        previous, rank = None, 0
        for i, r in enumerate(ordered):
            if sort_key(r) != previous:
                previous, rank = sort_key(r), i + 1
            out[r[0]] = rank
    return out


def _class_name(outputs: str | None, runtime_class: int | None) -> str | None:
    decoded = _json(outputs)
    if decoded.get("runtime_class") is not None:
        return str(decoded["runtime_class"])
    return None if runtime_class is None or runtime_class < 0 else str(runtime_class)


def _json(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {"unreadable": text[:200]}
    return value if isinstance(value, dict) else {"value": value}


def _rule_words(rules: VisibilityRules) -> str:
    if rules.rjms == "flux":
        return "on Flux only the instance owner sees other users' jobs"
    return "Slurm's PrivateData=jobs lets users see only their own jobs"


def _unavailable(path: Path, exc: sqlite3.Error) -> RushError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return JournalUnavailable(
            f"the journal is locked ({text}) beyond {BUSY_TIMEOUT:.0f} s",
            where=str(path),
            fix="try again; if it stays locked, look for a process holding it (fuser) besides the daemon",
        )
    if "unable to open" in text or "readonly" in text:
        return ConfigError(
            f"cannot open the journal read-only ({text})",
            where=str(path),
            fix="check the file's permissions, or ask through the daemon's socket (--socket)",
        )
    return JournalUnavailable(
        f"the journal cannot be read ({text}): corrupt or not SQLite",
        where=str(path),
        fix="check the path (daemon.journal); a corrupt journal: stop the daemon and move the file away",
    )
