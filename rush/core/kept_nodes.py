"""Live conservative backfilling on nodes: each standing reservation keeps its nodes from one
``schedule()`` call to the next (issue 31, item 2).

The compiled pass (:mod:`rush.core.conservative_nodes`) keeps a reservation on its nodes when
it is handed them (``NodeView.reserved`` rows, ``PassState.reserved_row``) and searches it for
an earlier window only where room was freed since it was placed (``PassState.node_memory``).
The simulator carries both in its arrays. A live shell carries :class:`KeptNodes` instead: the
last pass's reservations with their nodes and windows, what it left booked (running jobs and
its starts, by job id) and what it freed itself. The shell only gives it back
(``Snapshot.kept = Decisions.kept``); it need not have done what the core decided.

What was freed since is found by comparing that record with the new snapshot, not trusted
from the shell: a job that left a node (ended, was cancelled, was started by the RJMS on other
nodes than the core chose, or never started), a running job whose estimated end came earlier,
a reservation whose job is gone, lost its reservation or got a shorter estimate, a node usable
again or changed. Each frees, on its nodes, the window it no longer holds; the pass searches a
kept reservation only where such room meets its eligible nodes before its time, unless its own
estimate got shorter (``PassState.reserved_end``, the recorded window's end): that one may fit
where nothing was freed, and is searched from now. Anything the
record cannot account for (another machine, no record) counts as freed everywhere, which is
always sound: then every kept reservation is searched from now, as
tests/core/test_kept_nodes_live.py checks against the decisions of the fully informed pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rush.core.conservative import MIN_DURATION
from rush.core.node_pool import NodePool, NodeRequests, Slots, new_slots
from rush.core.pass_data import PassState, RunningSet

# The memory row of a node nothing was freed on (rush.core.conservative_nodes._freed_since:
# running entries, their latest end, usable, and the hull [lo, hi) freed).
_NOTHING_FREED = (0.0, -np.inf, 1.0, np.inf, -np.inf)


@dataclass(frozen=True, eq=False)
class KeptNodes:
    """What one conservative pass on nodes leaves for the next (``Decisions.kept``); compared
    by identity (its arrays have no one truth value)."""

    # The machine the node indices refer to: names, and per node (cores, GPUs, partition
    # bits, usable); a node whose row changes counts as freed from now on.
    names: tuple[str, ...]
    machine: np.ndarray
    # Standing reservations: job ids (ascending), their times and window ends, and row r of
    # ``reserved`` their nodes (node index, cores, GPUs).
    reserved_job: np.ndarray
    reserved_at: np.ndarray
    reserved_end: np.ndarray
    reserved: Slots
    # Entries booked from the pass on by running jobs and by the pass's starts: (job id, node,
    # estimated end).
    booked_job: np.ndarray
    booked_node: np.ndarray
    booked_end: np.ndarray
    # Per node, the hull [lo, hi) of what the pass freed itself (reservations moved or failed).
    moved: np.ndarray


@dataclass(frozen=True)
class PassNodes:
    """A pass's node inputs and outputs as ``schedule()`` has them (jobs by pass index)."""

    now: float
    pool: NodePool
    names: tuple[str, ...]
    request: NodeRequests
    procs: np.ndarray
    est: np.ndarray
    pending_ids: np.ndarray
    # Running jobs in the pass's order (RunningSet rows), their ids and allocations (held rows).
    running: RunningSet
    running_ids: np.ndarray
    held: Slots


def machine_of(pool: NodePool) -> np.ndarray:
    """Per node (cores, GPUs, partition bits, usable): what a kept reservation relies on."""
    return np.stack((pool.cores, pool.gpus, pool.partitions, pool.usable.astype(np.int64)), axis=1).astype(
        np.int64
    )


def kept_state(kept: KeptNodes | None, p: PassNodes, state: PassState) -> tuple[PassState, Slots]:
    """The pass's state and ``reserved`` buffer from the last pass's record: each job whose
    standing reservation is the one recorded gets its row of nodes, and the node memory marks
    what was freed since. The buffer is large enough for the pass to write back every
    reservation it makes (:func:`kept_after` reads them)."""
    m = p.pool.count
    units = np.where(p.request.nodes > 0, p.request.nodes, p.procs)
    entries = int(np.minimum(units, m).sum()) + m + 1
    n = len(p.procs)
    memory = np.tile(np.array(_NOTHING_FREED), (m, 1))
    row = np.full(n, -1, dtype=np.int64)
    if kept is None or kept.names != p.names:
        # Nothing known: a reservation is re-placed from its time (every node counts as freed).
        state = state._replace(reserved_row=row, node_memory=memory)
        return state, new_slots(n + 1, entries)
    lo = np.full(m, np.inf)
    hi = np.full(m, -np.inf)
    _freed_by_running(kept, p, (lo, hi))
    given = _given_rows(kept, p, state.reserved_at)
    _freed_by_reservations(kept, p, given, (lo, hi))
    changed = np.any(machine_of(p.pool) != kept.machine, axis=1)
    lo[changed] = np.minimum(lo[changed], p.now)
    hi[changed] = np.inf
    took = kept.moved[:, 1] > p.now  # what the last pass freed after some job had looked
    lo[took] = np.minimum(lo[took], kept.moved[took, 0])
    hi[took] = np.maximum(hi[took], kept.moved[took, 1])
    memory[:, 3] = lo
    memory[:, 4] = hi
    count = len(kept.reserved_job)
    reserved = new_slots(max(n, count) + 1, max(entries, int(kept.reserved.offset[-1]) + 1))
    reserved.offset[: count + 1] = kept.reserved.offset
    used = int(kept.reserved.offset[-1])
    reserved.node[:used] = kept.reserved.node[:used]
    reserved.cores[:used] = kept.reserved.cores[:used]
    reserved.gpus[:used] = kept.reserved.gpus[:used]
    jobs = np.flatnonzero(given >= 0)
    row[jobs] = given[jobs]
    end = np.full(n, np.inf)  # its window's end as recorded: one ending earlier now is searched from now
    end[jobs] = kept.reserved_end[given[jobs]]
    return state._replace(reserved_row=row, node_memory=memory, reserved_end=end), reserved


def _given_rows(kept: KeptNodes, p: PassNodes, reserved_at: np.ndarray) -> np.ndarray:
    """Per pending job, its recorded reservation's row when the snapshot gives back the same
    time (-1: none; the pass then re-places it from its time)."""
    n = len(p.pending_ids)
    given = np.full(n, -1, dtype=np.int64)
    count = len(kept.reserved_job)
    if count == 0 or n == 0:
        return given
    at = np.minimum(np.searchsorted(kept.reserved_job, p.pending_ids), count - 1)
    same = (kept.reserved_job[at] == p.pending_ids) & (kept.reserved_at[at] == reserved_at)
    given[same] = at[same]
    return given


def _freed_by_running(kept: KeptNodes, p: PassNodes, hull: tuple[np.ndarray, np.ndarray]) -> None:
    """Widen ``hull`` by what the recorded running jobs and starts no longer hold: an entry
    whose job is not on that node now frees it from now, one whose end came earlier from its
    new end, each up to its recorded end."""
    job, node, end = running_entries(p)
    if len(kept.booked_job) == 0:
        return
    m = p.pool.count
    end_now = np.full(len(kept.booked_job), p.now)  # not on that node now: freed from now
    if len(job):
        dense = np.unique(np.concatenate((kept.booked_job, job)), return_inverse=True)[1].reshape(-1)
        key_before = dense[: len(kept.booked_job)] * m + kept.booked_node
        key_now = dense[len(kept.booked_job) :] * m + node
        by_key = np.argsort(key_now, kind="stable")
        at = np.minimum(np.searchsorted(key_now[by_key], key_before), len(job) - 1)
        found = key_now[by_key[at]] == key_before
        end_now[found] = end[by_key[at[found]]]
    start = np.maximum(end_now, p.now)
    freed = kept.booked_end > start
    _widen(hull, kept.booked_node[freed], start[freed], kept.booked_end[freed])


def _freed_by_reservations(
    kept: KeptNodes, p: PassNodes, given: np.ndarray, hull: tuple[np.ndarray, np.ndarray]
) -> None:
    """Widen ``hull`` by the recorded reservations' windows no longer held: all of it when no
    pending job keeps it (gone, started, its reservation dropped or changed), the tail when its
    estimate got shorter."""
    count = len(kept.reserved_job)
    if count == 0:
        return
    end_now = np.full(count, -np.inf)  # -inf: not kept, its whole window is freed
    jobs = np.flatnonzero(given >= 0)
    rows = given[jobs]
    t0 = np.maximum(kept.reserved_at[rows], p.now)
    end_now[rows] = t0 + np.maximum(p.est[jobs], MIN_DURATION)
    start = np.maximum(np.maximum(kept.reserved_at, end_now), p.now)
    per_row = np.diff(kept.reserved.offset)
    used = int(kept.reserved.offset[-1])
    start_e = np.repeat(start, per_row)
    end_e = np.repeat(kept.reserved_end, per_row)
    freed = end_e > start_e
    _widen(hull, kept.reserved.node[:used][freed], start_e[freed], end_e[freed])


def _widen(hull: tuple[np.ndarray, np.ndarray], node: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
    m = len(hull[0])
    on = (node >= 0) & (node < m)
    np.minimum.at(hull[0], node[on], lo[on])
    np.maximum.at(hull[1], node[on], hi[on])


def running_entries(p: PassNodes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(job id, node, end as the pass books it) per running job's allocation entry."""
    count = p.running.count
    per_row = np.diff(p.held.offset[: count + 1])
    used = int(p.held.offset[count]) if count else 0
    ends = p.running.end[:count]
    ends = np.where(ends > p.now, ends, p.now + 1.0)  # the pass's booking of a job past its end
    return np.repeat(p.running_ids, per_row), p.held.node[:used].copy(), np.repeat(ends, per_row)


def kept_after(p: PassNodes, state: PassState, reserved: Slots, result, out, placed: Slots) -> KeptNodes:
    """The record of a pass for the next: its reservations on their nodes (``reserved`` rows,
    ``state.reserved_row``), its starts and the running jobs' entries, what it freed itself."""
    nr = int(result.reserved)
    jobs = out.reserved[:nr]
    ids = p.pending_ids[jobs]
    by_id = np.argsort(ids, kind="stable")
    rows = state.reserved_row[jobs[by_id]]
    if nr and np.any(rows < 0):  # nodes not written back (cannot happen with kept_state's buffer)
        by_id, rows = by_id[:0], rows[:0]
    at = out.reserved_at[:nr][by_id]
    ends = at + np.maximum(p.est[jobs[by_id]], MIN_DURATION)
    slots = _rows(reserved, rows)
    job, node, end = running_entries(p)
    ns = int(result.started)
    started = out.start[:ns]
    per_start = np.diff(placed.offset[: ns + 1])
    e = int(placed.offset[ns]) if ns else 0
    start_end = p.now + np.maximum(p.est[started], MIN_DURATION)
    return KeptNodes(
        names=p.names,
        machine=machine_of(p.pool),
        reserved_job=ids[by_id],
        reserved_at=at,
        reserved_end=ends,
        reserved=slots,
        booked_job=np.concatenate((job, np.repeat(p.pending_ids[started], per_start))),
        booked_node=np.concatenate((node, placed.node[:e])),
        booked_end=np.concatenate((end, np.repeat(start_end, per_start))),
        moved=np.stack((state.node_memory[:, 3], state.node_memory[:, 4]), axis=1).copy(),
    )


def _rows(slots: Slots, rows: np.ndarray) -> Slots:
    """``slots``' rows ``rows``, in that order, as a compact copy."""
    lo = slots.offset[rows]
    hi = slots.offset[rows + 1]
    sizes = hi - lo
    offset = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offset[1:])
    take = np.repeat(lo - offset[:-1], sizes) + np.arange(int(offset[-1]))
    return Slots(offset, slots.node[take].copy(), slots.cores[take].copy(), slots.gpus[take].copy())
