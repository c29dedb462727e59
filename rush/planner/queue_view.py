"""The queue as rush sees it, one journal row per job: what ``rush status`` lists and
``rush explain`` starts from.

A cycle's rows come from the RJMS's read (owner, account, state), the snapshot the core saw
(inputs) and the core's decisions (priority value, group and key, estimated start, why, the
job it waits behind). Only rows that changed are written; the first estimate made for a job
is kept, so its accuracy can be measured against its real start.
"""

from __future__ import annotations

import heapq
import json
import math
import operator
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, is_dataclass
from operator import attrgetter, is_not, itemgetter, ne
from typing import Any, NamedTuple

import numpy as np

from rush.core.config import CoreConfig
from rush.core.decision_columns import NONE, DecisionColumns, rows_of
from rush.core.job_columns import PendingColumns, PendingRows, pending_columns
from rush.core.priority_terms import JobInputs, priority_terms
from rush.core.runtime_predictions import correction_code, running_estimate
from rush.core.snapshot import Decisions
from rush.core.start_estimates import shown_starts
from rush.planner.journal import QueueRow, due_at, terms_due
from rush.planner.snapshot_builder import Built
from rush.rjms.base import ClusterState, RJMSJob


@dataclass(frozen=True)
class QueueView:
    cycle: int
    now: float
    state: ClusterState
    built: Built
    decisions: Decisions
    config: CoreConfig
    policy_text: str  # the policy as the site wrote it


def terms_json(config: CoreConfig, policy_text: str, job: JobInputs, now: float, time_origin: float) -> str:
    """The terms of a job's priority at ``now``, as rush explain shows them (JSON)."""
    # The encoder turns the nested dataclasses into objects itself (asdict's deep copy cost
    # more than the rest of a job's first journal row).
    terms = dict(vars(priority_terms(config, job, now, time_origin)))
    terms["policy"] = config.policy.name
    terms["policy_text"] = policy_text
    return json.dumps(terms, default=_plain, sort_keys=True)


def _plain(value: object) -> object:
    return vars(value) if is_dataclass(value) else float(value)  # type: ignore[arg-type]


# A pending job's values its row reads from the pass's columns: its own estimate (None: none),
# runtime class and fairshare factor (None: the RJMS gave none), as its core job holds them.
Pending = tuple[float | None, int, float | None]


def _pending_of(view: QueueView) -> dict[int, Pending]:
    """Each pending job's row values by job id, read from the pass's pending columns (the
    builder's, so that no core job is made for a job no decision names)."""
    columns = _pending_columns(view)
    estimates, fairshares = columns.as_given("estimate"), columns.as_given("fairshare")
    values = zip(estimates, columns.runtime_class.tolist(), fairshares, strict=True)
    return dict(zip(columns.job_id.tolist(), values, strict=True))


def _pending_columns(view: QueueView) -> PendingColumns:
    pending = view.built.snapshot.pending
    return pending.columns if isinstance(pending, PendingRows) else pending_columns(pending)


def _inputs(job: RJMSJob, p: Pending) -> JobInputs:
    """The priority inputs of pending ``job`` (its core job's: submit, procs and request the
    RJMS's, the estimate its own or else the request)."""
    estimate = job.requested_time if p[0] is None else p[0]
    return JobInputs(job.submit, job.procs, estimate, p[1], p[2])


def describe_core(config: CoreConfig, policy_text: str) -> str:
    """The core's configuration as JSON, with the policy as the site wrote it."""
    fields = asdict(config)
    fields.pop("policy", None)
    fields.pop("backfill_policy", None)
    return json.dumps({"policy": policy_text, **fields}, default=str, sort_keys=True)


def _running_estimates(view: QueueView) -> dict[int, float]:
    """Running jobs' predicted lengths as the core's projection uses them (a prediction the run
    outlived, corrected by the configured rule): what ``rush explain`` ends them at."""
    code = correction_code(view.config.prediction_correction)
    now = view.now
    return {
        r.job_id: float(running_estimate(code, float(r.estimate), now - r.start, float(r.requested_time)))
        for r in view.built.snapshot.running
        if r.estimate is not None
    }


# What queue_delta keeps between passes in the caller's ``inputs`` dict (the shells keep it
# while the rows it stands for are journaled): each job's inputs of its row at the last pass
# ("sig": the RJMS job's fields, pending values, running estimate, decisions; "out": its
# outputs object), the outputs' JSON by object id ("json": (object, text)), and the rows still
# waiting for their priority terms ("due": a heap of (submit, job id); "queued": its ids).
RowInputs = Any

# The RJMS job's fields a row reads.
_FIELDS = attrgetter("state", "start", "user", "account", "partition", "submit", "procs", "requested_time")
_JOB_ID = attrgetter("job_id")
_FIRST = itemgetter(0)

# New priority-terms JSON per pass at most (about 15 us each): a first pass over 10 000 pending
# jobs would spend more on them than on the pass. A row whose terms are not computed yet holds
# the time they are of (:func:`terms_due`; ``rush explain`` then computes them at that time: the
# same terms) and gets them at a later pass, the longest-waiting jobs first.
TERMS_PER_PASS = 256


class QueueDelta(NamedTuple):
    """What a pass changes in the journal's queue rows: ``whole``, rows written whole (new, or
    changed in what they show of the job); ``moved``, rows whose only changes are in
    ``MOVING_COLUMNS`` (the estimated start and what comes with it), written as such."""

    whole: list[QueueRow]
    moved: list[QueueRow]


def queue_rows(
    view: QueueView,
    previous: dict[int, QueueRow],
    inputs: dict[str, RowInputs] | None = None,
    hold_estimates: bool = False,
) -> list[QueueRow]:
    """The rows that changed since ``previous`` (the rows last written, by job id), with
    jobs that left the queue marked ``gone`` (:func:`queue_delta`'s rows, whole first)."""
    delta = queue_delta(view, previous, inputs, hold_estimates)
    return delta.whole + delta.moved


def queue_delta(
    view: QueueView,
    previous: dict[int, QueueRow],
    inputs: dict[str, RowInputs] | None = None,
    hold_estimates: bool = False,
) -> QueueDelta:
    """The rows that changed since ``previous`` (the rows last written, by job id), with jobs
    that left the queue marked ``gone``, split by what changed. ``inputs``, when given, is kept by
    the caller between calls (this call replaces its contents): a job whose row inputs are those
    of the last call is not looked at again (its row is as written), outputs kept while a job is
    unchanged are encoded once, and the rows waiting for their terms are found without a walk.
    Built in bulk: the values a row reads of the pass (its pending columns, the running jobs'
    estimates, the decisions' columns: :class:`rush.core.decision_columns.DecisionColumns`)
    gathered as arrays aligned with the RJMS's jobs and compared with the last call's as arrays;
    the RJMS jobs' own fields and outputs compared with C-level maps; one row built only for a
    job that is new or whose inputs changed.

    ``hold_estimates`` (the shells'): a row keeps the estimated start it shows (``previous``'s)
    while the core's granularity holds it (:func:`rush.core.start_estimates.shown_starts`:
    within max(60 s, 5 % of the wait ahead), same basis and job waited behind), so a pass
    where estimates only drift by a second writes nothing; else every move is written."""
    now, cycle = view.now, view.cycle
    jobs = view.state.jobs
    ids = list(map(_JOB_ID, jobs))
    at = _row_columns(view, np.array(ids, dtype=np.int64))
    memo = inputs if inputs is not None else {}
    # Rows whose only change is moving and whose terms wait (with their positions): the rows a
    # whole build gives, wanting their terms (_moved_rows).
    due_rows: list[tuple[int, QueueRow]] = []
    outs = list(map(view.built.outputs.get, ids))
    # Each job's object as the builder kept it where it found the read's equal (the daemon's
    # fresh reads of unchanged pending jobs), else the read's: the same object while unchanged.
    kept = view.built.kept_jobs
    objects = list(map(kept.get, ids, jobs)) if kept else list(jobs)
    if "cols" in memo:  # a job is looked at when new, or when anything its row reads changed
        last = memo["cols"]
        rows = rows_of(last["ids"], at["ids"])  # each job's position in the last call's lists
        if hold_estimates:
            _show_starts(at, last, rows, now)
        changed, moving = _changed(at, last, rows)
        # Each job's entries in the memo's lists (-1, a new job: their last entry, None); a
        # prefix of jobs listed in the same order as last time is a slice.
        same = rows == np.arange(len(rows))
        head = len(rows) if same.all() else int(np.argmin(same))
        back = rows[head:].tolist()
        # The RJMS's job objects are frozen: one kept since the last call has its fields.
        lasts = _aligned(memo["job"], head, back)
        other = np.fromiter(map(is_not, objects, lasts), dtype=np.bool_, count=len(ids)) & ~changed
        if other.any():  # a fresh object (the daemon's read): compared by the fields a row reads
            fresh = other.nonzero()[0].tolist()
            got = operator.itemgetter(*fresh) if len(fresh) > 1 else lambda s: (s[fresh[0]],)
            changed[fresh] = list(map(ne, map(_FIELDS, got(jobs)), map(_FIELDS, got(lasts))))
        last_out = memo["out"]
        changed |= np.fromiter(
            map(is_not, outs, _aligned(last_out, head, back)), dtype=np.bool_, count=len(ids)
        )
        changed |= ~np.fromiter(map(previous.__contains__, ids), dtype=np.bool_, count=len(ids))
        # A row whose only change is its estimated start (and what comes with it): the last
        # row with the new values, where it qualifies (_moved_rows); the others built whole.
        slow: list[int] = []
        fast = _moved_rows(view, previous, at, np.flatnonzero(moving & ~changed).tolist(), slow, due_rows)
        changed[slow] = True
        look: Sequence[int] = np.flatnonzero(changed).tolist()
    else:
        if hold_estimates and previous:
            _show_starts(at, _shown_columns(previous, ids), np.arange(len(ids)), now)
        look, fast = range(len(jobs)), []
    json_of: dict[int, tuple] = {}
    last_json = memo.get("json", {})
    whole: list[QueueRow] = []
    moved: list[QueueRow] = []
    moved_at: list[int] = []  # (their positions: the fast rows merged in the jobs' order)
    wanted: dict[int, QueueRow] = {}  # rows that want their terms, by job id
    wanted_at: list[int] = []  # (their positions: due_rows merged in the jobs' order)
    new_row = tuple.__new__
    for k, (p, running_est, priority, group, key, estimated, basis, behind) in zip(
        look, _values(at, look), strict=True
    ):
        job, outputs = jobs[k], outs[k]
        job_id = job.job_id
        old = previous.get(job_id)
        if outputs is None:
            encoded = None
        else:
            hit = json_of.get(id(outputs)) or last_json.get(id(outputs))
            if hit is None or hit[0] is not outputs:
                hit = (outputs, json.dumps(outputs, default=str, sort_keys=True))
            json_of[id(outputs)] = hit
            encoded = hit[1]
        if job.state != "PENDING" and job.start is not None:
            state, start, estimate = "running", job.start, running_est
            estimated = basis = behind = None
        else:
            state, start, estimate = "pending", None, None if p is None else p[0]
            if estimated is not None and not math.isfinite(estimated):
                estimated = None
        if old is not None and old.first_estimated_at is not None:
            first, first_at = old.first_estimated_start, old.first_estimated_at
        elif estimated is not None:
            first, first_at = estimated, now
        else:
            first = first_at = None
        terms, wants = None, False
        if p is not None and key is not None:
            # Kept while the key and group stay (a static policy: computed once); else due.
            if old is not None and old.priority_key == key and old.priority_group == group:
                terms = old.priority_terms
                if terms is None:  # (a row of an older rush: its terms are those at its time)
                    terms = terms_due(old.time)
                wants = due_at(terms) is not None
            else:
                terms, wants = terms_due(now), True
        row = new_row(
            QueueRow,
            (
                job_id,
                now,
                cycle,
                state,
                job.user,
                job.account,
                job.partition,
                job.submit,
                job.procs,
                job.requested_time,
                estimate,
                -1 if p is None else p[1],
                None if p is None else p[2],
                priority,
                group,
                key,
                estimated,
                basis,
                behind,
                first,
                first_at,
                start,
                encoded,
                terms,
            ),
        )
        if wants:
            wanted[job_id] = row
            wanted_at.append(k)
        elif old is None or row[3:16] != old[3:16] or row[21:] != old[21:]:
            whole.append(row)
        elif row[16:21] != old[16:21]:
            moved.append(row)
            moved_at.append(k)
    if fast:
        moved = [row for _, row in sorted([*zip(moved_at, moved, strict=True), *fast], key=_FIRST)]
    if due_rows:
        merged = sorted([*zip(wanted_at, wanted.values(), strict=True), *due_rows], key=_FIRST)
        wanted = {row.job_id: row for _, row in merged}
    # The position of each job waiting for its terms (this pass's and earlier passes'), if
    # listed: of every job when most wait (the first passes), else of those only.
    due = memo.get("due", ())
    if 4 * (len(due) + len(wanted)) > len(ids):
        where = dict(zip(ids, range(len(ids)), strict=True))
    else:
        waiting = [*(e[1] for e in due), *wanted]
        found = rows_of(at["ids"], np.array(waiting, dtype=np.int64)).tolist()
        where = {job_id: k for job_id, k in zip(waiting, found, strict=True) if k >= 0}
    looked = set(map(ids.__getitem__, look))  # (a row looked at and not wanted: no terms due)
    _add_terms(view, memo, (wanted, where, previous, at, looked), whole, moved)
    for job_id in previous.keys() - set(ids):
        old = previous[job_id]
        if old.state != "gone":
            whole.append(old._replace(time=now, cycle=cycle, state="gone"))
    if inputs is not None:
        memo["cols"] = at
        # Aligned with ``at["ids"]``, and None last (a new job's row is -1).
        memo["job"] = [*objects, None]
        memo["out"] = [*outs, None]
        # The JSON of outputs met earlier too (an unchanged job's is not looked up), bounded.
        if len(last_json) + len(json_of) < 2 * len(ids) + 64:
            json_of = {**last_json, **json_of}
        memo["json"] = json_of
    return QueueDelta(whole, moved)


# The values a row reads of the pass, by job (one entry per RJMS job, aligned with its list):
# pending columns (``p_*``, where ``has_p``), the running job's estimate (where ``has_r``), the
# decisions (``priority`` where ``has_priority``; ``group`` NONE and ``key`` NaN where unranked;
# ``start`` and ``basis`` where ``has_start``; ``behind`` NONE where none). ``ids``: the jobs.
RowColumns = dict[str, np.ndarray]


def _gather(values: np.ndarray, rows: np.ndarray, found: np.ndarray, fill: object) -> np.ndarray:
    out = np.full(len(rows), fill, dtype=values.dtype)
    out[found] = values[rows[found]]
    return out


def _row_columns(view: QueueView, ids: np.ndarray) -> RowColumns:
    """What each of the RJMS's jobs' rows read of the pass, as arrays aligned with ``ids``."""
    pending = _pending_columns(view)
    rows = rows_of(pending.job_id, ids)
    has_p = rows >= 0
    running = _running_estimates(view)
    r_ids = np.fromiter(running, dtype=np.int64, count=len(running))
    r_rows = rows_of(r_ids, ids)
    has_r = r_rows >= 0
    d = view.decisions
    cols = d.columns if d.columns is not None else DecisionColumns.of(d)
    n = len(pending.job_id)
    if len(cols.job_id) >= n and np.array_equal(cols.job_id[:n], pending.job_id):
        # (the core's columns: the pending columns' rows first, in their order)
        d_rows = rows.copy()
        extra = cols.job_id[n:]
        if len(extra):
            found = rows_of(extra, ids[~has_p])
            d_rows[~has_p] = np.where(found >= 0, found + n, NONE)
    else:
        d_rows = cols.rows_of(ids)
    has_d = d_rows >= 0
    at = {
        "ids": ids,
        "has_p": has_p,
        "p_est": _gather(pending.estimate, rows, has_p, np.nan),
        "own_est": _gather(pending.own_estimate, rows, has_p, False),
        "p_class": _gather(pending.runtime_class, rows, has_p, -1),
        "p_fair": _gather(pending.fairshare, rows, has_p, np.nan),
        "own_fair": _gather(pending.own_fairshare, rows, has_p, False),
        "has_r": has_r,
        "r_est": _gather(
            np.fromiter(running.values(), dtype=np.float64, count=len(running)), r_rows, has_r, np.nan
        ),
        "priority": _gather(cols.priority, d_rows, has_d, 0),
        "has_priority": _gather(cols.has_priority, d_rows, has_d, False),
        "group": _gather(cols.group, d_rows, has_d, NONE),
        "key": _gather(cols.key, d_rows, has_d, np.nan),
    }
    if cols.estimated_start is None or cols.basis is None or cols.behind is None:
        none = np.zeros(len(ids), dtype=np.bool_)
        at |= {"has_start": none, "start": np.full(len(ids), np.nan), "basis": np.full(len(ids), None)}
        at["behind"] = np.full(len(ids), NONE, dtype=np.int64)
    else:
        at["has_start"] = has_d
        at["start"] = _gather(cols.estimated_start, d_rows, has_d, np.nan)
        at["basis"] = _gather(cols.basis, d_rows, has_d, None)
        at["behind"] = _gather(cols.behind, d_rows, has_d, NONE)
    return at


def _show_starts(at: RowColumns, last: RowColumns, rows: np.ndarray, now: float) -> None:
    """The estimated start each row shows, into ``at["start"]``: the one it showed after the
    last call (``last``; ``rows``: each job's row there) where the core's granularity keeps it
    (:func:`rush.core.start_estimates.shown_starts`), else the pass's."""
    if len(last["ids"]) == 0:
        return
    back = rows >= 0
    r = np.where(back, rows, 0)
    shown = np.where(back & last["has_start"][r], last["start"][r], np.nan)
    same = back & at["has_start"] & (at["basis"] == last["basis"][r]) & (at["behind"] == last["behind"][r])
    at["start"] = shown_starts(shown, at["start"], same, now)


def _aligned(kept: list, head: int, back: list[int]) -> list:
    """``kept``'s entries at ``range(head)`` and then at ``back``."""
    return [*kept[:head], *map(kept.__getitem__, back)]


def _shown_columns(previous: dict[int, QueueRow], ids: list[int]) -> RowColumns:
    """What :func:`_show_starts` reads of the last call, from the rows last written (by job, in
    ``ids``' order): the estimated start each pending row shows, its basis and waited-behind."""
    olds = [previous.get(job_id) for job_id in ids]
    shows = [o is not None and o.state == "pending" and o.estimated_start is not None for o in olds]
    return {
        "ids": np.asarray(ids, dtype=np.int64),
        "has_start": np.array(shows, dtype=np.bool_),
        "start": np.array([o.estimated_start if s else np.nan for o, s in zip(olds, shows, strict=True)]),
        "basis": np.array(
            [o.estimate_basis if s else None for o, s in zip(olds, shows, strict=True)], dtype=object
        ),
        "behind": np.array(
            [
                NONE if not s or o.waits_behind is None else o.waits_behind
                for o, s in zip(olds, shows, strict=True)
            ],
            dtype=np.int64,
        ),
    }


def _changed(at: RowColumns, last: RowColumns, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """By job: new since ``last`` (the last call's columns; ``rows``: each job's row there, -1
    new), or any value its row reads moved but those of :data:`_MOVING` (NaN as NaN); and where
    one of :data:`_MOVING` moved."""
    new = rows < 0
    rows = rows.copy()
    if len(last["ids"]) == 0:
        return np.ones(len(rows), dtype=np.bool_), np.zeros(len(rows), dtype=np.bool_)
    rows[new] = 0
    changed, moving = new, np.zeros(len(rows), dtype=np.bool_)
    for name, values in at.items():
        if name == "ids":
            continue
        before = last[name][rows]
        differs = values != before
        if values.dtype.kind == "f":
            differs &= ~(np.isnan(values) & np.isnan(before))
        if name in _MOVING:
            moving |= differs
        else:
            changed |= differs
    return changed, moving


# The decisions' columns a row shows in its moving columns only (QueueRow[16:19]).
_MOVING = ("start", "basis", "behind")


def _moved_rows(
    view: QueueView,
    previous: dict[int, QueueRow],
    at: RowColumns,
    fast: list[int],
    slow: list[int],
    due: list[tuple[int, QueueRow]],
) -> list[tuple[int, QueueRow]]:
    """The rows (with their positions) of the jobs at ``fast`` (by position in the RJMS's list), whose only change since
    their last row is in :data:`_MOVING` and whose row is pending, has its first estimate and its
    priority terms: the last row with this pass's time, cycle and moving values, those that moved
    (the others in ``slow`` to build whole; the rows a whole build would give). A row whose terms
    are still due (:func:`terms_due`) is the same row, moved or not, into ``due`` instead: it
    wants its terms, as a whole build would find (its key and group are its last row's)."""
    out: list[tuple[int, QueueRow]] = []
    k = np.asarray(fast, dtype=np.int64)
    starts = at["start"][k]
    starts[~np.isfinite(starts) | ~at["has_start"][k]] = np.nan
    shown = starts.astype(object)
    shown[np.isnan(starts)] = None
    behind = at["behind"][k].astype(object)
    behind[at["behind"][k] == NONE] = None
    now, cycle, new_row = view.now, view.cycle, tuple.__new__
    ids = at["ids"][k].tolist()
    for i, job_id, values in zip(
        fast, ids, zip(shown.tolist(), at["basis"][k].tolist(), behind.tolist(), strict=True), strict=True
    ):
        old = previous[job_id]
        terms = old.priority_terms
        if old.state != "pending" or old.first_estimated_at is None or terms is None:
            slow.append(i)
        elif due_at(terms) is not None:
            key = old.priority_key
            if key is None or key != key:  # (a whole build gives a NaN key new terms: built whole)
                slow.append(i)
                continue
            due.append((i, new_row(QueueRow, (job_id, now, cycle, *old[3:16], *values, *old[19:]))))
        elif values != old[16:19]:
            out.append((i, new_row(QueueRow, (job_id, now, cycle, *old[3:16], *values, *old[19:]))))
    return out


def _values(at: RowColumns, look: Sequence[int]) -> Iterator[tuple]:
    """For the jobs at ``look``, the values their rows read as Python values (None: none):
    ``(p, running estimate, priority, group, key, estimated start, basis, behind)``, ``p`` as
    :data:`Pending` or None."""
    k = np.asarray(look, dtype=np.int64)

    def listed(name: str, mask: str | None = None, none: object = None) -> list:
        values = at[name][k]
        if mask is None:
            hide = values == none
        else:
            hide = ~at[mask][k]
        if not hide.any():
            return values.tolist()
        out = values.astype(object)
        out[hide] = None
        return out.tolist()

    p = zip(listed("p_est", "own_est"), at["p_class"][k].tolist(), listed("p_fair", "own_fair"), strict=True)
    p_or_none = map(lambda has, v: v if has else None, at["has_p"][k].tolist(), p)
    return zip(
        p_or_none,
        listed("r_est", "has_r"),
        listed("priority", "has_priority"),
        listed("group", none=NONE),
        _keys(at, k),
        listed("start", "has_start"),
        at["basis"][k].tolist(),
        listed("behind", none=NONE),
        strict=True,
    )


def _keys(at: RowColumns, k: np.ndarray) -> list:
    keys = at["key"][k].astype(object)
    keys[at["group"][k] == NONE] = None
    return keys.tolist()


def _pending_at(at: RowColumns, k: int) -> Pending | None:
    if not at["has_p"][k]:
        return None
    return (
        float(at["p_est"][k]) if at["own_est"][k] else None,
        int(at["p_class"][k]),
        float(at["p_fair"][k]) if at["own_fair"][k] else None,
    )


def _add_terms(
    view: QueueView, memo: dict, this_pass: tuple, whole: list[QueueRow], moved: list[QueueRow]
) -> None:
    """Give at most TERMS_PER_PASS rows waiting for their priority terms (this pass's ``wanted``
    rows, by job id, and the rows left waiting by earlier passes, in ``memo``'s heap) their
    terms, the longest-waiting first, computed at the time they are of; a row given them and
    otherwise as last written keeps its time and cycle. The wanted rows not given them are
    written as they are where they changed, and wait in the heap."""
    wanted, where, previous, columns, looked = this_pass
    due: list[tuple[float, int]] = memo.get("due", [])
    queued: set[int] = memo.get("queued", set())
    for job_id, row in wanted.items():
        if job_id not in queued:
            queued.add(job_id)
            heapq.heappush(due, (row.submit, job_id))
    origin = view.built.snapshot.time_origin
    given = 0
    while due and given < TERMS_PER_PASS:
        _, job_id = heapq.heappop(due)
        queued.discard(job_id)
        k = where.get(job_id)
        if k is None:
            continue  # left the queue
        old = previous.get(job_id)
        row = wanted.pop(job_id, None) or (None if job_id in looked else old)
        at = None if row is None or row.priority_terms is None else due_at(row.priority_terms)
        if at is None:
            continue  # given its terms since it was queued, or no longer wanting them
        p = _pending_at(columns, k)
        job = view.state.jobs[k]
        terms = terms_json(view.config, view.policy_text, _inputs(job, p), at, origin)
        if old is not None and row[3:23] == old[3:23]:
            whole.append(row._replace(time=old.time, cycle=old.cycle, priority_terms=terms))
        else:
            whole.append(row._replace(priority_terms=terms))
        given += 1
    for job_id, row in wanted.items():
        old = previous.get(job_id)
        if old is None or row[3:16] != old[3:16] or row[21:] != old[21:]:
            whole.append(row)
        elif row[16:21] != old[16:21]:
            moved.append(row)
    if len(due) > 2 * len(columns["ids"]) + 1024:  # entries of jobs gone since: bounded
        due[:] = [e for e in due if e[1] in where]
        heapq.heapify(due)
        queued.intersection_update(e[1] for e in due)
    memo["due"], memo["queued"] = due, queued
