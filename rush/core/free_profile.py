"""A free-processor profile in blocks, for booking many jobs one after another (the start
projection, :mod:`rush.core.start_estimates`).

The profile is the step function "processors free from time t on": a sorted list of
breakpoints, each with the free count up to the next. A flat sorted array (what
:mod:`rush.core.conservative` uses) pays a shift of the whole tail for every new breakpoint and
a scan of every breakpoint for every fit, so booking n jobs costs O(n²). Here the breakpoints
sit in blocks of at most ``BLOCK``, listed in time order, each with

* a shift added to all its free counts (a booking that covers the whole block changes only it),
* the least and the largest free count in it (a fit skips a block where no breakpoint has
  enough free processors, and a block where every breakpoint has, without reading them).

A new breakpoint shifts at most one block (a full block is split in two); a booking changes
two blocks' counts and the shifts of the blocks between. Breakpoints are never merged, so the
breakpoints, their times and counts are exactly the flat array's: every fit is the same.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

BLOCK = 128  # breakpoints per block at most; blocks start half full
INF = np.inf


class FreeProfile(NamedTuple):
    """Blocks of breakpoints (rows by block id) and their time order."""

    time: np.ndarray  # float64[blocks, BLOCK]: each block's breakpoints, ascending
    free: np.ndarray  # int64[blocks, BLOCK]: free processors from each breakpoint on, less `shift`
    size: np.ndarray  # int64[blocks]: breakpoints in the block
    shift: np.ndarray  # int64[blocks]: added to every free count of the block
    low: np.ndarray  # int64[blocks]: least stored free count of the block (without shift)
    high: np.ndarray  # int64[blocks]: largest stored free count of the block (without shift)
    order: np.ndarray  # int64[blocks]: block ids in time order
    first: np.ndarray  # float64[blocks]: first breakpoint of each block, in time order
    count: np.ndarray  # int64[1]: blocks in use


@njit(cache=True)
def new_profile(ptime: np.ndarray, pavail: np.ndarray, n: int, capacity: int) -> FreeProfile:
    """The profile of the first ``n`` breakpoints ``ptime``/``pavail`` (ascending times), with
    room for ``capacity`` breakpoints in all."""
    half = BLOCK // 2
    blocks = 2 * (max(capacity, n) // half) + 4
    p = FreeProfile(
        np.empty((blocks, BLOCK), dtype=np.float64),
        np.empty((blocks, BLOCK), dtype=np.int64),
        np.zeros(blocks, dtype=np.int64),
        np.zeros(blocks, dtype=np.int64),
        np.zeros(blocks, dtype=np.int64),
        np.zeros(blocks, dtype=np.int64),
        np.arange(blocks),
        np.empty(blocks, dtype=np.float64),
        np.zeros(1, dtype=np.int64),
    )
    b = 0
    for s in range(0, n, half):
        e = min(s + half, n)
        p.time[b, : e - s] = ptime[s:e]
        p.free[b, : e - s] = pavail[s:e]
        p.size[b] = e - s
        p.first[b] = ptime[s]
        _bounds(p, b)
        b += 1
    p.count[0] = b
    return p


@njit(cache=True)
def _bounds(p: FreeProfile, b: int) -> None:
    lo = p.free[b, 0]
    hi = lo
    for i in range(1, p.size[b]):
        v = p.free[b, i]
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    p.low[b] = lo
    p.high[b] = hi


@njit(cache=True)
def _block_at(p: FreeProfile, t: float) -> int:
    """Position (in time order) of the block holding the last breakpoint at or before ``t``."""
    lo, hi = 0, p.count[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if p.first[mid] <= t:
            lo = mid + 1
        else:
            hi = mid
    return max(lo - 1, 0)


@njit(cache=True)
def _index_in(p: FreeProfile, b: int, t: float) -> int:
    """First index in block ``b`` whose breakpoint is at or after ``t``."""
    lo, hi = 0, p.size[b]
    while lo < hi:
        mid = (lo + hi) >> 1
        if p.time[b, mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def _split(p: FreeProfile, h: int) -> None:
    """Move the upper half of the block at position ``h`` into a new block right after it."""
    b = p.order[h]
    c = p.count[0]
    nb = c  # ids are handed out in order: a block never goes away
    keep = p.size[b] // 2
    moved = p.size[b] - keep
    p.time[nb, :moved] = p.time[b, keep : p.size[b]]
    p.free[nb, :moved] = p.free[b, keep : p.size[b]]
    p.size[nb] = moved
    p.size[b] = keep
    p.shift[nb] = p.shift[b]
    _bounds(p, b)
    _bounds(p, nb)
    for m in range(c, h + 1, -1):
        p.order[m] = p.order[m - 1]
        p.first[m] = p.first[m - 1]
    p.order[h + 1] = nb
    p.first[h + 1] = p.time[nb, 0]
    p.count[0] = c + 1


@njit(cache=True)
def add_breakpoint(p: FreeProfile, t: float) -> None:
    """A breakpoint at ``t`` (after the first one), with the free count in force there."""
    h = _block_at(p, t)
    b = p.order[h]
    i = _index_in(p, b, t)
    if i < p.size[b] and p.time[b, i] == t:
        return
    if p.size[b] == BLOCK:
        _split(p, h)
        if i > p.size[b]:  # in the upper half (at the lower half's end it stays below)
            i -= p.size[b]
            h += 1
            b = p.order[h]
    # i >= 1: the block's first breakpoint is before t.
    for m in range(p.size[b], i, -1):
        p.time[b, m] = p.time[b, m - 1]
        p.free[b, m] = p.free[b, m - 1]
    p.time[b, i] = t
    p.free[b, i] = p.free[b, i - 1]
    p.size[b] += 1


@njit(cache=True)
def add_free(p: FreeProfile, t0: float, t1: float, delta: int) -> None:
    """Add ``delta`` free processors at every breakpoint in [t0, t1)."""
    h = _block_at(p, t0)
    while h < p.count[0] and p.first[h] < t1:
        b = p.order[h]
        s = p.size[b]
        if p.first[h] >= t0 and p.time[b, s - 1] < t1:
            p.shift[b] += delta
        else:
            for i in range(_index_in(p, b, t0), s):
                if p.time[b, i] >= t1:
                    break
                p.free[b, i] += delta
            _bounds(p, b)
        h += 1


@njit(cache=True)
def earliest_fit(p: FreeProfile, need: int, duration: float, after: float) -> tuple[float, float]:
    """The first breakpoint at or after ``after`` from which ``need`` processors stay free for
    ``duration`` (a breakpoint before its start+duration with fewer free blocks it), and the
    first breakpoint at or after ``after`` with ``need`` free at all; inf when there is none."""
    h = _block_at(p, after)
    i = _index_in(p, p.order[h], after)
    first_free = -1.0
    count = p.count[0]
    while True:
        # The first breakpoint from (h, i) on with enough free processors (the block's shift
        # taken off the need, not added to every count).
        found = False
        while h < count:
            b = p.order[h]
            wanted = need - p.shift[b]
            if p.high[b] >= wanted:
                row = p.free[b]
                for m in range(i, p.size[b]):
                    if row[m] >= wanted:
                        i = m
                        found = True
                        break
                if found:
                    break
            h += 1
            i = 0
        if not found:
            return INF, INF if first_free < 0.0 else first_free
        t = p.time[p.order[h], i]
        if first_free < 0.0:
            first_free = t
        end = t + duration
        # The first breakpoint after it, before t + duration, with too few.
        hh, m = h, i + 1
        blocked = False
        while hh < count:
            b = p.order[hh]
            wanted = need - p.shift[b]
            if m == 0:
                if p.first[hh] >= end:
                    break
                if p.low[b] >= wanted:
                    hh += 1
                    continue
            row = p.free[b]
            times = p.time[b]
            size = p.size[b]
            while m < size:
                if times[m] >= end:
                    break
                if row[m] < wanted:
                    blocked = True
                    break
                m += 1
            if blocked or m < size:
                break
            hh += 1
            m = 0
        if not blocked:
            return t, first_free
        h, i = hh, m  # the blocking breakpoint: the next fit starts after it
