"""Conservative backfilling on nodes decides exactly as before its speed-up (issue 22).

:func:`rush.core.conservative_nodes.conservative_nodes_pass` now tries on nodes only the
candidate starts where the processor and GPU counts fit. That must change no decision: same
starts and nodes, same backfill flags, same skips, same reservations, bit for bit. The
reference below is the pre-optimisation kernel, kept as the oracle: it tries every candidate
start (now and every booking's end) on nodes, in plain Python (no numba: it is slow but
independent of the compiled pass's code paths, and the instances are small).

Instances are random clusters (shared, exclusive, GPU, partition requests; drained nodes that
still hold running jobs; nodes running more than they hold, where the counts bound nothing)
with random standing reservations, skip counts, variability flags and placement policies.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

import rush.core.schedule as core_schedule
from rush.core.config import CoreConfig
from rush.core.conservative import MIN_DURATION
from rush.core.conservative_nodes import conservative_nodes_pass
from rush.core.easy_nodes import NO_FIT, SKIPPED, _decide
from rush.core.node_pool import (
    PLACE_FIRST_FIT,
    PLACE_TOPOLOGY,
    PLACE_VARIABILITY,
    NodeView,
    Room,
    Slots,
    need_units,
)
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.core.scheduling_pass import order_queue
from rush.core.skip_with_limit import should_skip
from rush.core.snapshot import PendingJob, RunningJob, Snapshot

NOW = 50_000.0
INF = np.inf


# --- the pre-optimisation kernel, kept as the oracle (plain Python) -----------------------


def _oracle_room_over(nodes, t0, t1, book, room) -> None:
    pool = nodes.pool
    b_t0, b_t1, b_slot, nb = book
    for node in range(pool.count):
        room.cores[node] = pool.cores[node] if pool.usable[node] else 0
        room.gpus[node] = pool.gpus[node] if pool.usable[node] else 0
    for b in range(nb):
        if b_t0[b] < t1 and b_t1[b] > t0:
            for k in range(b_slot[2 * b], b_slot[2 * b + 1]):
                room.cores[nodes.placed.node[k]] -= nodes.placed.cores[k]
                room.gpus[nodes.placed.node[k]] -= nodes.placed.gpus[k]


def _oracle_pass(moment, config, jobs, state, queues, running, out, nodes) -> tuple[int, int, int]:
    now = moment.now
    on = moment.queued
    pool = nodes.pool
    m = pool.count
    order = queues.queue
    held = nodes.held
    entries = held.offset[-1] if held.offset.shape[0] > 0 else 0
    for k in range(on):
        j = order[k]
        entries += min(need_units(nodes.request, j, jobs.procs[j]), m) + m
    scratch_node = np.empty(entries + m + 1, dtype=np.int64)
    scratch_c = np.empty(entries + m + 1, dtype=np.int64)
    scratch_g = np.empty(entries + m + 1, dtype=np.int64)
    nb_cap = running.count + on + 1
    b_t0 = np.empty(nb_cap, dtype=np.float64)
    b_t1 = np.empty(nb_cap, dtype=np.float64)
    b_slot = np.empty(2 * nb_cap, dtype=np.int64)
    nb = 0
    used = 0
    for a in range(running.count):
        row = running.procs[a]
        b_t0[nb] = now
        b_t1[nb] = running.end[a] if running.end[a] > now else now + 1.0
        b_slot[2 * nb] = used
        for k in range(held.offset[row], held.offset[row + 1]):
            scratch_node[used] = held.node[k]
            scratch_c[used] = held.cores[k]
            scratch_g[used] = held.gpus[k]
            used += 1
        b_slot[2 * nb + 1] = used
        nb += 1
    booked = Slots(nodes.placed.offset, scratch_node, scratch_c, scratch_g)
    view = NodeView(nodes.pool, nodes.request, nodes.held, nodes.placement, booked, nodes.reserved)
    room = Room(np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64), np.zeros(m, dtype=np.bool_), False)
    held_at = []
    held_job = []
    for k in range(on):
        j = order[k]
        if state.reserved_at[j] < INF:
            held_job.append(j)
            held_at.append(state.reserved_at[j])
    by_time = np.argsort(np.array(held_at, dtype=np.float64), kind="mergesort")
    sequence = [held_job[k] for k in by_time] + [
        order[k] for k in range(on) if state.reserved_at[order[k]] == INF
    ]
    start_now = np.zeros(on, dtype=np.bool_)
    start_slot = np.full(2 * on, -1, dtype=np.int64)
    position = {int(order[k]): k for k in range(on)}
    nk = 0
    nr = 0
    for j in sequence:
        duration = max(jobs.est[j], MIN_DURATION)
        need = need_units(nodes.request, j, jobs.procs[j])
        times = np.sort(np.array([now] + [b_t1[b] for b in range(nb) if b_t1[b] > now]))
        placed_at = -1.0
        count = NO_FIT
        for t in times:
            _oracle_room_over(view, t, t + duration, (b_t0, b_t1, b_slot, nb), room)
            skip_now = t == now and should_skip(
                jobs.sensitive[j] and moment.variable_now, state.skips[j], config.skip_limit
            )
            count = _decide(view, j, need, room, skip_now, used)
            if count == SKIPPED:
                break
            if count >= 0:
                placed_at = t
                break
        if count == SKIPPED:
            out.skip[nk] = j
            nk += 1
            continue
        if count < 0:
            continue
        b_t0[nb] = placed_at
        b_t1[nb] = placed_at + duration
        b_slot[2 * nb] = used
        b_slot[2 * nb + 1] = used + count
        nb += 1
        if placed_at == now:
            start_now[position[j]] = True
            start_slot[2 * position[j]] = used
            start_slot[2 * position[j] + 1] = used + count
        else:
            out.reserved[nr] = j
            out.reserved_at[nr] = placed_at
            nr += 1
        used += count
    ns = 0
    waiting_ahead = False
    placed = nodes.placed
    placed.offset[0] = 0
    for k in range(on):
        if start_now[k]:
            out.start[ns] = order[k]
            out.backfilled[ns] = waiting_ahead
            e = placed.offset[ns]
            for x in range(start_slot[2 * k], start_slot[2 * k + 1]):
                placed.node[e] = scratch_node[x]
                placed.cores[e] = scratch_c[x]
                placed.gpus[e] = scratch_g[x]
                e += 1
            placed.offset[ns + 1] = e
            ns += 1
        else:
            waiting_ahead = True
    return ns, nk, nr


# --- random instances -----------------------------------------------------------------------


def _fresh(value):
    """A deep copy of the pass's inputs (named tuples of arrays): the pass writes to them."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_fresh(v) for v in value))
    return value


@contextmanager
def _captured_pass() -> Iterator[list[tuple]]:
    """Record (copies of) the arguments ``schedule()`` hands the compiled pass."""
    calls: list[tuple] = []
    original = core_schedule.scheduling_pass

    def recording(*args):
        calls.append(tuple(_fresh(a) for a in args))
        return original(*args)

    core_schedule.scheduling_pass = recording
    try:
        yield calls
    finally:
        core_schedule.scheduling_pass = original


def _request(rng, gpu_nodes: bool) -> Request:
    kind = rng.random()
    if kind < 0.3:
        return Request(0, int(rng.integers(1, 20)))
    if kind < 0.5:
        return Request(int(rng.integers(1, 4)), int(rng.integers(1, 5)), exclusive=True)
    if kind < 0.8 or not gpu_nodes:
        return Request(int(rng.integers(1, 4)), int(rng.integers(1, 5)), partition="batch")
    return Request(int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 3)), partition="gpu")


def _snapshot(rng) -> Snapshot:
    """A random cluster with running jobs (some on drained nodes, some overcommitting a node
    when ``rng`` says so) and pending jobs whose estimates collide often (equal ends)."""
    count = int(rng.integers(3, 12))
    shapes = [(int(rng.choice([4, 8])), int(rng.choice([0, 0, 2, 4]))) for _ in range(count)]
    overcommit = rng.random() < 0.15
    free_c = [c for c, _ in shapes]
    free_g = [g for _, g in shapes]
    running = []
    for job_id in range(1, int(rng.integers(1, 14))):
        i = int(rng.integers(0, count))
        top = free_c[i] + (2 if overcommit else 0)
        if top <= 0:
            continue
        c = int(rng.integers(1, top + 1))
        g = int(rng.integers(0, max(free_g[i], 0) + 1))
        free_c[i] -= c
        free_g[i] -= g
        start = NOW - float(rng.integers(0, 4000))
        estimate = float(rng.choice([300, 900, 3000, 6000]))  # some already past their estimate
        running.append(RunningJob(job_id, start, c, estimate, allocation=(Slot(i, c, g),)))
    nodes = tuple(
        Node(
            f"n{i}",
            c,
            g,
            state="drained" if rng.random() < 0.12 else "up",
            partitions=("batch",) if g == 0 else ("batch", "gpu"),
            leaf=i // 3,
            free_cores=max(free_c[i], 0),
            free_gpus=max(free_g[i], 0),
            quiet=bool(rng.random() < 0.6),
        )
        for i, (c, g) in enumerate(shapes)
    )
    gpu_nodes = any(g for _, g in shapes)
    pending = []
    for k in range(int(rng.integers(1, 30))):
        request = _request(rng, gpu_nodes)
        procs = request.cores_per_node if request.nodes == 0 else request.nodes * request.cores_per_node
        estimate = float(rng.choice([0.0, 60, 300, 600, 900, 3000, 6000]))
        pending.append(
            PendingJob(100 + k, NOW - float(rng.integers(0, 5000)), procs, estimate, request=request)
        )
    total = sum(c for c, _ in shapes)
    free = sum(max(c, 0) for c, n in zip(free_c, nodes, strict=True) if n.state == "up")
    return Snapshot(
        now=NOW,
        total_procs=total,
        free_procs=free,
        pending=tuple(pending),
        running=tuple(running),
        nodes=nodes,
    )


def _varied(args: tuple, rng) -> tuple:
    """The captured inputs with random standing reservations, skip counts, variability flags,
    skip limit and placement policy (what one live snapshot rarely has all at once)."""
    moment, config, jobs, state, queues, running, out, nodes = (_fresh(a) for a in args)
    n = len(jobs.procs)
    held = rng.random(n) < 0.4
    state.reserved_at[:] = np.where(held, NOW + rng.choice([0.0, 300.0, 900.0, 3000.0, 7000.0], n), INF)
    state.skips[:] = rng.integers(0, 3, n)
    jobs.sensitive[:] = rng.random(n) < 0.4
    config = config._replace(skip_limit=int(rng.integers(0, 3)))
    placement = int(rng.choice([PLACE_FIRST_FIT, PLACE_TOPOLOGY, PLACE_VARIABILITY]))
    nodes = nodes._replace(placement=placement)
    order_queue(moment, config, jobs, queues)
    return moment, config, jobs, state, queues, running, out, nodes


def _decisions(result: tuple[int, int, int], args: tuple) -> dict[str, object]:
    ns, nk, nr = result
    out, nodes = args[6], args[7]
    placed = nodes.placed
    e = placed.offset[ns]
    return {
        "counts": (ns, nk, nr),
        "start": out.start[:ns].tolist(),
        "backfilled": out.backfilled[:ns].tolist(),
        "skip": out.skip[:nk].tolist(),
        "reserved": out.reserved[:nr].tolist(),
        "reserved_at": out.reserved_at[:nr].tolist(),
        "offsets": placed.offset[: ns + 1].tolist(),
        "nodes": list(
            zip(placed.node[:e].tolist(), placed.cores[:e].tolist(), placed.gpus[:e].tolist(), strict=True)
        ),
    }


@pytest.mark.parametrize("block", range(6))
def test_conservative_on_nodes_decides_as_the_oracle(block: int) -> None:
    reserved = started = skipped = 0
    for seed in range(block * 150, (block + 1) * 150):
        rng = np.random.default_rng(seed)
        with _captured_pass() as calls:
            schedule(_snapshot(rng), CoreConfig.from_names("FCFS", "conservative", None))
        base = _varied(calls[0], rng)
        new_args = tuple(_fresh(a) for a in base)
        old_args = tuple(_fresh(a) for a in base)
        new = _decisions(conservative_nodes_pass(*new_args), new_args)
        old = _decisions(_oracle_pass(*old_args), old_args)
        assert new == old, seed
        started += new["counts"][0]
        skipped += new["counts"][1]
        reserved += new["counts"][2]
    # The instances exercise every outcome (not only empty queues).
    assert started > 75 and skipped > 8 and reserved > 300
