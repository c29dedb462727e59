"""The conservative node pass's offer states keep the job's units exact (issue 31, round 24).

:func:`rush.core.conservative_nodes._apply` keeps, for whole-node and shared requests, a state
per node (0 not eligible, 1 offering nothing, 2 offering a unit) and tests the offer rule only
where an entry can change it: a take on an offering node, a gift on one offering nothing. Here
a room is slid over random bookings as the pass slides it (bookings ending by the window's start
leave it, those starting before its end enter it) with the states, and after every booking the
room, the total and the states are compared with a recount of :func:`_offer` over every node
on the room built afresh, and the total with main's test before and after every entry.
"""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.conservative_nodes import _apply, _offer


def _pool(rng, m: int):
    cap_c = rng.choice([4, 8, 16, 32], m).astype(np.int64)
    cap_g = rng.choice([0, 0, 2, 4], m).astype(np.int64)
    eligible = rng.random(m) < 0.8
    return (cap_c, cap_g), eligible


def _bookings(rng, capacity, count: int):
    """Bookings of whole nodes or of parts of them (takes of at least 0), in random order."""
    m = capacity[0].shape[0]
    t0 = rng.integers(0, 60, count).astype(np.float64)
    t1 = t0 + rng.integers(1, 25, count)
    slot = np.zeros(2 * count, dtype=np.int64)
    at, take_c, take_g = [], [], []
    for b in range(count):
        slot[2 * b] = len(at)
        whole = rng.random() < 0.3
        for node in rng.choice(m, size=int(rng.integers(1, 4)), replace=False):
            at.append(int(node))
            if whole:
                take_c.append(int(capacity[0][node]))
                take_g.append(int(capacity[1][node]))
            else:
                take_c.append(int(rng.integers(0, capacity[0][node] // 2 + 1)))
                take_g.append(int(rng.integers(0, capacity[1][node] // 2 + 1)))
        slot[2 * b + 1] = len(at)
    entries = (
        np.array(at, dtype=np.int64),
        np.array(take_c, dtype=np.int64),
        np.array(take_g, dtype=np.int64),
    )
    return t0, t1, slot, entries


def _rule(rng, capacity, flagged: int):
    if rng.random() < 0.3:
        return (int(rng.integers(1, 4)), 1, 0, 0, flagged)
    return (int(rng.integers(1, 4)), 0, int(rng.integers(1, 17)), int(rng.integers(0, 3)), flagged)


def _recount(rule, eligible, room, capacity) -> list[int]:
    return [
        _offer(rule, bool(eligible[n]), (room[0][n], room[1][n]), (capacity[0][n], capacity[1][n]))
        for n in range(eligible.shape[0])
    ]


def _fresh(capacity, window, bookings):
    t0, t1, slot, (at, take_c, take_g) = bookings
    room_c, room_g = capacity[0].copy(), capacity[1].copy()
    for b in range(t0.shape[0]):
        if t0[b] < window[1] and t1[b] > window[0]:
            for k in range(slot[2 * b], slot[2 * b + 1]):
                room_c[at[k]] -= take_c[k]
                room_g[at[k]] -= take_g[k]
    return room_c, room_g


def _slide(rule, capacity, eligible, bookings, duration: float):
    """Slide a room over every candidate start, as the pass does; yield after each booking
    applied and after each candidate: the window (None between a candidate's bookings, where
    the room is no window's yet), the room, the total and the states."""
    t0, t1, slot, entries = bookings
    by_start, by_end = np.argsort(t0, kind="stable"), np.argsort(t1, kind="stable")
    room = (capacity[0].copy(), capacity[1].copy())
    units = _recount(rule, eligible, room, capacity)
    state = np.array(
        [(1 + u if rule[4] else 1) if e else 0 for u, e in zip(units, eligible, strict=True)], dtype=np.int8
    )
    total = sum(units)
    next_out, next_in, window_end = 0, 0, 0.0
    for t in np.unique(np.concatenate(([0.0], t1))):
        while next_out < t1.shape[0] and t1[by_end[next_out]] <= t:
            b = by_end[next_out]
            if t0[b] < window_end:
                total += _apply(entries, slot[2 * b], slot[2 * b + 1], 1, room, state, capacity, rule)
                yield None, room, total, state
            next_out += 1
        window_end = t + duration
        while next_in < t0.shape[0] and t0[by_start[next_in]] < window_end:
            b = by_start[next_in]
            if t1[b] > t:
                total += _apply(entries, slot[2 * b], slot[2 * b + 1], -1, room, state, capacity, rule)
                yield None, room, total, state
            next_in += 1
        yield (t, window_end), room, total, state


@pytest.mark.parametrize("seed", range(24))
def test_offer_states_keep_the_total_of_a_recount(seed: int) -> None:
    rng = np.random.default_rng(seed)
    capacity, eligible = _pool(rng, int(rng.integers(3, 9)))
    bookings = _bookings(rng, capacity, int(rng.integers(10, 60)))
    for _ in range(4):
        rule = _rule(rng, capacity, 1)
        duration = float(rng.integers(1, 30))
        steps = 0
        for window, room, total, state in _slide(rule, capacity, eligible, bookings, duration):
            if window is not None:
                fresh = _fresh(capacity, window, bookings)
                assert np.array_equal(room[0], fresh[0]) and np.array_equal(room[1], fresh[1])
            units = _recount(rule, eligible, room, capacity)
            assert total == sum(units)
            assert list(state) == [1 + u if e else 0 for u, e in zip(units, eligible, strict=True)]
            steps += 1
        assert steps > 0


@pytest.mark.parametrize("seed", range(12))
def test_offer_states_give_the_totals_of_the_test_at_every_entry(seed: int) -> None:
    """The same slide with the states and with main's test before and after every entry (also
    the path of cores-anywhere requests and unsound passes) gives the same totals, step by step."""
    rng = np.random.default_rng(100 + seed)
    capacity, eligible = _pool(rng, int(rng.integers(3, 9)))
    bookings = _bookings(rng, capacity, int(rng.integers(10, 60)))
    for _ in range(4):
        rule = _rule(rng, capacity, 1)
        duration = float(rng.integers(1, 30))
        flagged = [total for _, _, total, _ in _slide(rule, capacity, eligible, bookings, duration)]
        tested = [total for _, _, total, _ in _slide(rule[:4] + (0,), capacity, eligible, bookings, duration)]
        assert flagged == tested
