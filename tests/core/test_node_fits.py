"""The threshold form's per-node earliest fit and the conservative pass's jumps (issue 31,
round 12): :func:`rush.core.node_fits.earliest_fit` against trying every time by brute force,
and the pass on nodes with a jump at every candidate that does not fit against the pass that
never jumps (and its default), over first passes and next passes with kept reservations."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np
import pytest

import rush.core.schedule as core_schedule
from rush.core.config import CoreConfig
from rush.core.conservative_nodes import conservative_nodes_jumping
from rush.core.node_fits import earliest_fit, fit_pool, jump_to, rebuild
from rush.core.node_pool import new_slots
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, Snapshot

INF = np.inf
NOW = 20_000.0
CONSERVATIVE = CoreConfig.from_names("FCFS", "conservative", None)


# --- one node's earliest fit against brute force ------------------------------------------


def _bookings(rng, m: int, count: int) -> tuple:
    """Random bookings (on or off) as the pass's per-node chains, ends often equal."""
    b_t0 = np.empty(count)
    b_t1 = np.empty(count)
    on = rng.random(count) < 0.85
    grid = np.array([0.0, 10.0, 25.0, 40.0, 60.0, 100.0])
    node, take_c, take_g, of_booking = [], [], [], []
    for b in range(count):
        b_t0[b] = float(rng.choice(grid))
        b_t1[b] = b_t0[b] + float(rng.choice([1e-6, 5.0, 15.0, 30.0, 60.0]))
        for n in rng.choice(m, size=int(rng.integers(1, m + 1)), replace=False):
            node.append(int(n))
            take_c.append(int(rng.integers(0, 4)))
            take_g.append(int(rng.integers(0, 2)))
            of_booking.append(b)
    head = np.full(m, -1, dtype=np.int64)
    following = np.empty(len(node), dtype=np.int64)
    for e, n in enumerate(node):
        following[e] = head[n]
        head[n] = e
    chains = (head, following, np.array(of_booking), np.array(take_c), np.array(take_g))
    return chains, (on, b_t0, b_t1), np.array(node)


def _load(chains, bookings, nodes, node: int, window: tuple[float, float]) -> tuple[int, int]:
    """The node's load over the window under the pass's rule, from every entry."""
    _, _, of_booking, take_c, take_g = chains
    on, b_t0, b_t1 = bookings
    c = g = 0
    for e in range(len(nodes)):
        b = of_booking[e]
        if nodes[e] == node and on[b] and b_t0[b] < window[1] and b_t1[b] > window[0]:
            c += take_c[e]
            g += take_g[e]
    return c, g


def _brute_fit(chains, bookings, nodes, node: int, t: float, d: float, threshold) -> float:
    on, _, b_t1 = bookings
    times = sorted({t} | {float(x) for x in b_t1[on] if x > t})
    for x in times:
        c, g = _load(chains, bookings, nodes, node, (x, x + d))
        if c <= threshold[0] and g <= threshold[1]:
            return x
    return INF


@pytest.mark.parametrize("seed", range(40))
def test_earliest_fit_is_the_first_time_a_node_fits(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = 4
    chains, bookings, nodes = _bookings(rng, m, int(rng.integers(1, 25)))
    pool = fit_pool(m, int(rng.integers(1, 3)) * (len(nodes) + m + 1))  # small pools start over
    found = 0
    for _ in range(60):
        node = int(rng.integers(0, m))
        t = float(rng.choice([0.0, 3.0, 10.0, 25.0, 39.0, 70.0]))
        d = float(rng.choice([1e-6, 5.0, 15.0, 40.0]))
        threshold = (int(rng.integers(-1, 7)), int(rng.integers(0, 3)))
        if pool.stale[node]:
            rebuild(pool, node, chains, bookings)
        got = earliest_fit(pool, node, t, d, threshold)
        assert got == _brute_fit(chains, bookings, nodes, node, t, d, threshold), (
            seed,
            node,
            t,
            d,
            threshold,
        )
        found += got < INF
        # Switch a booking on or off now and then: its nodes go stale.
        if rng.random() < 0.3:
            b = int(rng.integers(0, len(bookings[0])))
            bookings[0][b] = not bookings[0][b]
            pool.stale[nodes[chains[2] == b]] = True
    assert found > 0


@pytest.mark.parametrize("seed", range(20))
def test_jump_to_is_the_need_th_earliest_fit_over_eligible_nodes(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    m = 6
    chains, bookings, nodes = _bookings(rng, m, int(rng.integers(1, 20)))
    cap_c = rng.choice([4, 8], m).astype(np.int64)
    cap_g = rng.choice([0, 2], m).astype(np.int64)
    for _ in range(20):
        eligible = rng.random(m) < 0.8
        exclusive = int(rng.random() < 0.3)
        c_need, g_need = int(rng.integers(1, 5)), int(rng.integers(0, 2))
        need = int(rng.integers(1, 4))
        t = float(rng.choice([0.0, 10.0, 30.0]))
        d = float(rng.choice([5.0, 20.0]))
        pool = fit_pool(m, len(nodes) + m + 1)
        got = jump_to(
            pool, t, d, (need, exclusive, c_need, g_need), need, eligible, (cap_c, cap_g), chains, bookings
        )
        fits = []
        for n in range(m):
            if not eligible[n]:
                continue
            threshold = (0, 0) if exclusive else (int(cap_c[n]) - c_need, int(cap_g[n]) - g_need)
            if threshold[0] < 0 or threshold[1] < 0:
                continue
            fits.append(_brute_fit(chains, bookings, nodes, n, t, d, threshold))
        fits = sorted(f for f in fits if f < INF)
        assert got == (fits[need - 1] if len(fits) >= need else INF), seed


# --- the pass with jumps decides as the pass without -------------------------------------


def _fresh(value):
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_fresh(v) for v in value))
    return value


def _pass_inputs(snapshot: Snapshot) -> tuple:
    """The arguments ``schedule()`` hands the compiled pass, with a node memory and a
    ``reserved`` buffer large enough to keep every reservation's nodes."""
    calls: list[tuple] = []
    original = core_schedule.scheduling_pass

    def recording(*args):
        calls.append(tuple(_fresh(a) for a in args))
        return original(*args)

    core_schedule.scheduling_pass = recording
    try:
        schedule(snapshot, CONSERVATIVE, explain_priorities=False, estimate_starts_too=False)
    finally:
        core_schedule.scheduling_pass = original
    args = calls[0]
    nodes = args[7]
    n = len(args[2].procs)
    memory = np.zeros((nodes.pool.count, 5))
    memory[:, 1:] = (-np.inf, 0.0, np.inf, -np.inf)
    memory[:, 2] = nodes.pool.usable
    state = args[3]._replace(node_memory=memory)
    reserved = new_slots(n + 1, n * nodes.pool.count + 1)
    return (*args[:3], state, *args[4:7], nodes._replace(reserved=reserved))


def _machine(rng) -> tuple[Node, ...]:
    nodes = []
    for i in range(int(rng.integers(4, 14))):
        g = int(rng.choice([0, 0, 2]))
        state = "drained" if rng.random() < 0.08 else "up"
        partitions = ("batch", "gpu") if g else ("batch",)
        nodes.append(
            Node(f"n{i}", int(rng.choice([4, 8])), g, state=state, partitions=partitions, leaf=i // 3)
        )
    return tuple(nodes)


def _request(rng) -> Request:
    kind = rng.random()
    if kind < 0.15:
        return Request(0, int(rng.integers(1, 12)))
    if kind < 0.4:
        return Request(int(rng.integers(1, 4)), 4, exclusive=True)
    if kind < 0.85:
        return Request(int(rng.integers(1, 4)), int(rng.integers(1, 5)))
    return Request(int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(0, 2)), partition="gpu")


def _snapshot(rng, now: float, nodes, running, reserved: dict[int, float], jobs: list) -> Snapshot:
    pending = tuple(
        PendingJob(job_id, submit, procs, est, request=request, reserved_at=reserved.get(job_id, INF))
        for job_id, submit, procs, est, request in jobs
    )
    busy_on = [0] * len(nodes)
    for r in running:
        for slot in r.allocation:
            busy_on[slot.node] += slot.cores
    nodes = tuple(replace(n, free_cores=n.cores - busy_on[i]) for i, n in enumerate(nodes))
    total = sum(n.cores for n in nodes)
    busy = sum(r.procs for r in running)
    return Snapshot(
        now=now,
        total_procs=total,
        free_procs=max(total - busy, 0),
        pending=pending,
        running=running,
        nodes=nodes,
    )


def _running(rng, nodes) -> tuple[RunningJob, ...]:
    running = []
    for i, node in enumerate(nodes):
        if node.state != "up" or rng.random() < 0.3:
            continue
        c = int(rng.integers(1, node.cores + 1))
        end = float(rng.choice([100, 400, 900, 3000, 8000]))
        running.append(RunningJob(1 + i, NOW - 50.0, c, end + 50.0, allocation=(Slot(i, c),)))
    return tuple(running)


def _digest(args: tuple, result) -> str:
    state, out, nodes = args[3], args[6], args[7]
    ns, nk, nr = result
    placed, kept = nodes.placed, nodes.reserved
    h = hashlib.sha256()
    for array in (
        out.start[:ns],
        out.backfilled[:ns],
        placed.offset[: ns + 1],
        placed.node[: placed.offset[ns]],
        placed.cores[: placed.offset[ns]],
        out.skip[:nk],
        out.reserved[:nr],
        out.reserved_at[:nr],
        kept.offset[: nr + 1],
        kept.node[: kept.offset[nr]],
        kept.cores[: kept.offset[nr]],
        kept.gpus[: kept.offset[nr]],
        state.reserved_row,
        state.node_memory,
    ):
        h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


def _run(args: tuple, jump_after: int) -> tuple[str, tuple]:
    fresh = tuple(_fresh(a) for a in args)
    result = conservative_nodes_jumping(*fresh, jump_after)
    return _digest(fresh, result), fresh


@pytest.mark.parametrize("block", range(4))
def test_the_pass_decides_the_same_whenever_it_jumps(block: int) -> None:
    """A first pass, then the next one 30 s later with some running jobs ended, the first
    pass's starts running and its reservations kept on their nodes (the kept path)."""
    reserved_total = 0
    differ = []  # seeds deciding differently (all listed, to count them)
    for seed in range(block * 25, (block + 1) * 25):
        rng = np.random.default_rng(seed)
        nodes = _machine(rng)
        running = _running(rng, nodes)
        jobs = []
        for k in range(int(rng.integers(5, 45))):
            request = _request(rng)
            procs = request.cores_per_node if request.nodes == 0 else request.nodes * request.cores_per_node
            jobs.append((100 + k, float(k), procs, float(rng.choice([10, 60, 300, 900, 3000])), request))
        args = _pass_inputs(_snapshot(rng, NOW, nodes, running, {}, jobs))
        digests = {jump: _run(args, jump) for jump in (-1, 0, 1, 8 * len(nodes))}
        if len({d for d, _ in digests.values()}) != 1:
            differ.append(seed)
            continue
        first = digests[-1][1]
        out, state = first[6], first[3]
        # Next pass: the kept reservations on their nodes, some running jobs ended early.
        ids = [job[0] for job in jobs]
        rows = {ids[j]: int(state.reserved_row[j]) for j in range(len(ids)) if state.reserved_row[j] >= 0}
        reserved = {job_id: float(out.reserved_at[row]) for job_id, row in rows.items()}
        left = [job for job in jobs if job[0] in rows]
        reserved_total += len(rows)
        survivors = tuple(r for r in running if rng.random() < 0.6)
        args2 = _pass_inputs(_snapshot(rng, NOW + 30.0, nodes, survivors, reserved, left))
        state2 = args2[3]
        for new_index, job in enumerate(left):
            state2.reserved_row[new_index] = rows[job[0]]
        state2.node_memory[:] = state.node_memory
        args2 = (*args2[:7], args2[7]._replace(reserved=_fresh(first[7].reserved)))
        digests2 = {jump: _run(args2, jump)[0] for jump in (-1, 0, 1, 8 * len(nodes))}
        if len(set(digests2.values())) != 1:
            differ.append(seed)
    assert differ == []
    assert reserved_total > 100
