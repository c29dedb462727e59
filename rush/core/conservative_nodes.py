"""Conservative backfilling on nodes: :mod:`rush.core.conservative` with every reservation
holding particular nodes over a time window.

Running jobs hold their nodes until their estimated end (one second from now when past it);
each queued job in turn gets the earliest window ``[t, t + estimate)`` in which it can be
placed on what no earlier booking holds. Candidate start times are now and the ends of the
bookings. A booking overlapping the window is counted as holding its resources for the whole
window: exact on whole nodes, and on shared nodes it can only make a reservation later, never
overcommit a node.

Standing reservations are compressed as on processor counts: jobs holding one are re-placed
first, in order of their reservation times, then the others in priority order; those whose
window starts now start. The pass keeps reservation times between passes, not node lists, so
on nodes a standing reservation can move later when the nodes it held were fragmented since
(processor counts never let it).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rush.core.conservative import MIN_DURATION
from rush.core.easy_nodes import NO_FIT, SKIPPED, _decide
from rush.core.node_pool import NodeView, Room, Slots, need_units
from rush.core.pass_data import PassConfig, PassJobs, PassMoment, PassOut, PassQueues, PassState, RunningSet
from rush.core.skip_with_limit import should_skip

INF = np.inf


@njit(cache=True)
def _room_over(
    nodes: NodeView, t0: float, t1: float, book: tuple[np.ndarray, np.ndarray, np.ndarray, int], room: Room
) -> None:
    """Fill ``room`` with what no booking overlapping [t0, t1) holds (usable nodes only)."""
    pool = nodes.pool
    b_t0, b_t1, b_slot, nb = book
    for node in range(pool.count):
        room.cores[node] = pool.cores[node] if pool.usable[node] else 0
        room.gpus[node] = pool.gpus[node] if pool.usable[node] else 0
    for b in range(nb):
        if b_t0[b] < t1 and b_t1[b] > t0:
            k0 = b_slot[2 * b]
            k1 = b_slot[2 * b + 1]
            for k in range(k0, k1):
                room.cores[nodes.placed.node[k]] -= nodes.placed.cores[k]
                room.gpus[nodes.placed.node[k]] -= nodes.placed.gpus[k]


@njit(cache=True)
def conservative_nodes_pass(
    moment: PassMoment,
    config: PassConfig,
    jobs: PassJobs,
    state: PassState,
    queues: PassQueues,
    running: RunningSet,
    out: PassOut,
    nodes: NodeView,
) -> tuple[int, int, int]:
    """Conservative backfilling on nodes; returns (n_started, n_skipped, n_reserved) as
    :func:`rush.core.conservative.conservative_pass`. Start i's nodes are ``nodes.placed``
    row i."""
    now = moment.now
    on = moment.queued
    pool = nodes.pool
    m = pool.count
    order = queues.queue
    # Bookings: running jobs, then this pass's placements, each a window and a range of
    # entries. Entries live in a local buffer; starts are copied to nodes.placed at the end.
    held = nodes.held
    entries = held.offset[-1] if held.offset.shape[0] > 0 else 0
    for k in range(on):
        j = order[k]
        entries += min(need_units(nodes.request, j, jobs.procs[j]), m) + m
    scratch_node = np.empty(entries + m + 1, dtype=np.int64)
    scratch_c = np.empty(entries + m + 1, dtype=np.int64)
    scratch_g = np.empty(entries + m + 1, dtype=np.int64)
    nb_cap = running.count + on + 1
    b_t0 = np.empty(nb_cap, dtype=np.float64)
    b_t1 = np.empty(nb_cap, dtype=np.float64)
    b_slot = np.empty(2 * nb_cap, dtype=np.int64)
    nb = 0
    used = 0
    for a in range(running.count):
        row = running.procs[a]
        b_t0[nb] = now
        b_t1[nb] = running.end[a] if running.end[a] > now else now + 1.0
        b_slot[2 * nb] = used
        for k in range(held.offset[row], held.offset[row + 1]):
            scratch_node[used] = held.node[k]
            scratch_c[used] = held.cores[k]
            scratch_g[used] = held.gpus[k]
            used += 1
        b_slot[2 * nb + 1] = used
        nb += 1
    booked = Slots(nodes.placed.offset, scratch_node, scratch_c, scratch_g)
    view = NodeView(nodes.pool, nodes.request, nodes.held, nodes.placement, booked, nodes.reserved)
    room = Room(np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64), np.zeros(m, dtype=np.bool_), False)
    # Held reservations first (by time, stable), then the rest in priority order.
    held_at = np.empty(on, dtype=np.float64)
    held_job = np.empty(on, dtype=np.int64)
    nh = 0
    for k in range(on):
        j = order[k]
        if state.reserved_at[j] < INF:
            held_job[nh] = j
            held_at[nh] = state.reserved_at[j]
            nh += 1
    by_time = np.argsort(held_at[:nh], kind="mergesort")
    sequence = np.empty(on, dtype=np.int64)
    for k in range(nh):
        sequence[k] = held_job[by_time[k]]
    s = nh
    for k in range(on):
        if state.reserved_at[order[k]] == INF:
            sequence[s] = order[k]
            s += 1
    start_now = np.zeros(on, dtype=np.bool_)
    start_slot = np.full(2 * on, -1, dtype=np.int64)
    position = np.empty(len(jobs.procs), dtype=np.int64)
    for k in range(on):
        position[order[k]] = k
    candidates = np.empty(nb_cap + 1, dtype=np.float64)
    nk = 0
    nr = 0
    for s in range(on):
        j = sequence[s]
        duration = max(jobs.est[j], MIN_DURATION)
        need = need_units(nodes.request, j, jobs.procs[j])
        candidates[0] = now
        nc = 1
        for b in range(nb):
            if b_t1[b] > now:
                candidates[nc] = b_t1[b]
                nc += 1
        times = np.sort(candidates[:nc])
        placed_at = -1.0
        count = NO_FIT
        for t in times:
            _room_over(view, t, t + duration, (b_t0, b_t1, b_slot, nb), room)
            skip_now = t == now and should_skip(
                jobs.sensitive[j] and moment.variable_now, state.skips[j], config.skip_limit
            )
            count = _decide(view, j, need, room, skip_now, used)
            if count == SKIPPED:
                break
            if count >= 0:
                placed_at = t
                break
        if count == SKIPPED:
            out.skip[nk] = j
            nk += 1
            continue
        if count < 0:
            continue  # wider than the machine can ever offer: leave it pending
        b_t0[nb] = placed_at
        b_t1[nb] = placed_at + duration
        b_slot[2 * nb] = used
        b_slot[2 * nb + 1] = used + count
        nb += 1
        if placed_at == now:
            start_now[position[j]] = True
            start_slot[2 * position[j]] = used
            start_slot[2 * position[j] + 1] = used + count
        else:
            out.reserved[nr] = j
            out.reserved_at[nr] = placed_at
            nr += 1
        used += count
    # Starts in priority order; a start is a backfill when a job ahead of it still waits.
    ns = 0
    waiting_ahead = False
    placed = nodes.placed
    placed.offset[0] = 0
    for k in range(on):
        if start_now[k]:
            out.start[ns] = order[k]
            out.backfilled[ns] = waiting_ahead
            e = placed.offset[ns]
            for x in range(start_slot[2 * k], start_slot[2 * k + 1]):
                placed.node[e] = scratch_node[x]
                placed.cores[e] = scratch_c[x]
                placed.gpus[e] = scratch_g[x]
                e += 1
            placed.offset[ns + 1] = e
            ns += 1
        else:
            waiting_ahead = True
    return ns, nk, nr
