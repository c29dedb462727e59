"""Room freed during a conservative pass on nodes, per node and over time (issue 31, item 2).

A kept reservation can move earlier only onto room freed since it was placed
(:mod:`rush.core.conservative_nodes`). The pass records each freeing as an entry: a node (or
``ANY_NODE``: a reservation whose nodes were not kept), a time interval ``[lo, hi)``, and an
upper bound on the room (cores, GPUs) that node can offer in any window meeting the interval:
its capacity less what the running jobs hold on it until ``hi`` or later (they overlap every
such window and never change within a pass).

A kept reservation is then searched only over the entries it could use (:func:`reach`): on a
node eligible for it, meeting one of its windows before its time, and whose bound still offers
it a unit. Room a reservation takes back when it is re-placed is not freed (:func:`free_net`):
on a node it keeps with at least the same take, only its old window less the new one is.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

INF = np.inf
ANY_NODE = -1


class Freed(NamedTuple):
    """Entries ``0 .. size[0]``: node, interval ``[lo, hi)``, room bound, alive."""

    node: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    room_c: np.ndarray
    room_g: np.ndarray
    alive: np.ndarray
    size: np.ndarray


@njit(cache=True)
def new_freed(capacity: int) -> Freed:
    """An empty record for at most ``capacity`` entries."""
    return Freed(
        np.empty(capacity, dtype=np.int64),
        np.empty(capacity, dtype=np.float64),
        np.empty(capacity, dtype=np.float64),
        np.empty(capacity, dtype=np.int64),
        np.empty(capacity, dtype=np.int64),
        np.zeros(capacity, dtype=np.bool_),
        np.zeros(1, dtype=np.int64),
    )


@njit(cache=True)
def room_bound(
    node: int,
    until: float,
    capacity: tuple[np.ndarray, np.ndarray],
    chains: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    running: int,
) -> tuple[int, int]:
    """What ``node`` can offer at most in any window meeting an interval ending at ``until``:
    its capacity less the running jobs' takes on it that last until then. ``chains``: per-node
    entry chains (head, next, booking of entry, cores and GPUs of entry, bookings' ends);
    bookings ``0 .. running`` are the running jobs."""
    head, following, of_booking, take_c, take_g, b_t1 = chains
    c = capacity[0][node]
    g = capacity[1][node]
    e = head[node]
    while e >= 0:
        b = of_booking[e]
        if b < running and b_t1[b] >= until:
            c -= take_c[e]
            g -= take_g[e]
        e = following[e]
    return c, g


@njit(cache=True)
def free(freed: Freed, node: int, window: tuple[float, float], room: tuple[int, int]) -> None:
    """Record ``window`` on ``node`` as freed, offering at most ``room``; nothing when empty."""
    if not window[0] < window[1]:
        return
    k = freed.size[0]
    freed.node[k] = node
    freed.lo[k] = window[0]
    freed.hi[k] = window[1]
    freed.room_c[k] = room[0]
    freed.room_g[k] = room[1]
    freed.alive[k] = True
    freed.size[0] = k + 1


@njit(cache=True)
def forget(freed: Freed, first: int, last: int) -> None:
    """Drop entries ``first .. last`` (a failed reservation's window, now re-placed)."""
    for k in range(first, last):
        freed.alive[k] = False


@njit(cache=True)
def free_net(
    freed: Freed,
    old: tuple[np.ndarray, np.ndarray, np.ndarray, tuple[float, float]],
    new: tuple[np.ndarray, np.ndarray, np.ndarray, tuple[float, float]],
    bound: tuple[
        tuple[np.ndarray, np.ndarray],
        tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        int,
    ],
    kept_take: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """Free what a job's new booking ``new`` (nodes, cores, GPUs, window) leaves of its old one
    ``old``: per old node, the old window less the new one when the new booking holds at least
    as much there, else the whole old window. ``bound``: (capacity, chains, running) for
    :func:`room_bound`; ``kept_take``: per-node scratch (cores, GPUs, stamp), stamp all -1 on
    entry and left so."""
    at, take_c, take_g, (t0, t1) = old
    new_at, new_c, new_g, (n0, n1) = new
    keep_c, keep_g, stamp = kept_take
    capacity, chains, running = bound
    m = stamp.shape[0]
    for k in range(new_at.shape[0]):
        node = new_at[k]
        if 0 <= node < m:
            if stamp[node] != 1:
                stamp[node] = 1
                keep_c[node] = 0
                keep_g[node] = 0
            keep_c[node] += new_c[k]
            keep_g[node] += new_g[k]
    for k in range(at.shape[0]):
        node = at[k]
        if not 0 <= node < m:
            continue
        room = room_bound(node, t1, capacity, chains, running)
        if stamp[node] == 1 and keep_c[node] >= take_c[k] and keep_g[node] >= take_g[k]:
            free(freed, node, (t0, min(t1, n0)), room)
            free(freed, node, (max(t0, n1), t1), room)
        else:
            free(freed, node, (t0, t1), room)
    for k in range(new_at.shape[0]):
        if 0 <= new_at[k] < m:
            stamp[new_at[k]] = -1


@njit(cache=True)
def offers(
    node: int,
    span: tuple[float, float, bool],
    duration: float,
    need: tuple[int, int, int],
    book: tuple[
        tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        np.ndarray,
        np.ndarray,
        int,
    ],
) -> bool:
    """Whether ``node`` offers a job a unit in some window ``[t, t + duration)`` with ``t`` in
    ``span`` (start, stop, and whether the start itself is left out), on the bookings now (``book``: entry chains as :func:`room_bound`'s, the bookings'
    starts, whether each is on, and the job's own booking, not counted). ``need``: (kind, cores,
    GPUs): kind 0, a core free of the node's ``cores``; 1, the whole node; 2, a load of at most
    ``cores`` and ``GPUs`` (its capacity less the job's per node). A booking overlapping the
    window holds its take for the whole window (the pass's rule), so the load only falls when
    a booking ends: the span's start and those ends are the only starts to try."""
    (head, following, of_booking, take_c, take_g, b_t1), b_t0, b_on, own = book
    kind, c_need, g_need = need
    start, stop, opened = span
    t = start
    e_next = head[node]
    while True:
        load_c = 0
        load_g = 0
        e = head[node]
        while e >= 0:
            b = of_booking[e]
            enters = b_t0[b] < t + duration or (opened and t == start and b_t0[b] == t + duration)
            if b != own and b_on[b] and enters and b_t1[b] > t:
                load_c += take_c[e]
                load_g += take_g[e]
            e = following[e]
        if kind == 0:
            if c_need - load_c > 0:
                return True
        elif kind == 1:
            if load_c <= 0 and load_g <= 0:
                return True
        elif c_need - load_c >= 0 and g_need - load_g >= 0:
            return True
        # The next start to try: the next booking end in (t, stop), in chain order.
        t = INF
        while e_next >= 0:
            b = of_booking[e_next]
            e_next = following[e_next]
            if b != own and b_on[b] and start < b_t1[b] < stop:
                t = b_t1[b]
                break
        if t == INF:
            return False


@njit(cache=True)
def reach(
    freed: Freed,
    machine: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    rule: tuple[int, int, int, int, int],
    now: float,
    window: tuple[float, float],
    book: tuple[
        tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        np.ndarray,
        np.ndarray,
        int,
    ],
) -> tuple[float, float]:
    """(from, until): the hull of the freed entries a kept reservation could use, ``(inf,
    -inf)`` when none. ``machine``: usable, partition bits, cores and GPUs per node; ``rule``:
    the job's partition (-1: any), nodes requested (0: cores anywhere), exclusive, cores and GPUs
    per node; ``window``: its kept time and duration (windows ``[t, t + d)``, ``now <= t <
    time``); ``book``: the bookings now, for :func:`offers` (an entry whose node offers the job
    nothing in any such window meeting it cannot make the job move)."""
    usable, parts, cap_c, cap_g = machine
    p, nodes, exclusive, c_need, g_need = rule
    kept_at, duration = window
    since = INF
    until = -INF
    for k in range(freed.size[0]):
        if not freed.alive[k]:
            continue
        lo = freed.lo[k]
        hi = freed.hi[k]
        # Some window [t, t + duration), now <= t < kept_at, meets [lo, hi).
        first = max(now, lo - duration)
        last = min(kept_at, hi)
        if not first < last:
            continue
        if lo >= since and hi <= until:
            continue  # inside the hull already
        node = freed.node[k]
        if node != ANY_NODE:
            if not usable[node] or (p >= 0 and ((parts[node] >> p) & 1) == 0):
                continue
            c = freed.room_c[k]
            g = freed.room_g[k]
            if nodes == 0:
                need = (0, cap_c[node], 0)
                fits = c > 0
            elif exclusive:
                need = (1, 0, 0)
                fits = c >= cap_c[node] and g >= cap_g[node]
            else:
                need = (2, cap_c[node] - c_need, cap_g[node] - g_need)
                fits = c >= c_need and g >= g_need
            span = (first, last, lo - duration >= now)
            if not fits or not offers(node, span, duration, need, book):
                continue
        since = min(since, lo)
        until = max(until, hi)
    return since, until


@njit(cache=True)
def hulls(freed: Freed, first: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Per node, the hull of the live entries from ``first`` on (what this pass freed: the next
    pass's node memory); (inf, -inf) where none."""
    lo = np.full(m, INF)
    hi = np.full(m, -INF)
    for k in range(first, freed.size[0]):
        if not freed.alive[k]:
            continue
        node = freed.node[k]
        a = 0 if node == ANY_NODE else node
        b = m if node == ANY_NODE else node + 1
        for x in range(a, b):
            lo[x] = min(lo[x], freed.lo[k])
            hi[x] = max(hi[x], freed.hi[k])
    return lo, hi
