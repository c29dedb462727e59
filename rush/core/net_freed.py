"""Net freed room for conservative backfilling on nodes (issue 31, item 2): what a kept
reservation must search, per node, once the pass's own bookings that took freed room back are
counted against it.

A kept reservation can fit earlier only on room that is new since its time was last set: room
its bookings ahead of it then held and no longer do. :mod:`rush.core.conservative_nodes` marks
such room per node as a hull; this module splits it in two. *Hard* room (freed between passes:
a job ended or left a node, a node usable again or changed, what the last pass freed itself, a
reservation handed back without its nodes) counts whatever happens. *Soft* room is a window the
pass frees itself (a kept reservation no longer valid, moved earlier or skipped: its window and
its takes, cores and GPUs, on each of its nodes). *Added* bookings are bookings that cannot have
been there when any kept reservation's time was last set: every placement the pass makes
before the kept reservations are done, and a running job's booking on a node whose bookings of
the last pass all ended by now.

Per node the bookings meeting a window ``w = [t, t + d)``, ``t >= now``, change by what was
freed less what was added. If ``w`` meets no hard room and at every soft-freed instant it
meets the added bookings covering that instant take at least all of the node's soft takes
together, the node offers ``w`` no more room than before, so no window fits there that did not
fit then. :func:`net_hull` gives the hull of the instants where that cover fails, joined with
the hard hull: a kept reservation only needs to search windows meeting it on its eligible nodes
(none: it stands where it is, with no node work).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

INF = np.inf


class NetFreed(NamedTuple):
    """Per node: the hard hull ``[hard_lo, hard_hi)``, chains of soft entries and of added
    bookings (``*_head`` per node, ``*_next`` per entry, windows and takes per entry), and the
    hull of soft room left uncovered, recomputed when ``dirty``. ``used``: entries in the soft
    and added pools."""

    hard_lo: np.ndarray
    hard_hi: np.ndarray
    soft_head: np.ndarray
    soft_next: np.ndarray
    soft_window: np.ndarray  # (entries, 2): t0, t1
    soft_take: np.ndarray  # (entries, 2): cores, GPUs
    add_head: np.ndarray
    add_next: np.ndarray
    add_window: np.ndarray
    add_take: np.ndarray
    dirty: np.ndarray
    left: np.ndarray  # (nodes, 2): the uncovered soft hull
    used: np.ndarray  # (2,): soft entries, added entries


@njit(cache=True)
def new_net_freed(hard: tuple[np.ndarray, np.ndarray], capacity: int) -> NetFreed:
    """Room for ``capacity`` soft and ``capacity`` added entries; the hard hull copied."""
    m = hard[0].shape[0]
    left = np.empty((m, 2), dtype=np.float64)
    left[:, 0] = INF
    left[:, 1] = -INF
    return NetFreed(
        hard[0].copy(),
        hard[1].copy(),
        np.full(m, -1, dtype=np.int64),
        np.empty(capacity, dtype=np.int64),
        np.empty((capacity, 2), dtype=np.float64),
        np.empty((capacity, 2), dtype=np.int64),
        np.full(m, -1, dtype=np.int64),
        np.empty(capacity, dtype=np.int64),
        np.empty((capacity, 2), dtype=np.float64),
        np.empty((capacity, 2), dtype=np.int64),
        np.zeros(m, dtype=np.bool_),
        left,
        np.zeros(2, dtype=np.int64),
    )


@njit(cache=True)
def widen_hard(net: NetFreed, node: int, window: tuple[float, float]) -> None:
    net.hard_lo[node] = min(net.hard_lo[node], window[0])
    net.hard_hi[node] = max(net.hard_hi[node], window[1])


@njit(cache=True)
def _link(
    chain: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    net: NetFreed,
    which: int,
    node: int,
    window: tuple[float, float],
    take: tuple[int, int],
) -> None:
    head, following, windows, takes = chain
    e = net.used[which]
    if e >= following.shape[0]:
        # Out of room: the node's soft room counts as hard from now on (always sound).
        widen_hard(net, node, (window[0], INF))
        return
    windows[e, 0] = window[0]
    windows[e, 1] = window[1]
    takes[e, 0] = take[0]
    takes[e, 1] = take[1]
    following[e] = head[node]
    head[node] = e
    net.used[which] = e + 1
    net.dirty[node] = True


@njit(cache=True)
def free_soft(net: NetFreed, node: int, window: tuple[float, float], take: tuple[int, int]) -> None:
    """The pass freed ``window`` on ``node`` where a booking took ``take`` (cores, GPUs)."""
    _link((net.soft_head, net.soft_next, net.soft_window, net.soft_take), net, 0, node, window, take)


@njit(cache=True)
def add_booking(net: NetFreed, node: int, window: tuple[float, float], take: tuple[int, int]) -> None:
    """A booking no kept reservation's bookings ahead of it had: it takes freed room back."""
    if net.used[1] >= net.add_next.shape[0]:
        return  # not counted: the room only looks freer (always sound)
    _link((net.add_head, net.add_next, net.add_window, net.add_take), net, 1, node, window, take)


@njit(cache=True)
def _uncovered(net: NetFreed, node: int, now: float) -> tuple[float, float]:
    """The hull of the instants ``>= now`` of ``node``'s soft room at which the added bookings
    covering them take less than all its soft entries together (cores or GPUs)."""
    soft_c = 0
    soft_g = 0
    count = 0
    e = net.soft_head[node]
    while e >= 0:
        if net.soft_window[e, 1] > max(net.soft_window[e, 0], now):
            soft_c += net.soft_take[e, 0]
            soft_g += net.soft_take[e, 1]
            count += 2
        e = net.soft_next[e]
    if count == 0:
        return INF, -INF
    e = net.add_head[node]
    while e >= 0:
        count += 2
        e = net.add_next[e]
    points = np.empty(count, dtype=np.float64)
    k = 0
    e = net.soft_head[node]
    while e >= 0:
        t0 = max(net.soft_window[e, 0], now)
        if net.soft_window[e, 1] > t0:
            points[k] = t0
            points[k + 1] = net.soft_window[e, 1]
            k += 2
        e = net.soft_next[e]
    e = net.add_head[node]
    while e >= 0:
        points[k] = max(net.add_window[e, 0], now)
        points[k + 1] = max(net.add_window[e, 1], now)
        k += 2
        e = net.add_next[e]
    points = np.unique(points)
    lo = INF
    hi = -INF
    for x in range(points.shape[0] - 1):
        at = points[x]  # every chain is constant over [at, points[x + 1])
        soft = False
        e = net.soft_head[node]
        while e >= 0 and not soft:
            soft = max(net.soft_window[e, 0], now) <= at < net.soft_window[e, 1]
            e = net.soft_next[e]
        if not soft:
            continue
        cover_c = 0
        cover_g = 0
        e = net.add_head[node]
        while e >= 0:
            if net.add_window[e, 0] <= at < net.add_window[e, 1]:
                cover_c += net.add_take[e, 0]
                cover_g += net.add_take[e, 1]
            e = net.add_next[e]
        if cover_c < soft_c or cover_g < soft_g:
            lo = min(lo, at)
            hi = max(hi, points[x + 1])
    return lo, hi


@njit(cache=True)
def net_hull(net: NetFreed, node: int, now: float) -> tuple[float, float]:
    """``node``'s net freed hull: the hard hull joined with the uncovered soft hull (lo > hi:
    nothing)."""
    if net.dirty[node]:
        lo, hi = _uncovered(net, node, now)
        net.left[node, 0] = lo
        net.left[node, 1] = hi
        net.dirty[node] = False
    return min(net.hard_lo[node], net.left[node, 0]), max(net.hard_hi[node], net.left[node, 1])
