"""Each node's earliest fit under conservative backfilling's rule on nodes, from its sorted
bookings: the threshold form (issue 31, round 12).

Under :mod:`rush.core.conservative_nodes`'s rule a booking overlapping a window
``[t, t + d)`` holds its take for the whole window. A booking overlaps exactly when it starts
before ``t + d`` and does not end by ``t`` (one ending by ``t`` started before ``t + d``), so a
node's load over the window is ``S(t + d) - E(t)``: the takes of its bookings starting before
``t + d`` less those of the ones ending by ``t``. A whole-node or shared request fits on the
node exactly when both loads (cores, GPUs) are at most its thresholds (0 for an exclusive job;
the node's capacity less the request's per-node take for a shared one). With each node's
bookings sorted by start and by end and their takes summed along, the earliest fit from ``t``
is a fixed point of bisections (:func:`earliest_fit`), not a walk of the bookings.

The sorted bookings live in an append-only pool (:class:`FitPool`): a node is rebuilt from the
pass's per-node booking chains when read after a booking on it was placed or switched on or
off (``stale``); a full pool starts over, every node stale.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

INF = np.inf


class FitPool(NamedTuple):
    """Per node, its bookings that are on, sorted: starts ``t0`` with the running sums of their
    takes ``s_c``, ``s_g`` (leading zero), ends ``t1`` with ``e_c``, ``e_g``; node n's from
    ``offset[n]``, ``size[n]`` of them (sums ``size[n] + 1``). ``fill[0]``: the pool's used length."""

    t0: np.ndarray
    t1: np.ndarray
    s_c: np.ndarray
    s_g: np.ndarray
    e_c: np.ndarray
    e_g: np.ndarray
    offset: np.ndarray
    size: np.ndarray
    stale: np.ndarray
    fill: np.ndarray


@njit(cache=True)
def fit_pool(m: int, capacity: int) -> FitPool:
    """An empty pool for ``m`` nodes holding ``capacity`` slots, every node stale."""
    return FitPool(
        np.empty(capacity, dtype=np.float64),
        np.empty(capacity, dtype=np.float64),
        np.empty(capacity, dtype=np.int64),
        np.empty(capacity, dtype=np.int64),
        np.empty(capacity, dtype=np.int64),
        np.empty(capacity, dtype=np.int64),
        np.zeros(m, dtype=np.int64),
        np.zeros(m, dtype=np.int64),
        np.ones(m, dtype=np.bool_),
        np.zeros(1, dtype=np.int64),
    )


@njit(cache=True)
def rebuild(
    pool: FitPool,
    node: int,
    chains: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    bookings: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """Sort ``node``'s bookings that are on into the pool. ``chains``: head entry per node,
    next entry, booking of entry, cores and GPUs of entry; ``bookings``: on, start, end."""
    head, following, of_booking, take_c, take_g = chains
    on, b_t0, b_t1 = bookings
    k = 0
    e = head[node]
    while e >= 0:
        if on[of_booking[e]]:
            k += 1
        e = following[e]
    o = pool.fill[0]
    if o + k + 1 > pool.t0.shape[0]:  # full: start over (the caller keeps it large enough for one node)
        pool.stale[:] = True
        o = 0
    t0 = np.empty(k, dtype=np.float64)
    t1 = np.empty(k, dtype=np.float64)
    c = np.empty(k, dtype=np.int64)
    g = np.empty(k, dtype=np.int64)
    x = 0
    e = head[node]
    while e >= 0:
        b = of_booking[e]
        if on[b]:
            t0[x] = b_t0[b]
            t1[x] = b_t1[b]
            c[x] = take_c[e]
            g[x] = take_g[e]
            x += 1
        e = following[e]
    by_start = np.argsort(t0, kind="mergesort")
    by_end = np.argsort(t1, kind="mergesort")
    pool.s_c[o] = 0
    pool.s_g[o] = 0
    pool.e_c[o] = 0
    pool.e_g[o] = 0
    for x in range(k):
        a = by_start[x]
        pool.t0[o + x] = t0[a]
        pool.s_c[o + x + 1] = pool.s_c[o + x] + c[a]
        pool.s_g[o + x + 1] = pool.s_g[o + x] + g[a]
        z = by_end[x]
        pool.t1[o + x] = t1[z]
        pool.e_c[o + x + 1] = pool.e_c[o + x] + c[z]
        pool.e_g[o + x + 1] = pool.e_g[o + x] + g[z]
    pool.offset[node] = o
    pool.size[node] = k
    pool.stale[node] = False
    pool.fill[0] = o + k + 1


@njit(cache=True, inline="always")
def _first_reaching(sums: np.ndarray, lo: int, hi: int, want: int) -> int:
    """First index in ``lo .. hi`` whose running sum reaches ``want`` (``hi + 1``: none)."""
    if sums[hi] < want:
        return hi + 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if sums[mid] < want:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def earliest_fit(pool: FitPool, node: int, t: float, duration: float, threshold: tuple[int, int]) -> float:
    """The earliest ``t' >= t``, ``t`` or an end of the node's bookings, at which the node's
    loads over ``[t', t' + duration)`` are at most ``threshold`` (cores, GPUs); inf when
    never. While it does not fit, every fit is at or after the first end at which the ended
    takes reach what has started before the window's end less the threshold."""
    t_c, t_g = threshold
    if t_c < 0 or t_g < 0:
        return INF
    o = pool.offset[node]
    k = pool.size[node]
    starts = pool.t0[o : o + k]
    ends = pool.t1[o : o + k]
    while True:
        a = np.searchsorted(starts, t + duration, side="left")
        e = np.searchsorted(ends, t, side="right")
        want_c = pool.s_c[o + a] - t_c
        want_g = pool.s_g[o + a] - t_g
        if pool.e_c[o + e] >= want_c and pool.e_g[o + e] >= want_g:
            return t
        x = _first_reaching(pool.e_c, o + e + 1, o + k, want_c)
        y = _first_reaching(pool.e_g, o + e + 1, o + k, want_g)
        z = max(x, y)
        if z > o + k:
            return INF
        t = ends[z - o - 1]


@njit(cache=True)
def jump_to(
    pool: FitPool,
    t: float,
    duration: float,
    rule: tuple[int, int, int, int],
    need: int,
    eligible: np.ndarray,
    capacity: tuple[np.ndarray, np.ndarray],
    chains: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    bookings: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> float:
    """The ``need``-th smallest earliest fit from ``t`` over the eligible nodes of a whole-node
    or shared request (``rule`` as :func:`rush.core.conservative_nodes._offer`'s): before it
    fewer than ``need`` nodes fit at any time, so no window can hold the job (inf: never)."""
    _, exclusive, c_need, g_need = rule
    cap_c, cap_g = capacity
    m = eligible.shape[0]
    fits = np.empty(m, dtype=np.float64)
    found = 0
    for node in range(m):
        if not eligible[node]:
            continue
        if exclusive:
            threshold = (0, 0)
        else:
            threshold = (cap_c[node] - c_need, cap_g[node] - g_need)
        if threshold[0] < 0 or threshold[1] < 0:
            continue
        if pool.stale[node]:
            rebuild(pool, node, chains, bookings)
        at = earliest_fit(pool, node, t, duration, threshold)
        if at < INF:
            fits[found] = at
            found += 1
    if found < need:
        return INF
    return np.partition(fits[:found], need - 1)[need - 1]
