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
window starts now start. A standing reservation keeps its nodes between passes
(``state.reserved_row``: a row of ``nodes.reserved``, written by the pass when that buffer is
large enough, as the simulator's is): those still valid (same request, nodes usable and free
over the window given the running jobs and the kept ones before them) are booked before any
job is placed; each is then taken out and searched for an earlier window only (one due now:
at now only), and put back on its nodes when none is found. So a reservation never moves later
unless its own nodes failed it (a running job outlived its estimate, a node went down). Live, ``schedule()`` hands
the pass the nodes and a node memory from the last call's record (:mod:`rush.core.kept_nodes`,
which finds what was freed since by comparing it with the snapshot); without a record a
standing reservation is re-placed from its time, as before issue 31.

A kept reservation can only move earlier onto room freed since it was placed: everything else
it sees was there then. So the pass remembers per node what it left booked
(``state.node_memory``: entries of running and started jobs, their latest end, usable, and the
hull of what it freed itself: reservations that moved, failed or were skipped); the next pass
marks as freed, from now, every node with fewer running entries (a job ended, maybe early) or
usable again. A kept reservation then searches only windows meeting freed room on its eligible
nodes and before its time, and costs no node work when there is none (issue 31, item 2;
tests/core/test_conservative_kept_nodes.py checks the decisions equal those of searching every
kept reservation from now); one whose own estimate got shorter (its window now ends before
``state.reserved_end``, the end it was booked with) may fit where nothing was freed, and searches
every window before its time. One with no freed room before it is not even taken out of the count
profile, and a search's count fit stops at its time. Kept reservations are checked in order of
their times against what the bookings so far hold per node at each one's start (those ending
by it leave, from a heap of ends): a check costs the reservation's own nodes, not every booking
on them; the valid ones enter the count profiles in one sort and sweep. Cancelled jobs and shortened estimates free room the memory does not
see: a shell that has them keeps no memory (shape (0, 5)), and every node counts as freed.

Speed (issue 22; the decisions are those of trying every candidate on nodes, which
tests/core/test_conservative_nodes_speed.py checks against the pre-optimisation kernel):

* Beside the bookings the pass keeps their core (and GPU) count profile
  (:func:`rush.core.conservative._occupy`), whose breakpoints are exactly the candidate
  starts. A window where even the counts do not fit cannot fit on nodes (no instant
  overcommits a node, checked on the running jobs), so a job's search starts at the
  profile's earliest fit (:func:`rush.core.conservative.fit_from`).
* Bookings are only ever added during a pass, so a job cannot fit before the earliest fit
  found for an earlier job that asked for no more (same kind and partition, no more cores,
  GPUs or nodes, no longer): the search starts there too (:func:`_fits_from`).
* A job's room is built once, then slid from candidate to candidate: bookings ending by the
  start leave it, those starting before the window's end enter it, and the units it offers
  the job are kept up to date, so placement runs only where it succeeds (and now).
* The room is carried to the next job: its window's cuts are moved over the bookings between
  when that walks fewer bookings than building the room afresh (:mod:`rush.core.carried_room`;
  a kept reservation switched on or off under it makes the next job build afresh).
* For whole-node and shared requests each node keeps its offer state (offering the job a
  unit or not): a booking entry tests the rule only where it can change that offer (a take on
  an offering node, a gift on one offering nothing), not before and after every entry
  (tests/core/test_offer_states.py; issue 31, round 24).
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit

from rush.core.carried_room import move_cost, move_cuts
from rush.core.conservative import MIN_DURATION, _breakpoint, _occupy, fit_before
from rush.core.easy_nodes import NO_FIT, SKIPPED, decide_in
from rush.core.node_pool import NodePool, NodeView, Room, Slots, job_ask, need_units, node_table
from rush.core.pass_data import PassConfig, PassJobs, PassMoment, PassOut, PassQueues, PassState, RunningSet
from rush.core.skip_with_limit import should_skip

INF = np.inf
# Counts no availability falls below: every candidate passes the count check.
NO_BOUND = -(1 << 62)


@njit(cache=True, inline="always")
def _offer(
    rule: tuple[int, int, int, int, int], eligible: bool, room: tuple[int, int], capacity: tuple[int, int]
) -> int:
    """Units one node offers a job on its room: the rule of :func:`rush.core.node_pool._units`
    (``rule``: nodes requested (0: cores anywhere), exclusive, cores and GPUs per node), kept
    here so the pass can keep the total up to date as bookings come and go; ``rule[4]``: see
    :func:`_apply`."""
    nodes, exclusive, c_need, g_need = rule[0], rule[1], rule[2], rule[3]
    if not eligible:
        return 0
    if nodes == 0:
        return max(room[0], 0)
    if exclusive:
        return 1 if room[0] == capacity[0] and room[1] == capacity[1] else 0
    return 1 if room[0] >= c_need and room[1] >= g_need else 0


@njit(cache=True, inline="always")
def _apply(
    entries: tuple[np.ndarray, np.ndarray, np.ndarray],
    k0: int,
    k1: int,
    sign: int,
    room: tuple[np.ndarray, np.ndarray],
    state: np.ndarray,
    capacity: tuple[np.ndarray, np.ndarray],
    rule: tuple[int, int, int, int, int],
) -> int:
    """Give back (sign 1) or take (sign -1) a booking's ``entries`` (node, cores, GPUs)
    ``k0 .. k1`` on ``room``; returns the change of the job's total units (:func:`_offer`).
    ``state`` per node: 0 not eligible, 1 eligible offering nothing, 2 offering a unit. With
    ``rule[4]`` set (a one-unit-per-node request on takes of at least 0) the rule is tested
    only where an entry can change the node's offer: a take on an offering node, a gift on one
    offering nothing (the offer is monotone in the room); ``state`` is kept equal to 1 + offer.
    Plain arrays, not named tuples: this is the pass's innermost loop."""
    at, take_c, take_g = entries
    room_c, room_g = room
    cap_c, cap_g = capacity
    delta = 0
    if rule[4]:
        can_change = 2 if sign < 0 else 1
        for k in range(k0, k1):
            node = at[k]
            room_c[node] += sign * take_c[k]
            room_g[node] += sign * take_g[k]
            was = state[node]
            if was == can_change:
                now = 1 + _offer(rule, True, (room_c[node], room_g[node]), (cap_c[node], cap_g[node]))
                state[node] = now
                delta += now - was
        return delta
    for k in range(k0, k1):
        node = at[k]
        cap = (cap_c[node], cap_g[node])
        eligible = state[node] > 0
        delta -= _offer(rule, eligible, (room_c[node], room_g[node]), cap)
        room_c[node] += sign * take_c[k]
        room_g[node] += sign * take_g[k]
        delta += _offer(rule, eligible, (room_c[node], room_g[node]), cap)
    return delta


@njit(cache=True)
def _takes_at_least_0(entries: tuple[np.ndarray, np.ndarray, np.ndarray], span: tuple[int, int]) -> bool:
    """Whether every entry in ``span`` takes at least 0 cores and 0 GPUs."""
    _, take_c, take_g = entries
    for k in range(span[0], span[1]):
        if take_c[k] < 0 or take_g[k] < 0:
            return False
    return True


@njit(cache=True)
def _shape(nodes: NodeView, j: int, need: int) -> np.ndarray:
    """What job j's placement depends on: (kind, partition, cores and GPUs per node, units);
    kind 0: cores anywhere, 1: whole nodes, 2: shared nodes (only they read cores and GPUs)."""
    request = nodes.request
    kind = 0 if request.nodes[j] == 0 else (1 if request.exclusive[j] else 2)
    c = request.cores[j] if kind == 2 else 0
    g = request.gpus[j] if kind == 2 else 0
    return np.array([kind, request.partition[j], c, g, need], dtype=np.int64)


@njit(cache=True)
def _fits_from(
    shapes: np.ndarray, lengths: np.ndarray, found: np.ndarray, nrec: int, shape: np.ndarray, duration: float
) -> float:
    """The latest earliest-fit among the jobs already placed that ask for no more than
    ``shape`` for no longer than ``duration``: bookings are only ever added during the pass,
    so no window before it can fit this job either (-inf: none)."""
    since = -INF
    for r in range(nrec):
        if found[r] > since and lengths[r] <= duration and _no_more(shapes, r, shape):
            since = found[r]
    return since


@njit(cache=True, inline="always")
def _no_more(shapes: np.ndarray, r: int, shape: np.ndarray) -> bool:
    """Record r's shape asks for no more than ``shape`` (same kind and partition)."""
    return (
        shapes[r, 0] == shape[0]
        and shapes[r, 1] == shape[1]
        and shapes[r, 2] <= shape[2]
        and shapes[r, 3] <= shape[3]
        and shapes[r, 4] <= shape[4]
    )


@njit(cache=True)
def _remember(
    shapes: np.ndarray,
    lengths: np.ndarray,
    found: np.ndarray,
    nrec: int,
    shape: np.ndarray,
    duration: float,
    at: float,
) -> int:
    """Add a job's earliest fit to the records unless one asking for no more already tells as
    much; drop those it makes useless (asking for as much or more, found no later). Returns
    the new number of records: only the useful ones are kept, so :func:`_fits_from` stays short."""
    for r in range(nrec):
        if found[r] >= at and lengths[r] <= duration and _no_more(shapes, r, shape):
            return nrec
    kept = 0
    for r in range(nrec):
        if not (found[r] <= at and lengths[r] >= duration and _no_more_than(shape, shapes, r)):
            shapes[kept] = shapes[r]
            lengths[kept] = lengths[r]
            found[kept] = found[r]
            kept += 1
    shapes[kept] = shape
    lengths[kept] = duration
    found[kept] = at
    return kept + 1


@njit(cache=True, inline="always")
def _no_more_than(shape: np.ndarray, shapes: np.ndarray, r: int) -> bool:
    """``shape`` asks for no more than record r's (same kind and partition)."""
    return (
        shapes[r, 0] == shape[0]
        and shapes[r, 1] == shape[1]
        and shape[2] <= shapes[r, 2]
        and shape[3] <= shapes[r, 3]
        and shape[4] <= shapes[r, 4]
    )


@njit(cache=True)
def _insert_sorted(values: np.ndarray, ids: np.ndarray, n: int, value: float, item: int) -> None:
    """Insert ``item`` keyed ``value`` into the first ``n`` (sorted) entries."""
    k = n
    while k > 0 and values[k - 1] > value:
        values[k] = values[k - 1]
        ids[k] = ids[k - 1]
        k -= 1
    values[k] = value
    ids[k] = item


@njit(cache=True)
def _smallest_sums(capacity: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """sums[k]: the k smallest capacities of usable nodes added up (what k whole nodes hold at
    least: the counts an exclusive job of k nodes takes)."""
    sizes = np.sort(capacity[usable])
    sums = np.zeros(sizes.shape[0] + 1, dtype=np.int64)
    for k in range(sizes.shape[0]):
        sums[k + 1] = sums[k] + sizes[k]
    return sums


@njit(cache=True)
def _count_need(
    nodes: NodeView, j: int, need: int, smallest: tuple[np.ndarray, np.ndarray]
) -> tuple[int, int]:
    """Cores and GPUs job j takes at least wherever it is placed (``need`` units); more than
    the machine holds when it wants more whole nodes than are usable."""
    request = nodes.request
    if request.nodes[j] == 0:
        return need, 0
    if request.exclusive[j]:
        small_c, small_g = smallest
        if need >= small_c.shape[0]:
            return small_c[-1] + 1, 0
        return small_c[need], small_g[need]
    return need * request.cores[j], need * request.gpus[j]


@njit(cache=True)
def _count_fit(
    cores: tuple[np.ndarray, np.ndarray],
    gpus: tuple[np.ndarray, np.ndarray],
    n: int,
    need: tuple[int, int],
    duration: float,
    span: tuple[int, float],
) -> int:
    """First breakpoint from ``span[0]`` on, before time ``span[1]``, from which both counts of
    ``need`` stay free for ``duration`` (-1: none)."""
    i, bound = span
    while i >= 0:
        i = fit_before(cores[0], cores[1], n, need[0], duration, i, bound)
        if i < 0 or need[1] <= 0:
            return i
        g = fit_before(gpus[0], gpus[1], n, need[1], duration, i, bound)
        if g == i:
            return i
        i = g
    return -1


@njit(cache=True)
def _occupy_all(
    profile: tuple[np.ndarray, np.ndarray], n: int, windows: tuple[np.ndarray, np.ndarray], delta: np.ndarray
) -> int:
    """:func:`rush.core.conservative._occupy` of every window ``[t0, t0 + duration)`` with its
    ``delta`` at once (a sort and a sweep, not a shift of the tail per booking): the same
    breakpoints and counts. Returns the new length."""
    ptime, pavail = profile
    t0, duration = windows
    count = t0.shape[0]
    if count == 0:
        return n
    t1 = t0 + duration
    times = np.unique(np.concatenate((ptime[:n], t0, t1)))
    step = np.zeros(times.shape[0] + 1, dtype=np.int64)
    for b in range(count):
        step[np.searchsorted(times, t0[b])] += delta[b]
        step[np.searchsorted(times, t1[b])] -= delta[b]
    old = pavail[:n].copy()
    k = 0
    running = 0
    for x in range(times.shape[0]):
        while k + 1 < n and ptime[k + 1] <= times[x]:
            k += 1
        running += step[x]
        pavail[x] = old[k] + running
    ptime[: times.shape[0]] = times
    return times.shape[0]


@njit(cache=True)
def _kept_valid(
    kept: Slots,
    row: int,
    nodes: NodeView,
    j: int,
    need: int,
    window: tuple[float, float],
    chains: tuple[
        np.ndarray,
        np.ndarray,
        np.ndarray,
        np.ndarray,
        np.ndarray,
        np.ndarray,
        np.ndarray,
        np.ndarray,
        np.ndarray,
    ],
    mark: tuple[np.ndarray, int],
) -> bool:
    """Whether job j's kept reservation (``kept`` row ``row``) still holds: the same request
    (``need`` units), on distinct usable nodes of its partition, each with the room it takes
    left by every booking overlapping ``window``. ``chains``: per-node chains of booking
    entries (head per node, next entry, booking of entry, cores and GPUs of entry, bookings'
    starts and ends, per-node load); ``mark``: a per-node stamp array and this job's stamp.

    Every booking so far starts at or before the window (running jobs now, kept ones in order
    of their times), so one overlaps a non-empty window exactly when it holds its start:
    the load is what those hold per node (cores, GPUs), read instead of walking the chains."""
    pool = nodes.pool
    request = nodes.request
    head, following, of_booking, take_c, take_g, b_t0, b_t1, load_c, load_g = chains
    seen, stamp = mark
    t0, t1 = window
    m = pool.count
    p = request.partition[j]
    units = 0
    for k in range(kept.offset[row], kept.offset[row + 1]):
        node = kept.node[k]
        c = kept.cores[k]
        g = kept.gpus[k]
        if node < 0 or node >= m or seen[node] == stamp or not pool.usable[node]:
            return False
        if p >= 0 and ((pool.partitions[node] >> p) & 1) == 0:
            return False
        seen[node] = stamp
        if request.nodes[j] == 0:
            if c <= 0 or g != 0:
                return False
            units += c
        elif request.exclusive[j]:
            if c != pool.cores[node] or g != pool.gpus[node]:
                return False
            units += 1
        else:
            if c != request.cores[j] or g != request.gpus[j]:
                return False
            units += 1
        left_c = pool.cores[node] - load_c[node]
        left_g = pool.gpus[node] - load_g[node]
        if t1 <= t0:  # an empty window overlaps only bookings starting before it
            left_c = pool.cores[node]
            left_g = pool.gpus[node]
            e = head[node]
            while e >= 0:
                b = of_booking[e]
                if b_t0[b] < t1 and b_t1[b] > t0:
                    left_c -= take_c[e]
                    left_g -= take_g[e]
                e = following[e]
        if left_c < c or left_g < g:
            return False
    return units == need


@njit(cache=True)
def _hold(
    entries: tuple[np.ndarray, np.ndarray, np.ndarray],
    span: tuple[int, int],
    load: tuple[np.ndarray, np.ndarray],
    sign: int,
) -> None:
    """Add (sign 1) or take off (sign -1) a booking's entries ``span`` to the per-node ``load``."""
    at, take_c, take_g = entries
    load_c, load_g = load
    for k in range(span[0], span[1]):
        node = at[k]
        if 0 <= node < load_c.shape[0]:
            load_c[node] += sign * take_c[k]
            load_g[node] += sign * take_g[k]


@njit(cache=True, inline="always")
def _free(
    node: int,
    window: tuple[float, float],
    hulls: tuple[np.ndarray, np.ndarray],
    freed_list: np.ndarray,
    nf: int,
) -> int:
    """Widen ``node``'s freed hull by ``window`` (listing the node when first freed); returns
    the number of freed nodes."""
    if hulls[0][node] == INF:
        freed_list[nf] = node
        nf += 1
    _widen(node, window, hulls)
    return nf


@njit(cache=True, inline="always")
def _widen(node: int, window: tuple[float, float], hulls: tuple[np.ndarray, np.ndarray]) -> None:
    lo, hi = hulls
    lo[node] = min(lo[node], window[0])
    hi[node] = max(hi[node], window[1])


@njit(cache=True)
def _freed_since(
    memory: np.ndarray,
    pool: NodePool,
    now: float,
    chains: tuple[np.ndarray, np.ndarray, np.ndarray],
    hulls: tuple[np.ndarray, np.ndarray],
    freed_list: np.ndarray,
) -> int:
    """Mark what was freed since the last pass (``memory``, :func:`_remember_nodes`): a node
    with fewer running entries now (a job ended, maybe early) is freed from now to the latest
    end it had booked, a node usable again from now on; every node when nothing is known.
    ``chains`` hold the running jobs' entries per node. Returns the number of freed nodes."""
    m = pool.count
    nf = 0
    if memory.shape[0] != m:
        for node in range(m):
            nf = _free(node, (now, INF), hulls, freed_list, nf)
        return nf
    head, following, _ = chains
    for node in range(m):
        entries = 0
        e = head[node]
        while e >= 0:
            entries += 1
            e = following[e]
        until = -INF
        if entries < memory[node, 0]:
            until = memory[node, 1]
        if pool.usable[node] and memory[node, 2] == 0.0:
            until = INF
        if until > now:
            nf = _free(node, (now, until), hulls, freed_list, nf)
        if memory[node, 4] > now:  # freed during the last pass, after some saw that node
            nf = _free(node, (memory[node, 3], memory[node, 4]), hulls, freed_list, nf)
    return nf


@njit(cache=True)
def _remember_nodes(
    memory: np.ndarray,
    pool: NodePool,
    book: tuple[np.ndarray, np.ndarray],
    running: int,
    starts: tuple[np.ndarray, np.ndarray, np.ndarray],
    at: np.ndarray,
    moved: tuple[np.ndarray, np.ndarray],
) -> None:
    """Per node, what this pass leaves booked from now on for the next pass to compare with:
    entries of running jobs (the first ``running`` bookings) and of this pass's starts, the
    latest of their ends, whether the node is usable, and the hull of what this pass freed
    (reservations moved earlier or failed: jobs placed before that did not see it)."""
    m = pool.count
    if memory.shape[0] != m:
        return
    b_t1, b_slot = book
    start_now, start_slot, start_end = starts
    for node in range(m):
        memory[node, 0] = 0.0
        memory[node, 1] = -INF
        memory[node, 2] = 1.0 if pool.usable[node] else 0.0
        memory[node, 3] = moved[0][node]
        memory[node, 4] = moved[1][node]
    for b in range(running):
        for k in range(b_slot[2 * b], b_slot[2 * b + 1]):
            node = at[k]
            if 0 <= node < m:
                memory[node, 0] += 1.0
                memory[node, 1] = max(memory[node, 1], b_t1[b])
    for q in range(start_now.shape[0]):
        if start_now[q]:
            for k in range(start_slot[2 * q], start_slot[2 * q + 1]):
                memory[at[k], 0] += 1.0
                memory[at[k], 1] = max(memory[at[k], 1], start_end[q])


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
    kept = nodes.reserved
    kept_rows = kept.offset.shape[0] - 1
    entries = held.offset[-1] if held.offset.shape[0] > 0 else 0
    for k in range(on):
        j = order[k]
        entries += min(need_units(nodes.request, j, jobs.procs[j]), m) + m
        row = state.reserved_row[j]
        if state.reserved_at[j] < INF and 0 <= row < kept_rows:
            entries += kept.offset[row + 1] - kept.offset[row]
    scratch_node = np.empty(entries + m + 1, dtype=np.int64)
    scratch_c = np.empty(entries + m + 1, dtype=np.int64)
    scratch_g = np.empty(entries + m + 1, dtype=np.int64)
    # Bookings: running jobs, kept reservations, and each job's new placement.
    nb_cap = running.count + 2 * on + 1
    b_t0 = np.empty(nb_cap, dtype=np.float64)
    b_t1 = np.empty(nb_cap, dtype=np.float64)
    b_slot = np.empty(2 * nb_cap, dtype=np.int64)
    b_on = np.ones(nb_cap, dtype=np.bool_)  # off: a kept reservation taken out or moved
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
    table = nodes.table  # placement reads the pool from it (rush.core.node_pool)
    if table.shape[1] == 0:
        table = node_table(nodes.pool)
    view = NodeView(nodes.pool, nodes.request, nodes.held, nodes.placement, booked, nodes.reserved, table)
    room = Room(np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64), np.zeros(m, dtype=np.int64), False)
    usable = pool.usable
    base = (np.where(usable, pool.cores, 0).astype(np.int64), np.where(usable, pool.gpus, 0).astype(np.int64))
    smallest = (_smallest_sums(pool.cores, usable), _smallest_sums(pool.gpus, usable))
    # The bookings' counts on usable nodes over time; its breakpoints are the candidate starts
    # (now and every booking's end), kept sorted as bookings are added.
    capacity = 2 * nb_cap + 2
    ptime_c = np.empty(capacity, dtype=np.float64)
    avail_c = np.empty(capacity, dtype=np.int64)
    ptime_g = np.empty(capacity, dtype=np.float64)
    avail_g = np.empty(capacity, dtype=np.int64)
    ptime_c[0] = now
    ptime_g[0] = now
    avail_c[0] = base[0].sum()
    avail_g[0] = base[1].sum()
    n = 1
    load_c = np.zeros(m, dtype=np.int64)
    load_g = np.zeros(m, dtype=np.int64)
    sound = True
    for b in range(nb):
        c = 0
        g = 0
        for k in range(b_slot[2 * b], b_slot[2 * b + 1]):
            node = scratch_node[k]
            sound = sound and scratch_c[k] >= 0 and scratch_g[k] >= 0
            if usable[node]:
                c += scratch_c[k]
                g += scratch_g[k]
                load_c[node] += scratch_c[k]
                load_g[node] += scratch_g[k]
        end, n_after = _breakpoint(ptime_c, avail_c, n, b_t1[b])
        _breakpoint(ptime_g, avail_g, n, b_t1[b])
        n = n_after
        for x in range(end):
            avail_c[x] -= c
            avail_g[x] -= g
    # The counts bound what a window offers on nodes only when no instant overcommits a node;
    # running jobs could (a node shrunk under them): then every candidate is tried on nodes.
    for node in range(m):
        sound = sound and load_c[node] <= base[0][node] and load_g[node] <= base[1][node]
    # The bookings by start and by end: a job's candidate windows move later, so bookings
    # enter its window in start order and leave it in end order (its room is kept, not rebuilt).
    start_at = np.empty(nb_cap, dtype=np.float64)
    by_start = np.empty(nb_cap, dtype=np.int64)
    end_at = np.empty(nb_cap, dtype=np.float64)
    by_end = np.empty(nb_cap, dtype=np.int64)
    for b in range(nb):
        _insert_sorted(start_at, by_start, b, b_t0[b], b)
        _insert_sorted(end_at, by_end, b, b_t1[b], b)
    eligible = np.zeros(m, dtype=np.int8)  # per node: 0 not eligible, 1 eligible, 2 offering
    cap_c, cap_g = pool.cores, pool.gpus
    base_c, base_g = base
    capacity_of = (cap_c, cap_g)
    entries_of = (scratch_node, scratch_c, scratch_g)
    room_of = (room.cores, room.gpus)
    request = nodes.request
    parts = pool.partitions
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
    start_end = np.empty(on, dtype=np.float64)
    position = np.empty(len(jobs.procs), dtype=np.int64)
    for k in range(on):
        position[order[k]] = k
    # The GPU profile is kept up to date only when some job's GPUs are checked on it.
    gpu_counts = False
    for k in range(on):
        j = order[k]
        if sound and _count_need(view, j, need_units(nodes.request, j, jobs.procs[j]), smallest)[1] > 0:
            gpu_counts = True
    # Kept reservations still valid (on the running jobs and the kept ones booked before
    # them) are booked before any job is placed: a reservation moving earlier then never
    # takes what a later one holds, so none moves later unless its own nodes failed it.
    head = np.full(m, -1, dtype=np.int64)
    following = np.empty(entries + m + 1, dtype=np.int64)
    of_booking = np.empty(entries + m + 1, dtype=np.int64)
    for b in range(nb):
        for e in range(b_slot[2 * b], b_slot[2 * b + 1]):
            node = scratch_node[e]
            if 0 <= node < m:
                following[e] = head[node]
                head[node] = e
                of_booking[e] = b
    # What was freed since the last pass, per node (the hull [freed_lo, freed_hi) of it; nodes
    # in ``freed_list``): a kept reservation can only move earlier onto freed room, since
    # everything else it sees was there when it was placed.
    freed_lo = np.full(m, INF)
    freed_hi = np.full(m, -INF)
    freed_list = np.empty(m, dtype=np.int64)
    moved_lo = np.full(m, INF)
    moved_hi = np.full(m, -INF)
    nf = _freed_since(
        state.node_memory, nodes.pool, now, (head, following, of_booking), (freed_lo, freed_hi), freed_list
    )
    seen = np.full(m, -1, dtype=np.int64)
    own = np.full(nh + 1, -1, dtype=np.int64)  # sequence[s]'s kept booking (-1: none)
    own_c = np.zeros(nh + 1, dtype=np.int64)
    own_g = np.zeros(nh + 1, dtype=np.int64)
    # The kept bookings' windows and counts, added to the count profiles at once below.
    kept_t0 = np.empty(nh, dtype=np.float64)
    kept_len = np.empty(nh, dtype=np.float64)
    kept_c = np.empty(nh, dtype=np.int64)
    kept_g = np.empty(nh, dtype=np.int64)
    nkept = 0
    # What the bookings so far hold per node at the next kept reservation's start (those
    # ending by it leave, in order of their ends): its validity costs its own nodes only.
    load_c = np.zeros(m, dtype=np.int64)
    load_g = np.zeros(m, dtype=np.int64)
    ending = [(INF, -1)]  # a heap of (end, booking); the sentinel never leaves
    for b in range(nb):
        _hold(entries_of, (b_slot[2 * b], b_slot[2 * b + 1]), (load_c, load_g), 1)
        heapq.heappush(ending, (b_t1[b], b))
    for s in range(nh):
        j = sequence[s]
        row = state.reserved_row[j]
        if not 0 <= row < kept_rows:
            # Its nodes were not kept: whatever it held is freed, on any node.
            t0 = max(state.reserved_at[j], now)
            for node in range(m):
                end = t0 + max(jobs.est[j], MIN_DURATION)
                nf = _free(node, (t0, end), (freed_lo, freed_hi), freed_list, nf)
                _widen(node, (t0, end), (moved_lo, moved_hi))
            continue
        duration = max(jobs.est[j], MIN_DURATION)
        t0 = max(state.reserved_at[j], now)
        need = need_units(nodes.request, j, jobs.procs[j])
        window = (t0, t0 + duration)
        chains = (head, following, of_booking, scratch_c, scratch_g, b_t0, b_t1, load_c, load_g)
        while ending[0][0] <= t0:
            b = heapq.heappop(ending)[1]
            _hold(entries_of, (b_slot[2 * b], b_slot[2 * b + 1]), (load_c, load_g), -1)
        if not _kept_valid(kept, row, nodes, j, need, window, chains, (seen, s)):
            for k in range(kept.offset[row], kept.offset[row + 1]):
                if 0 <= kept.node[k] < m:
                    nf = _free(kept.node[k], window, (freed_lo, freed_hi), freed_list, nf)
                    _widen(kept.node[k], window, (moved_lo, moved_hi))
            continue
        b_t0[nb] = t0
        b_t1[nb] = t0 + duration
        b_slot[2 * nb] = used
        c = 0
        g = 0
        for k in range(kept.offset[row], kept.offset[row + 1]):
            node = kept.node[k]
            scratch_node[used] = node
            scratch_c[used] = kept.cores[k]
            scratch_g[used] = kept.gpus[k]
            following[used] = head[node]
            head[node] = used
            of_booking[used] = nb
            c += kept.cores[k]
            g += kept.gpus[k]
            used += 1
        b_slot[2 * nb + 1] = used
        _hold(entries_of, (b_slot[2 * nb], used), (load_c, load_g), 1)
        heapq.heappush(ending, (b_t1[nb], nb))
        kept_t0[nkept] = t0
        kept_len[nkept] = duration
        kept_c[nkept] = -c
        kept_g[nkept] = -g
        nkept += 1
        _insert_sorted(start_at, by_start, nb, b_t0[nb], nb)
        _insert_sorted(end_at, by_end, nb, b_t1[nb], nb)
        own[s] = nb
        own_c[s] = c
        own_g[s] = g
        nb += 1
    # Every take so far at least 0 (running jobs: ``sound``; kept reservations here, placements
    # as they are made): only then is each node's offer monotone in its room (:func:`_apply`).
    monotone = sound and _takes_at_least_0(entries_of, (0, used))
    windows = (kept_t0[:nkept], kept_len[:nkept])
    if gpu_counts:
        _occupy_all((ptime_g, avail_g), n, windows, kept_g[:nkept])
    n = _occupy_all((ptime_c, avail_c), n, windows, kept_c[:nkept])
    res_slot = np.empty(2 * on + 2, dtype=np.int64)
    # Each placed (or never placeable) job's shape, duration and earliest fit (inf: none).
    shapes = np.empty((on, 5), dtype=np.int64)
    lengths = np.empty(on, dtype=np.float64)
    found = np.empty(on, dtype=np.float64)
    nrec = 0
    nk = 0
    nr = 0
    # The room the last search left, its window [t, window_end) and the window's cuts: bookings
    # ending by t (next_out, in order of ends) and starting before window_end (next_in, in
    # order of starts); carried from job to job (rush.core.carried_room) unless a booking was
    # switched on or off under it.
    carried = False
    next_out = 0
    next_in = 0
    window_end = now
    for s in range(on):
        j = sequence[s]
        duration = max(jobs.est[j], MIN_DURATION)
        need = need_units(nodes.request, j, jobs.procs[j])
        counts = _count_need(view, j, need, smallest) if sound else (NO_BOUND, NO_BOUND)
        # A kept reservation is taken out and only an earlier start is searched for (before
        # ``bound``); bookings then change both ways, so earliest-fit records serve only the
        # jobs placed after every standing reservation (bookings only added from there on).
        hold = s < nh and own[s] >= 0
        recorded = sound and not hold
        bound = INF
        p = request.partition[j]
        since = -INF
        taken = False
        if hold:
            kept_at = b_t0[own[s]]
            if kept_at > now and j < state.reserved_end.shape[0] and b_t1[own[s]] < state.reserved_end[j]:
                # Its own estimate got shorter: it may fit where nothing was freed, so every
                # window before its time is searched (as from now), and none after it.
                since = -INF
                bound = kept_at
            elif kept_at > now:
                # Only windows meeting room freed on its nodes, before its time, can be new.
                freed_from = INF
                freed_until = -INF
                for x in range(nf):
                    node = freed_list[x]
                    if usable[node] and (p < 0 or ((parts[node] >> p) & 1) == 1):
                        freed_from = min(freed_from, freed_lo[node])
                        freed_until = max(freed_until, freed_hi[node])
                since = INF if freed_from == INF else freed_from - duration
                bound = min(kept_at, freed_until)
            else:
                # Due now: it starts now, on whichever nodes it is placed on now, else on its
                # own; never later (a search past now would count bookings placed around it
                # over its whole window against its own room).
                bound = np.nextafter(now, INF)
            # Taken out only to be searched: with nothing freed it stands as it is.
            if since < INF:
                taken = True
                b_on[own[s]] = False
                carried = False
                if gpu_counts:
                    _occupy(ptime_g, avail_g, n, kept_at, duration, own_g[s])
                n = _occupy(ptime_c, avail_c, n, kept_at, duration, own_c[s])
        placed_at = -1.0
        count = NO_FIT
        # One unit or none per node (whole nodes, shared nodes) on takes of at least 0: an entry
        # tests the rule only where it can change the node's offer (:func:`_apply`).
        flagged = 1 if monotone and request.nodes[j] > 0 else 0
        rule = (request.nodes[j], int(request.exclusive[j]), request.cores[j], request.gpus[j], flagged)
        # The earliest candidate where the counts fit, not before what a job asking for no
        # more found: none before it can fit on nodes.
        shape = _shape(view, j, need)
        if recorded:
            since = _fits_from(shapes, lengths, found, nrec, shape, duration)
        i = -1
        if since < INF:
            lo = np.searchsorted(ptime_c[:n], since, side="left")
            i = _count_fit((ptime_c, avail_c), (ptime_g, avail_g), n, counts, duration, (lo, bound))
        total = 0  # units the room offers job j (place() fails below ``need``)
        if i >= 0:
            # Its room: what no booking overlapping [t, t + duration) holds: the last job's
            # room with its cuts moved here (rush.core.carried_room) when that walks fewer
            # bookings, else built from whichever of (bookings ending after t, bookings
            # starting before the window's end) is shorter.
            t = ptime_c[i]
            window_end = t + duration
            to_out = np.searchsorted(end_at[:nb], t, side="right")
            to_in = np.searchsorted(start_at[:nb], window_end, side="left")
            moved = carried and move_cost((next_out, next_in), (to_out, to_in)) < min(nb - to_out, to_in)
            if moved:
                cuts = ((next_out, next_in), (to_out, to_in))
                move_cuts((by_end, by_start), cuts[0], cuts[1], (b_on, b_slot, entries_of), room_of)
            else:
                room.cores[:] = base[0]
                room.gpus[:] = base[1]
            for node in range(m):
                ok = usable[node] and (p < 0 or ((parts[node] >> p) & 1) == 1)
                unit = _offer(rule, ok, (room.cores[node], room.gpus[node]), (cap_c[node], cap_g[node]))
                total += unit
                eligible[node] = (2 if flagged and unit > 0 else 1) if ok else 0
            next_out = to_out
            next_in = to_in
            carried = True
            if not moved:  # build it afresh from the shorter side
                if nb - next_out <= next_in:
                    for x in range(next_out, nb):
                        b = by_end[x]
                        if b_on[b] and b_t0[b] < window_end:
                            total += _apply(
                                entries_of,
                                b_slot[2 * b],
                                b_slot[2 * b + 1],
                                -1,
                                room_of,
                                eligible,
                                capacity_of,
                                rule,
                            )
                else:
                    for x in range(next_in):
                        b = by_start[x]
                        if b_on[b] and b_t1[b] > t:
                            total += _apply(
                                entries_of,
                                b_slot[2 * b],
                                b_slot[2 * b + 1],
                                -1,
                                room_of,
                                eligible,
                                capacity_of,
                                rule,
                            )
        while 0 <= i < n and ptime_c[i] < bound:
            t = ptime_c[i]
            # Slide the window to [t, t + duration): bookings ending by t leave it (those that
            # were in it give their room back), those starting before its end enter it.
            while next_out < nb and end_at[next_out] <= t:
                b = by_end[next_out]
                if b_on[b] and b_t0[b] < window_end:
                    total += _apply(
                        entries_of, b_slot[2 * b], b_slot[2 * b + 1], 1, room_of, eligible, capacity_of, rule
                    )
                next_out += 1
            window_end = t + duration
            while next_in < nb and start_at[next_in] < window_end:
                b = by_start[next_in]
                if b_on[b] and b_t1[b] > t:
                    total += _apply(
                        entries_of, b_slot[2 * b], b_slot[2 * b + 1], -1, room_of, eligible, capacity_of, rule
                    )
                next_in += 1
            # place() fails below ``need`` units; now, a flagged job may first try quiet nodes.
            if t == now or total >= need:
                skip_now = t == now and should_skip(
                    jobs.sensitive[j] and moment.variable_now, state.skips[j], config.skip_limit
                )
                count = decide_in(
                    table, job_ask(nodes.request, j), need, room, skip_now, nodes.placement, booked, used
                )
                if count == SKIPPED:
                    break
                if count >= 0:
                    placed_at = t
                    break
            i += 1
        if count == SKIPPED:
            out.skip[nk] = j
            nk += 1
            if hold:  # its reservation is dropped: its window is freed
                b = own[s]
                for k in range(b_slot[2 * b], b_slot[2 * b + 1]):
                    nf = _free(scratch_node[k], (b_t0[b], b_t1[b]), (freed_lo, freed_hi), freed_list, nf)
                    _widen(scratch_node[k], (b_t0[b], b_t1[b]), (moved_lo, moved_hi))
                nrec = 0
            continue
        if recorded:
            nrec = _remember(shapes, lengths, found, nrec, shape, duration, placed_at if count >= 0 else INF)
        if count >= 0:
            b_t0[nb] = placed_at
            b_t1[nb] = placed_at + duration
            c = 0
            g = 0
            for k in range(used, used + count):
                c += scratch_c[k]
                g += scratch_g[k]
            if gpu_counts:
                _occupy(ptime_g, avail_g, n, placed_at, duration, -g)
            n = _occupy(ptime_c, avail_c, n, placed_at, duration, -c)
            b_slot[2 * nb] = used
            b_slot[2 * nb + 1] = used + count
            monotone = monotone and _takes_at_least_0(entries_of, (used, used + count))
            _insert_sorted(start_at, by_start, nb, b_t0[nb], nb)
            _insert_sorted(end_at, by_end, nb, b_t1[nb], nb)
            # It starts inside the carried room's window [placed_at, window_end): the room
            # loses it and the start cut passes it (its end is after the window's start).
            _hold(entries_of, (used, used + count), room_of, -1)
            next_in += 1
            nb += 1
            first, last = used, used + count
            used += count
            if hold:
                # Its old window is freed: later kept ones may move into it; records made on
                # the bookings before no longer bound anything.
                b = own[s]
                for k in range(b_slot[2 * b], b_slot[2 * b + 1]):
                    nf = _free(scratch_node[k], (b_t0[b], b_t1[b]), (freed_lo, freed_hi), freed_list, nf)
                    _widen(scratch_node[k], (b_t0[b], b_t1[b]), (moved_lo, moved_hi))
                nrec = 0
        elif hold:
            # Nothing earlier: the kept reservation stands, on its nodes.
            b = own[s]
            placed_at = b_t0[b]
            if taken:
                b_on[b] = True
                carried = False
                if gpu_counts:
                    _occupy(ptime_g, avail_g, n, placed_at, duration, -own_g[s])
                n = _occupy(ptime_c, avail_c, n, placed_at, duration, -own_c[s])
            first, last = b_slot[2 * b], b_slot[2 * b + 1]
        else:
            continue  # wider than the machine can ever offer: leave it pending
        if placed_at == now:
            start_now[position[j]] = True
            start_slot[2 * position[j]] = first
            start_end[position[j]] = placed_at + duration
            start_slot[2 * position[j] + 1] = last
        else:
            out.reserved[nr] = j
            out.reserved_at[nr] = placed_at
            res_slot[2 * nr] = first
            res_slot[2 * nr + 1] = last
            nr += 1
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
    _keep_reservations(state, (order, on), jobs.est, out, nr, res_slot, entries_of, kept)
    starts = (start_now, start_slot, start_end)
    moved = (moved_lo, moved_hi)
    _remember_nodes(state.node_memory, nodes.pool, (b_t1, b_slot), running.count, starts, scratch_node, moved)
    return ns, nk, nr


@njit(cache=True)
def _keep_reservations(
    state: PassState,
    queued: tuple[np.ndarray, int],
    est: np.ndarray,
    out: PassOut,
    nr: int,
    res_slot: np.ndarray,
    entries: tuple[np.ndarray, np.ndarray, np.ndarray],
    kept: Slots,
) -> None:
    """Write this pass's reservations' nodes as rows of ``kept`` (row r: ``out.reserved[r]``)
    and point ``state.reserved_row`` at them, with their windows' ends (``state.reserved_end``:
    ``est`` the jobs' estimates); when ``kept`` is too small for them all (a view built for one
    pass, live) none is kept and the next pass re-places them from their times."""
    order, on = queued
    for k in range(on):
        state.reserved_row[order[k]] = -1
    at, take_c, take_g = entries
    total = 0
    for r in range(nr):
        total += res_slot[2 * r + 1] - res_slot[2 * r]
    if nr + 1 > kept.offset.shape[0] or total > kept.node.shape[0]:
        return
    e = 0
    kept.offset[0] = 0
    for r in range(nr):
        for x in range(res_slot[2 * r], res_slot[2 * r + 1]):
            kept.node[e] = at[x]
            kept.cores[e] = take_c[x]
            kept.gpus[e] = take_g[x]
            e += 1
        kept.offset[r + 1] = e
        j = out.reserved[r]
        state.reserved_row[j] = r
        if state.reserved_end.shape[0] > j:
            state.reserved_end[j] = out.reserved_at[r] + max(est[j], MIN_DURATION)
