"""The idle-node bound of conservative backfilling on nodes (rush.core.idle_bound, issue 31
round 17) against brute force: its initial profile from running jobs, its window fit, the
count of nodes a placement takes while idle, and which requests it may bound."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.idle_bound import fit_with_idle, initial_idle, max_cores, take_counting_idle, whole_like
from rush.core.node_pool import NodePool, NodeRequests

NOW = 1_000.0


def _pool(cores: list[int], usable: list[bool], parts: list[int]) -> NodePool:
    m = len(cores)
    zeros = np.zeros(m, dtype=np.int64)
    return NodePool(
        cores=np.array(cores, dtype=np.int64),
        gpus=zeros.copy(),
        free_cores=np.array(cores, dtype=np.int64),
        free_gpus=zeros.copy(),
        usable=np.array(usable, dtype=np.bool_),
        partitions=np.array(parts, dtype=np.int64),
        leaf=zeros.copy(),
        quiet=np.ones(m, dtype=np.bool_),
        leaf_room=np.zeros(1, dtype=np.int64),
        node_units=zeros.copy(),
        count=m,
        leaf_nodes=np.arange(m, dtype=np.int64),
        leaf_first=np.array([0, m], dtype=np.int64),
    )


@pytest.mark.parametrize("seed", range(20))
def test_initial_idle_counts_nodes_no_running_core_entry_holds(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 12))
    usable = rng.random(m) < 0.8
    count = int(rng.integers(0, 10))
    ends = NOW + rng.choice([1.0, 50.0, 300.0, 900.0], count)
    at, take, slots = [], [], []
    for _ in range(count):
        slots.append(len(at))
        for node in rng.choice(m, int(rng.integers(1, m + 1)), replace=False):
            at.append(int(node))
            take.append(int(rng.integers(0, 3)))  # some entries take no cores (GPU only)
        slots.append(len(at))
    ptime = np.unique(np.concatenate(([NOW], ends, NOW + rng.uniform(0, 1000, 5))))
    out = np.empty(ptime.shape[0], dtype=np.int64)
    initial_idle(
        (ptime, ptime.shape[0]),
        (ends, np.array(slots, dtype=np.int64), count),
        (np.array(at, dtype=np.int64), np.array(take, dtype=np.int64)),
        usable,
        out,
    )
    for x, tau in enumerate(ptime):
        busy = {
            at[k]
            for b in range(count)
            for k in range(slots[2 * b], slots[2 * b + 1])
            if take[k] > 0 and tau < ends[b]
        }
        assert out[x] == sum(1 for node in range(m) if usable[node] and node not in busy), (x, tau)


def _holds(ptime: np.ndarray, counts: tuple, i: int, ask: tuple) -> bool:
    """Brute force: every profile step meeting [ptime[i], ptime[i] + duration) offers the counts."""
    cores, gpus, idle = counts
    (c, g), units, duration = ask
    span = [k for k in range(i, ptime.shape[0]) if k == i or ptime[k] < ptime[i] + duration]
    return all(cores[k] >= c and (g <= 0 or gpus[k] >= g) and idle[k] >= units for k in span)


@pytest.mark.parametrize("seed", range(30))
def test_fit_with_idle_is_the_first_window_where_counts_and_idle_nodes_hold(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 25))
    ptime = np.sort(NOW + rng.choice(np.arange(0.0, 5_000.0, 50.0), n, replace=False))
    ptime[0] = NOW
    cores = rng.integers(0, 40, n).astype(np.int64)
    gpus = rng.integers(0, 5, n).astype(np.int64)
    idle = rng.integers(0, 6, n).astype(np.int64)
    for _ in range(20):
        need = (int(rng.integers(0, 40)), int(rng.integers(0, 5)))
        units = int(rng.integers(0, 6))
        duration = float(rng.choice([1.0, 60.0, 400.0, 2_000.0]))
        lo = int(rng.integers(0, n))
        bound = float(rng.choice([np.inf, NOW + 2_500.0]))
        ask = (need, units, duration)
        expected = next(
            (
                i
                for i in range(lo, n)
                if (ptime[i] < bound or bound == np.inf) and _holds(ptime, (cores, gpus, idle), i, ask)
            ),
            -1,
        )
        if expected >= 0 and not (ptime[expected] < bound or bound == np.inf):
            expected = -1
        got = fit_with_idle((ptime, cores), (ptime, gpus), n, need, duration, (lo, bound), idle, units)
        assert got == expected, (need, units, duration, lo, bound)


def test_take_counting_idle_counts_each_node_once_and_only_where_all_cores_were_free() -> None:
    capacity = np.array([8, 8, 4, 8], dtype=np.int64)
    usable = np.array([True, True, True, False])
    room_c = np.array([8, 5, 4, 8], dtype=np.int64)
    room_g = np.zeros(4, dtype=np.int64)
    # node 0 twice (idle only before the first), node 1 not idle, node 2 idle but a GPU-only
    # take, node 3 not usable
    at = np.array([0, 0, 1, 2, 3], dtype=np.int64)
    take_c = np.array([2, 2, 1, 0, 8], dtype=np.int64)
    take_g = np.array([0, 0, 0, 1, 0], dtype=np.int64)
    idle = take_counting_idle((at, take_c, take_g), (0, 5), (room_c, room_g), usable, capacity)
    assert idle == 1
    assert room_c.tolist() == [4, 4, 4, 0]
    assert room_g.tolist() == [0, 0, -1, 0]


def test_whole_like_requests() -> None:
    pool = _pool([8, 16, 4], [True, True, True], [0b01, 0b10, 0b01])
    most = max_cores(pool)
    assert most[0] == 16 and most[1] == 8 and most[2] == 16
    request = NodeRequests(
        nodes=np.array([2, 1, 1, 1, 0, 1], dtype=np.int64),
        cores=np.array([1, 8, 8, 16, 8, 0], dtype=np.int64),
        gpus=np.zeros(6, dtype=np.int64),
        exclusive=np.array([True, False, False, False, False, False]),
        partition=np.array([-1, 0, -1, 1, -1, 0], dtype=np.int64),
    )
    # exclusive; 8 cores in partition 0 (most 8); 8 cores anywhere (a 16-core node could
    # share); 16 cores in partition 1; cores anywhere; no cores asked
    assert [whole_like(request, j, most) for j in range(6)] == [True, True, False, True, False, False]
