"""An upper bound on the core-idle nodes over time, for conservative backfilling on nodes
(issue 31, round 17): a whole-node request skips candidate windows where fewer nodes can be idle
than it asks for, before any node's room is touched.

``U(tau)`` is kept on the count profiles' breakpoints: usable nodes, less those a running job
holds at ``tau`` (each node once, from now to the latest end of its running entries that take
cores), less, for every placement of the pass and every usable node it takes cores on where the
room over its window still offered all the node's cores, one over the placement's window. Per
node the windows counted are disjoint and each is held by a booking that stays on, so ``U(tau)``
is never below the number of usable nodes no booking taking cores holds at ``tau``; kept
reservations are not counted, which only leaves it higher. A request every offering node of
which must have all its cores free over the window (exclusive, or shared asking at least the
cores of every eligible node) gets at most ``min U`` over its window units.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rush.core.conservative import fit_before
from rush.core.node_pool import NodePool, NodeRequests

# Partitions are bits 0..63 of a node's mask; slot 0 of max_cores is "any partition".
PARTITION_SLOTS = 65


@njit(cache=True)
def max_cores(pool: NodePool) -> np.ndarray:
    """The most cores of a usable node, of any partition (slot 0) and of partition p (slot p + 1)."""
    most = np.zeros(PARTITION_SLOTS, dtype=np.int64)
    for node in range(pool.count):
        if not pool.usable[node]:
            continue
        c = pool.cores[node]
        most[0] = max(most[0], c)
        for p in range(PARTITION_SLOTS - 1):
            if (pool.partitions[node] >> p) & 1:
                most[p + 1] = max(most[p + 1], c)
    return most


@njit(cache=True)
def whole_like(request: NodeRequests, j: int, most: np.ndarray) -> bool:
    """Whether every node that could offer job j a unit must have all its cores free over the
    window: an exclusive request, or a shared one asking at least the cores of every eligible node."""
    if request.nodes[j] <= 0:
        return False
    if request.exclusive[j]:
        return True
    p = request.partition[j]
    slot = 0 if p < 0 else p + 1
    return 0 <= slot < PARTITION_SLOTS and request.cores[j] > 0 and request.cores[j] >= most[slot]


@njit(cache=True)
def initial_idle(
    profile: tuple[np.ndarray, int],
    running: tuple[np.ndarray, np.ndarray, int],
    entries: tuple[np.ndarray, np.ndarray],
    usable: np.ndarray,
    out: np.ndarray,
) -> None:
    """``U`` on the first ``n`` breakpoints ``ptime`` from the running bookings (``running``:
    their ends, entry slots and count; all start now): usable nodes less those a running entry
    taking cores holds, each node up to the latest such end. Written to ``out``."""
    ptime, n = profile
    b_t1, b_slot, count = running
    at, take_c = entries
    m = usable.shape[0]
    until = np.full(m, -np.inf)
    for b in range(count):
        for k in range(b_slot[2 * b], b_slot[2 * b + 1]):
            node = at[k]
            if 0 <= node < m and usable[node] and take_c[k] > 0:
                until[node] = max(until[node], b_t1[b])
    ends = np.sort(until[usable])
    total = ends.shape[0]
    for x in range(n):
        # nodes still held at ptime[x]: their latest end is after it
        out[x] = total - (ends.shape[0] - np.searchsorted(ends, ptime[x], side="right"))


@njit(cache=True)
def fit_with_idle(
    cores: tuple[np.ndarray, np.ndarray],
    gpus: tuple[np.ndarray, np.ndarray],
    n: int,
    need: tuple[int, int],
    duration: float,
    span: tuple[int, float],
    idle: np.ndarray,
    units: int,
) -> int:
    """First breakpoint from ``span[0]`` on, before ``span[1]``, where both counts of ``need``
    stay free for ``duration`` and ``idle`` (``U`` on the same breakpoints) stays at least
    ``units`` (-1: none)."""
    i, bound = span
    while i >= 0:
        i = count_fit(cores, gpus, n, need, duration, (i, bound))
        if i < 0:
            return -1
        u = fit_before(cores[0], idle, n, units, duration, i, bound)
        if u == i:
            return i
        i = u
    return -1


@njit(cache=True)
def count_fit(
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
def take_counting_idle(
    entries: tuple[np.ndarray, np.ndarray, np.ndarray],
    span: tuple[int, int],
    room: tuple[np.ndarray, np.ndarray],
    usable: np.ndarray,
    capacity: np.ndarray,
) -> int:
    """Take a placement's entries ``span`` off ``room`` (its window's room, as
    :func:`rush.core.conservative_nodes._hold` with sign -1); returns how many usable nodes it
    takes cores on whose room still offered all their cores (idle over the window until now)."""
    at, take_c, take_g = entries
    room_c, room_g = room
    idle = 0
    for k in range(span[0], span[1]):
        node = at[k]
        if 0 <= node < room_c.shape[0]:
            if usable[node] and take_c[k] > 0 and room_c[node] == capacity[node]:
                idle += 1
            room_c[node] -= take_c[k]
            room_g[node] -= take_g[k]
    return idle
