"""The freed-room record of the conservative node pass (rush.core.freed_room), against a
brute-force model of each node's room over whole seconds."""

from __future__ import annotations

import numpy as np

from rush.core.freed_room import ANY_NODE, forget, free, free_net, hulls, new_freed, reach, room_bound

NOW = 100


def _running(rng, m: int, cores: np.ndarray, gpus: np.ndarray):
    """Random running bookings [NOW, end) on random nodes, with per-node chains."""
    head = np.full(m, -1, dtype=np.int64)
    following, of_booking, take_c, take_g, ends = [], [], [], [], []
    left_c, left_g = cores.copy(), gpus.copy()
    for b in range(int(rng.integers(0, 2 * m))):
        ends.append(float(NOW + rng.integers(1, 40)))
        for node in rng.choice(m, size=int(rng.integers(1, min(3, m + 1))), replace=False):
            c = int(rng.integers(0, left_c[node] + 1))
            g = int(rng.integers(0, left_g[node] + 1))
            left_c[node] -= c
            left_g[node] -= g
            following.append(head[node])
            head[node] = len(following) - 1
            of_booking.append(b)
            take_c.append(c)
            take_g.append(g)
    chains = (
        head,
        np.array(following, dtype=np.int64),
        np.array(of_booking, dtype=np.int64),
        np.array(take_c, dtype=np.int64),
        np.array(take_g, dtype=np.int64),
        np.array(ends, dtype=np.float64),
    )
    return chains, len(ends)


def _load(chains, running: int, m: int, horizon: int) -> np.ndarray:
    """load[node, second, 0/1]: the running jobs' cores and GPUs."""
    head, following, of_booking, take_c, take_g, ends = chains
    load = np.zeros((m, horizon, 2), dtype=np.int64)
    for node in range(m):
        e = head[node]
        while e >= 0:
            b = of_booking[e]
            if b < running:
                load[node, NOW : int(ends[b]), 0] += take_c[e]
                load[node, NOW : int(ends[b]), 1] += take_g[e]
            e = following[e]
    return load


def _booking(rng, m: int, cores: np.ndarray, gpus: np.ndarray, window: tuple[int, int]):
    at = rng.choice(m, size=int(rng.integers(1, min(4, m + 1))), replace=False)
    c = np.array([int(rng.integers(0, cores[n] + 1)) for n in at], dtype=np.int64)
    g = np.array([int(rng.integers(0, gpus[n] + 1)) for n in at], dtype=np.int64)
    return at.astype(np.int64), c, g, (float(window[0]), float(window[1]))


def _add(load: np.ndarray, booking, sign: int) -> None:
    at, c, g, (t0, t1) = booking
    for k in range(len(at)):
        load[at[k], int(t0) : int(t1), 0] += sign * c[k]
        load[at[k], int(t0) : int(t1), 1] += sign * g[k]


def _window_room(load: np.ndarray, caps: tuple[np.ndarray, np.ndarray], node: int, t: int, d: int) -> tuple:
    """The pass's rule: whatever overlaps the window holds its most for the whole window."""
    worst = load[node, t : t + d].max(axis=0)
    return caps[0][node] - worst[0], caps[1][node] - worst[1]


def test_a_move_frees_where_room_grew_and_no_more_with_bounds_above_the_room() -> None:
    checked = grew = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        m = int(rng.integers(2, 7))
        cores = rng.integers(1, 9, size=m).astype(np.int64)
        gpus = rng.integers(0, 3, size=m).astype(np.int64)
        chains, running = _running(rng, m, cores, gpus)
        horizon = NOW + 200
        load = _load(chains, running, m, horizon)
        t0 = NOW + int(rng.integers(0, 30))
        old = _booking(rng, m, cores, gpus, (t0, t0 + int(rng.integers(1, 40))))
        n0 = NOW + int(rng.integers(0, 40))
        if rng.random() < 0.5:  # the same nodes, at least the same takes, as a re-placement mostly is
            new = (
                old[0],
                old[1] + rng.integers(0, 2, size=len(old[0])),
                old[2],
                (float(n0), n0 + old[3][1] - old[3][0]),
            )
        else:
            new = _booking(rng, m, cores, gpus, (n0, n0 + int(rng.integers(1, 40))))
        freed = new_freed(64)
        scratch = (np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64), np.full(m, -1, dtype=np.int64))
        free_net(freed, old, new, ((cores, gpus), chains, running), scratch)
        assert (scratch[2] == -1).all()
        before = load.copy()
        _add(before, old, 1)
        after = load.copy()
        _add(after, new, 1)
        size = int(freed.size[0])
        for node in range(m):
            for d in (1, 3, 17):
                for t in range(NOW, NOW + 80):
                    was = _window_room(before, (cores, gpus), node, t, d)
                    now = _window_room(after, (cores, gpus), node, t, d)
                    meeting = [
                        k
                        for k in range(size)
                        if freed.node[k] == node
                        and freed.lo[k] < t + d
                        and freed.hi[k] > t
                        and freed.alive[k]
                    ]
                    checked += 1
                    if now[0] > was[0] or now[1] > was[1]:
                        grew += 1
                        assert meeting, (seed, node, t, d)
                    for k in meeting:  # a bound is never below what the node offers there
                        assert freed.room_c[k] >= now[0] and freed.room_g[k] >= now[1], (seed, k)
        # A node keeping at least its take frees nothing inside its new window.
        kept_c = {int(n): 0 for n in new[0]}
        for k in range(len(new[0])):
            kept_c[int(new[0][k])] = int(new[1][k])
        for k in range(size):
            node = int(freed.node[k])
            inside = freed.lo[k] < new[3][1] and freed.hi[k] > new[3][0]
            same = [x for x in range(len(old[0])) if old[0][x] == node]
            kept_more = node in kept_c and all(
                kept_c[node] >= old[1][x] and new[2][list(new[0]).index(node)] >= old[2][x] for x in same
            )
            assert not (inside and kept_more), (seed, k)
    assert grew > 100 and checked > 10_000


def _bookings(rng, m: int):
    """Random bookings on random nodes (some off), as the pass's chains and columns."""
    head = np.full(m, -1, dtype=np.int64)
    following, of_booking, take_c, take_g, t0, t1 = [], [], [], [], [], []
    for b in range(int(rng.integers(0, 3 * m))):
        t0.append(float(NOW + rng.integers(0, 60)))
        t1.append(t0[-1] + float(rng.integers(1, 40)))
        for node in rng.choice(m, size=int(rng.integers(1, min(3, m + 1))), replace=False):
            following.append(head[node])
            head[node] = len(following) - 1
            of_booking.append(b)
            take_c.append(int(rng.integers(0, 4)))
            take_g.append(int(rng.integers(0, 2)))
    links = (
        head,
        np.array(following, dtype=np.int64),
        np.array(of_booking, dtype=np.int64),
        np.array(take_c, dtype=np.int64),
        np.array(take_g, dtype=np.int64),
        np.array(t1, dtype=np.float64),
    )
    on = rng.random(len(t0)) < 0.8
    own = int(rng.integers(-1, len(t0))) if t0 else -1
    return (links, np.array(t0, dtype=np.float64), on, own)


def _offers(book, node: int, t: int, d: int, caps, ask) -> bool:
    """Brute force: the node's load over [t, t + d) under the pass's rule, and the job's need."""
    (head, following, of_booking, take_c, take_g, t1), t0, on, own = book
    load = [0, 0]
    e = head[node]
    while e >= 0:
        b = of_booking[e]
        if b != own and on[b] and t0[b] < t + d and t1[b] > t:
            load[0] += take_c[e]
            load[1] += take_g[e]
        e = following[e]
    nodes, exclusive, c_need, g_need = ask
    if nodes == 0:
        return caps[0][node] - load[0] > 0
    if exclusive:
        return load == [0, 0]
    return caps[0][node] - load[0] >= c_need and caps[1][node] - load[1] >= g_need


def test_reach_is_the_hull_of_the_entries_a_reservation_could_use() -> None:
    used = 0
    for seed in range(300):
        rng = np.random.default_rng(1000 + seed)
        m = int(rng.integers(1, 6))
        cap_c = rng.integers(1, 9, size=m).astype(np.int64)
        cap_g = rng.integers(0, 3, size=m).astype(np.int64)
        usable = rng.random(m) < 0.8
        parts = rng.integers(1, 4, size=m).astype(np.int64)
        book = _bookings(rng, m)
        freed = new_freed(32)
        entries = []
        for _ in range(int(rng.integers(0, 12))):
            node = ANY_NODE if rng.random() < 0.1 else int(rng.integers(0, m))
            lo = NOW + int(rng.integers(-5, 60))
            hi = lo + int(rng.integers(1, 30))
            cap = (cap_c[node], cap_g[node]) if node != ANY_NODE else (8, 2)
            room = (int(rng.integers(0, cap[0] + 1)), int(rng.integers(0, cap[1] + 1)))
            free(freed, node, (float(lo), float(hi)), room)
            entries.append((node, lo, hi, room))
        dropped = int(rng.integers(0, len(entries) + 1))
        forget(freed, 0, dropped)
        p = int(rng.integers(-1, 2))
        nodes = int(rng.integers(0, 3))
        exclusive = int(rng.integers(0, 2))
        c_need = int(rng.integers(1, 5))
        g_need = int(rng.integers(0, 2))
        kept_at = NOW + int(rng.integers(1, 60))
        d = int(rng.integers(1, 20))
        machine = (usable, parts, cap_c, cap_g)
        ask = (p, nodes, exclusive, c_need, g_need)
        since, until = reach(freed, machine, ask, float(NOW), (kept_at, d), book)
        lows, highs = [], []
        for node, lo, hi, room in entries[dropped:]:
            # Starts t, NOW <= t < kept_at, whose window [t, t + d) meets [lo, hi): every time
            # is whole, so half seconds stand for the open stretches between.
            starts = [t for t in np.arange(NOW, kept_at, 0.5) if t < hi and t + d > lo]
            if not starts:
                continue
            if node != ANY_NODE:
                if not usable[node] or (p >= 0 and not (parts[node] >> p) & 1):
                    continue
                if nodes == 0 and room[0] == 0:
                    continue
                if nodes and exclusive and (room[0] < cap_c[node] or room[1] < cap_g[node]):
                    continue
                if nodes and not exclusive and (room[0] < c_need or room[1] < g_need):
                    continue
                if not any(_offers(book, node, t, d, (cap_c, cap_g), ask[1:]) for t in starts):
                    continue
            lows.append(lo)
            highs.append(hi)
        used += len(lows)
        assert (since, until) == ((min(lows), max(highs)) if lows else (np.inf, -np.inf)), seed
    assert used > 100


def test_hulls_cover_the_live_entries_of_the_pass_only() -> None:
    freed = new_freed(8)
    free(freed, 0, (NOW, NOW + 5.0), (1, 0))  # before the pass: not its memory
    free(freed, 1, (NOW + 2.0, NOW + 4.0), (1, 0))
    free(freed, 1, (NOW + 7.0, NOW + 9.0), (1, 0))
    free(freed, 2, (NOW + 1.0, NOW + 3.0), (1, 0))
    free(freed, ANY_NODE, (NOW + 20.0, NOW + 21.0), (0, 0))
    free(freed, 2, (NOW, NOW), (1, 0))  # empty: not recorded
    forget(freed, 3, 4)
    lo, hi = hulls(freed, 1, 4)
    assert lo.tolist() == [NOW + 20.0, NOW + 2.0, NOW + 20.0, NOW + 20.0]
    assert hi.tolist() == [NOW + 21.0, NOW + 21.0, NOW + 21.0, NOW + 21.0]
    assert int(freed.size[0]) == 5


def test_a_bound_takes_off_only_running_jobs_lasting_to_the_end() -> None:
    head = np.array([1, -1], dtype=np.int64)
    chains = (
        head,
        np.array([-1, 0], dtype=np.int64),
        np.array([0, 1], dtype=np.int64),
        np.array([3, 2], dtype=np.int64),
        np.array([1, 0], dtype=np.int64),
        np.array([NOW + 10.0, NOW + 5.0]),
    )
    caps = (np.array([8, 8], dtype=np.int64), np.array([2, 2], dtype=np.int64))
    assert room_bound(0, NOW + 5.0, caps, chains, 2) == (3, 1)
    assert room_bound(0, NOW + 6.0, caps, chains, 2) == (5, 1)
    assert room_bound(0, NOW + 5.0, caps, chains, 1) == (5, 1)  # booking 1 is not running
    assert room_bound(1, NOW + 5.0, caps, chains, 2) == (8, 2)
