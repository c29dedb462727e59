"""A room carried from window to window equals the room built afresh (issue 31).

:mod:`rush.core.carried_room` moves a room's two cuts (bookings ending by the window's start,
bookings starting before its end) from one window to another, forwards or backwards, instead of
building the room from the machine's capacity. The conservative node pass relies on the moved
room being exactly what no booking overlapping the new window holds
(tests/core/test_conservative_nodes_speed.py checks the pass's decisions against its oracle).
"""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.carried_room import move_cost, move_cuts


def _bookings(rng, m: int, count: int):
    """Random bookings: windows, on or off, and entries (node, cores, GPUs)."""
    t0 = rng.integers(0, 50, count).astype(np.float64)
    t1 = t0 + rng.integers(1, 30, count)
    on = rng.random(count) < 0.8
    sizes = rng.integers(1, 4, count)
    slot = np.zeros(2 * count, dtype=np.int64)
    at, take_c, take_g = [], [], []
    for b in range(count):
        slot[2 * b] = len(at)
        for node in rng.choice(m, size=min(int(sizes[b]), m), replace=False):
            at.append(int(node))
            take_c.append(int(rng.integers(1, 5)))
            take_g.append(int(rng.integers(0, 2)))
        slot[2 * b + 1] = len(at)
    entries = (
        np.array(at, dtype=np.int64),
        np.array(take_c, dtype=np.int64),
        np.array(take_g, dtype=np.int64),
    )
    return t0, t1, on, slot, entries


def _fresh_room(base, window, bookings):
    t0, t1, on, slot, (at, take_c, take_g) = bookings
    room_c, room_g = base[0].copy(), base[1].copy()
    for b in range(len(t0)):
        if on[b] and t0[b] < window[1] and t1[b] > window[0]:
            for k in range(slot[2 * b], slot[2 * b + 1]):
                room_c[at[k]] -= take_c[k]
                room_g[at[k]] -= take_g[k]
    return room_c, room_g


def _cuts(window, t0, t1) -> tuple[int, int]:
    ends, starts = np.sort(t1), np.sort(t0)
    return int(np.searchsorted(ends, window[0], side="right")), int(
        np.searchsorted(starts, window[1], side="left")
    )


@pytest.mark.parametrize("seed", range(40))
def test_moving_the_cuts_gives_the_fresh_room(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 8))
    bookings = _bookings(rng, m, int(rng.integers(1, 40)))
    t0, t1, on, slot, entries = bookings
    by_end = np.argsort(t1, kind="stable").astype(np.int64)
    by_start = np.argsort(t0, kind="stable").astype(np.int64)
    base = (np.full(m, 20, dtype=np.int64), np.full(m, 4, dtype=np.int64))
    window = (10.0, 12.0)
    room = _fresh_room(base, window, bookings)
    room = (room[0].copy(), room[1].copy())
    cuts = _cuts(window, t0, t1)
    for _ in range(30):  # windows later and earlier, longer and shorter
        start = float(rng.integers(0, 80)) + rng.choice([0.0, 0.5])
        window = (start, start + float(rng.integers(1, 40)))
        to = _cuts(window, t0, t1)
        move_cuts((by_end, by_start), cuts, to, (on, slot, entries), room)
        assert move_cost(cuts, to) == abs(to[0] - cuts[0]) + abs(to[1] - cuts[1])
        cuts = to
        want = _fresh_room(base, window, bookings)
        assert room[0].tolist() == want[0].tolist(), (seed, window)
        assert room[1].tolist() == want[1].tolist(), (seed, window)
