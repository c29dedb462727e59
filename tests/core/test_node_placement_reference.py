"""Placement (:func:`rush.core.node_pool.place`) against a plain reference of its rule, on
random pools with partitions, GPUs, drained nodes, quiet and preferred nodes and leaves whose
nodes are not contiguous: the compiled placement reads only a leaf's own nodes and stops
early (issue 31), and must choose exactly the nodes the rule names. :func:`fits` must agree
with whether :func:`place` succeeds."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.node_pool import (
    PLACE_FIRST_FIT,
    PLACE_TOPOLOGY,
    PLACE_VARIABILITY,
    NodePool,
    NodeRequests,
    Room,
    fits,
    leaf_index,
    new_slots,
    place,
)


def _pool(rng: np.random.Generator) -> NodePool:
    m = int(rng.integers(1, 40))
    leaves = int(rng.integers(1, 6))
    leaf = rng.integers(0, leaves, m).astype(np.int64)  # leaves interleaved, some maybe empty
    cores = rng.choice([1, 4, 8], m).astype(np.int64)
    gpus = rng.choice([0, 0, 2], m).astype(np.int64)
    return NodePool(
        cores,
        gpus,
        cores.copy(),
        gpus.copy(),
        rng.random(m) > 0.1,
        rng.integers(1, 4, m).astype(np.int64),  # partition bits 0 and 1
        leaf,
        rng.random(m) > 0.3,
        np.zeros(leaves, dtype=np.int64),
        np.zeros(m, dtype=np.int64),
        m,
        *leaf_index(leaf, leaves),
    )


def _requests(rng: np.random.Generator, jobs: int) -> NodeRequests:
    nodes = rng.choice([0, 0, 1, 2, 3, 6], jobs).astype(np.int64)
    return NodeRequests(
        nodes,
        rng.integers(1, 9, jobs).astype(np.int64),
        np.where(nodes > 0, rng.choice([0, 0, 1], jobs), 0).astype(np.int64),
        (nodes > 0) & (rng.random(jobs) < 0.4),
        rng.choice([-1, -1, 0, 1], jobs).astype(np.int64),
    )


def _room(rng: np.random.Generator, pool: NodePool, quiet_only: bool) -> Room:
    busy = rng.random(pool.count) < 0.5
    cores = np.where(busy, rng.integers(0, pool.cores + 1), pool.cores).astype(np.int64)
    gpus = np.where(busy, rng.integers(0, pool.gpus + 1), pool.gpus).astype(np.int64)
    return Room(cores, gpus, rng.random(pool.count) < 0.3, quiet_only)


def _reference(pool: NodePool, req: NodeRequests, j: int, need: int, room: Room, policy: int):
    """The rule written plainly: each node's units, then preferred nodes before the others by
    index, on the smallest leaf that holds the job, else on the roomiest leaves in turn."""
    units = []
    for i in range(pool.count):
        u = 0
        member = req.partition[j] < 0 or (pool.partitions[i] >> req.partition[j]) & 1
        if pool.usable[i] and member and (pool.quiet[i] or not room.quiet_only):
            if req.nodes[j] == 0:
                u = max(int(room.cores[i]), 0)
            elif req.exclusive[j]:
                u = int(room.cores[i] == pool.cores[i] and room.gpus[i] == pool.gpus[i])
            else:
                u = int(room.cores[i] >= req.cores[j] and room.gpus[i] >= req.gpus[j])
        units.append(u)
    if sum(units) < need:
        return None
    taken: list[tuple[int, int, int]] = []

    def fill(left: int, leaf: int) -> int:
        for preferred in (True, False):
            for i in range(pool.count):
                if left <= 0:
                    return left
                if units[i] <= 0 or bool(room.prefer[i]) != preferred or (leaf >= 0 and pool.leaf[i] != leaf):
                    continue
                if req.nodes[j] == 0:
                    c = min(units[i], left)
                    taken.append((i, c, 0))
                    left -= c
                else:
                    excl = bool(req.exclusive[j])
                    taken.append(
                        (
                            i,
                            int(pool.cores[i] if excl else req.cores[j]),
                            int(pool.gpus[i] if excl else req.gpus[j]),
                        )
                    )
                    left -= 1
        return left

    if policy == PLACE_FIRST_FIT:
        return taken if fill(need, -1) <= 0 else None
    room_of = [
        sum(u for u, leaf in zip(units, pool.leaf, strict=True) if leaf == x)
        for x in range(len(pool.leaf_room))
    ]
    holding = [x for x in range(len(room_of)) if room_of[x] >= need]
    if holding:
        best = min(holding, key=lambda x: (room_of[x], x))
        return taken if fill(need, best) <= 0 else None
    left = need
    while left > 0:
        best = max(range(len(room_of)), key=lambda x: (room_of[x], -x))
        if room_of[best] <= 0:
            return None
        room_of[best] = 0
        left = fill(left, best)
    return taken


@pytest.mark.parametrize("seed", range(6))
def test_placement_chooses_the_nodes_the_rule_names(seed: int) -> None:
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(60):
        pool = _pool(rng)
        req = _requests(rng, 8)
        out = new_slots(1, int(pool.cores.sum()) + pool.count + 8)
        for j in range(8):
            room = _room(rng, pool, quiet_only=bool(rng.random() < 0.2))
            need = int(rng.integers(1, 20)) if req.nodes[j] == 0 else int(req.nodes[j])
            for policy in (PLACE_FIRST_FIT, PLACE_TOPOLOGY, PLACE_VARIABILITY):
                k0 = int(rng.integers(0, 4))
                count = place(pool, req, j, need, room, policy, out, k0)
                expected = _reference(pool, req, j, need, room, policy)
                assert fits(pool, req, j, need, room) == (expected is not None)
                if expected is None:
                    assert count == -1
                    continue
                got = list(
                    zip(
                        out.node[k0 : k0 + count].tolist(),
                        out.cores[k0 : k0 + count].tolist(),
                        out.gpus[k0 : k0 + count].tolist(),
                        strict=True,
                    )
                )
                assert got == expected, (seed, j, policy)
                checked += 1
    assert checked > 100  # most draws place something
