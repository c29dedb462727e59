"""The core and GPU count profiles of conservative backfilling on nodes, in blocks (issue 31).

:mod:`rush.core.conservative_nodes` keeps, beside its bookings, the step function "cores (and
GPUs) that no booking holds from time t on": sorted breakpoints, each with both counts in force
up to the next. Its breakpoints are the candidate starts of every job, and a window where the
counts do not fit cannot fit on nodes, so each job's search starts at the profile's earliest
count fit. As one flat sorted array, every placement inserts its window's two ends and shifts
the tail (about 22 000 such inserts in a first pass over 10 000 jobs), and every count fit reads
breakpoint after breakpoint.

Here the breakpoints sit in blocks of at most ``BLOCK``, in time order, as
:mod:`rush.core.free_profile` keeps the start projection's, with one time row for both counts:
per block and count a shift added to all its counts (a booking covering the whole block changes
only it) and the least and largest count stored (a fit skips a block where no breakpoint has
enough, and a window check a block where every one has, without reading them). A new
breakpoint shifts at most one block (a full one is split in two). Breakpoints are never merged
or removed, so the breakpoints, their times and their counts are exactly the flat array's, and
so is every fit (tests/core/test_count_blocks.py checks both against the flat profile of
:mod:`rush.core.conservative`). A place in the profile is a pair (block position in time
order, index in the block); ``(NONE, 0)`` is no place.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

BLOCK = 128  # breakpoints per block at most; blocks start half full
NONE = -1  # the block position of no place
INF = np.inf


class CountBlocks(NamedTuple):
    """Blocks of breakpoints (rows by block id), both counts, and their time order."""

    time: np.ndarray  # float64[blocks, BLOCK]: each block's breakpoints, ascending
    cores: np.ndarray  # int64[blocks, BLOCK]: cores free from each breakpoint on, less shift[0]
    gpus: np.ndarray  # int64[blocks, BLOCK]: GPUs free from each breakpoint on, less shift[1]
    size: np.ndarray  # int64[blocks]: breakpoints in the block
    shift: np.ndarray  # int64[2, blocks]: added to every core (row 0) and GPU (row 1) count
    low: np.ndarray  # int64[2, blocks]: least stored count of the block (without shift)
    high: np.ndarray  # int64[2, blocks]: largest stored count of the block (without shift)
    order: np.ndarray  # int64[blocks]: block ids in time order
    first: np.ndarray  # float64[blocks]: first breakpoint of each block, in time order
    count: np.ndarray  # int64[1]: blocks in use


@njit(cache=True)
def blocks_from(
    ptime: np.ndarray, counts: tuple[np.ndarray, np.ndarray], n: int, capacity: int
) -> CountBlocks:
    """The profile of the first ``n`` breakpoints ``ptime`` (ascending) with core and GPU
    ``counts``, with room for ``capacity`` breakpoints in all."""
    half = BLOCK // 2
    blocks = max(capacity, n) // half + 2
    p = CountBlocks(
        np.empty((blocks, BLOCK), dtype=np.float64),
        np.empty((blocks, BLOCK), dtype=np.int64),
        np.empty((blocks, BLOCK), dtype=np.int64),
        np.zeros(blocks, dtype=np.int64),
        np.zeros((2, blocks), dtype=np.int64),
        np.zeros((2, blocks), dtype=np.int64),
        np.zeros((2, blocks), dtype=np.int64),
        np.arange(blocks),
        np.empty(blocks, dtype=np.float64),
        np.zeros(1, dtype=np.int64),
    )
    b = 0
    for s in range(0, n, half):
        e = min(s + half, n)
        p.time[b, : e - s] = ptime[s:e]
        p.cores[b, : e - s] = counts[0][s:e]
        p.gpus[b, : e - s] = counts[1][s:e]
        p.size[b] = e - s
        p.first[b] = ptime[s]
        _bounds(p, b)
        b += 1
    p.count[0] = b
    return p


@njit(cache=True)
def _bounds(p: CountBlocks, b: int) -> None:
    """Recompute block ``b``'s least and largest stored counts."""
    size = p.size[b]
    p.low[0, b], p.high[0, b] = _low_high(p.cores[b], size)
    p.low[1, b], p.high[1, b] = _low_high(p.gpus[b], size)


@njit(cache=True, inline="always")
def _low_high(row: np.ndarray, size: int) -> tuple[int, int]:
    lo = row[0]
    hi = lo
    for i in range(1, size):
        v = row[i]
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    return lo, hi


@njit(cache=True)
def _block_at(p: CountBlocks, t: float) -> int:
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
def _index_in(p: CountBlocks, b: int, t: float) -> int:
    """First index in block ``b`` whose breakpoint is at or after ``t``."""
    lo, hi = 0, p.size[b]
    while lo < hi:
        mid = (lo + hi) >> 1
        if p.time[b, mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def _settled(p: CountBlocks, h: int, k: int) -> tuple[int, int]:
    """The place (h, k), moved to the next block's start when k is past its block's end."""
    while h < p.count[0] and k >= p.size[p.order[h]]:
        h += 1
        k = 0
    if h >= p.count[0]:
        return NONE, 0
    return h, k


@njit(cache=True)
def place_at(p: CountBlocks, t: float) -> tuple[int, int]:
    """The first breakpoint at or after ``t`` (``numpy.searchsorted`` left of the flat
    array); (NONE, 0) when every breakpoint is before it."""
    h = _block_at(p, t)
    return _settled(p, h, _index_in(p, p.order[h], t))


@njit(cache=True, inline="always")
def time_at(p: CountBlocks, place: tuple[int, int]) -> float:
    return p.time[p.order[place[0]], place[1]]


@njit(cache=True, inline="always")
def next_place(p: CountBlocks, place: tuple[int, int]) -> tuple[int, int]:
    """The breakpoint after ``place`` ((NONE, 0) after the last)."""
    return _settled(p, place[0], place[1] + 1)


@njit(cache=True)
def flat(p: CountBlocks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Times, core counts and GPU counts of every breakpoint, in order (for tests)."""
    total = 0
    for h in range(p.count[0]):
        total += p.size[p.order[h]]
    times = np.empty(total, dtype=np.float64)
    cores = np.empty(total, dtype=np.int64)
    gpus = np.empty(total, dtype=np.int64)
    x = 0
    for h in range(p.count[0]):
        b = p.order[h]
        for i in range(p.size[b]):
            times[x] = p.time[b, i]
            cores[x] = p.cores[b, i] + p.shift[0, b]
            gpus[x] = p.gpus[b, i] + p.shift[1, b]
            x += 1
    return times, cores, gpus


@njit(cache=True)
def _split(p: CountBlocks, h: int) -> None:
    """Move the upper half of the block at position ``h`` into a new block right after it."""
    b = p.order[h]
    c = p.count[0]
    nb = c  # ids are handed out in order: a block never goes away
    keep = p.size[b] // 2
    moved = p.size[b] - keep
    p.time[nb, :moved] = p.time[b, keep : p.size[b]]
    p.cores[nb, :moved] = p.cores[b, keep : p.size[b]]
    p.gpus[nb, :moved] = p.gpus[b, keep : p.size[b]]
    p.size[nb] = moved
    p.size[b] = keep
    p.shift[0, nb] = p.shift[0, b]
    p.shift[1, nb] = p.shift[1, b]
    _bounds(p, b)
    _bounds(p, nb)
    for x in range(c, h + 1, -1):
        p.order[x] = p.order[x - 1]
        p.first[x] = p.first[x - 1]
    p.order[h + 1] = nb
    p.first[h + 1] = p.time[nb, 0]
    p.count[0] = c + 1


@njit(cache=True)
def _breakpoint(p: CountBlocks, t: float) -> None:
    """A breakpoint at ``t`` (not before the first one), with the counts in force there."""
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
    for x in range(p.size[b], i, -1):
        p.time[b, x] = p.time[b, x - 1]
        p.cores[b, x] = p.cores[b, x - 1]
        p.gpus[b, x] = p.gpus[b, x - 1]
    p.time[b, i] = t
    p.cores[b, i] = p.cores[b, i - 1]
    p.gpus[b, i] = p.gpus[b, i - 1]
    p.size[b] += 1


@njit(cache=True)
def _add(p: CountBlocks, which: int, window: tuple[float, float], delta: int) -> None:
    """Add ``delta`` to count ``which`` (0 cores, 1 GPUs) at every breakpoint in the window."""
    t0, t1 = window
    row = p.cores if which == 0 else p.gpus
    h = _block_at(p, t0)
    while h < p.count[0] and p.first[h] < t1:
        b = p.order[h]
        s = p.size[b]
        if p.first[h] >= t0 and p.time[b, s - 1] < t1:
            p.shift[which, b] += delta
        else:
            for i in range(_index_in(p, b, t0), s):
                if p.time[b, i] >= t1:
                    break
                row[b, i] += delta
            _bounds(p, b)
        h += 1


@njit(cache=True)
def occupy(p: CountBlocks, t0: float, duration: float, delta: tuple[int, int]) -> None:
    """Add ``delta`` (cores, GPUs) on ``[t0, t0 + duration)`` (``t0`` not before the first
    breakpoint), as :func:`rush.core.conservative._occupy` does on each flat profile: both
    ends become breakpoints. A GPU delta of 0 leaves the GPU counts untouched."""
    t1 = t0 + duration
    _breakpoint(p, t0)
    _breakpoint(p, t1)
    if delta[0] != 0:
        _add(p, 0, (t0, t1), delta[0])
    if delta[1] != 0:
        _add(p, 1, (t0, t1), delta[1])


@njit(cache=True)
def _fit_one(p: CountBlocks, which: int, need: int, duration: float, start: tuple[int, int], bound: float):
    """:func:`rush.core.conservative.fit_before` on count ``which``: the first breakpoint
    from ``start`` on, before time ``bound`` (inf: every one, a breakpoint at inf included),
    from which ``need`` stays free for ``duration``; (NONE, 0) when none."""
    row = p.cores if which == 0 else p.gpus
    shift = p.shift[which]
    low = p.low[which]
    high = p.high[which]
    count = p.count[0]
    h, i = start
    while 0 <= h < count:
        # The first breakpoint from (h, i) on with enough free (the block's shift taken off
        # the need, not added to every count).
        found = False
        while h < count:
            b = p.order[h]
            wanted = need - shift[b]
            if high[b] >= wanted:
                for x in range(i, p.size[b]):
                    if row[b, x] >= wanted:
                        i = x
                        found = True
                        break
                if found:
                    break
            h += 1
            i = 0
        if not found:
            return NONE, 0
        t = p.time[p.order[h], i]
        if not (t < bound or bound == INF):
            return NONE, 0
        end = t + duration
        # The first breakpoint after it, before t + duration, with too few.
        hh, x = h, i + 1
        blocked = False
        while hh < count:
            b = p.order[hh]
            wanted = need - shift[b]
            if x == 0:
                if p.first[hh] >= end:
                    break
                if low[b] >= wanted:
                    hh += 1
                    continue
            times = p.time[b]
            size = p.size[b]
            while x < size:
                if times[x] >= end:
                    break
                if row[b, x] < wanted:
                    blocked = True
                    break
                x += 1
            if blocked or x < size:
                break
            hh += 1
            x = 0
        if not blocked:
            return h, i
        h, i = _settled(p, hh, x + 1)  # the next fit starts after the blocking breakpoint
    return NONE, 0


@njit(cache=True)
def count_fit(
    p: CountBlocks, need: tuple[int, int], duration: float, start: tuple[int, int], bound: float
) -> tuple[int, int]:
    """The first breakpoint from ``start`` on, before time ``bound``, from which both counts of
    ``need`` stay free for ``duration`` ((NONE, 0): none), as the flat pass's count fit: the
    cores' fit, then the GPUs' from there, until both agree."""
    place = start
    while place[0] != NONE:
        place = _fit_one(p, 0, need[0], duration, place, bound)
        if place[0] == NONE or need[1] <= 0:
            return place
        g = _fit_one(p, 1, need[1], duration, place, bound)
        if g[0] == place[0] and g[1] == place[1]:
            return place
        place = g
    return NONE, 0
