"""Conservative backfilling on nodes keeps each standing reservation's nodes between passes
(issue 31, item 2): a reservation still valid on its nodes never moves later, whatever the
reservations ahead of it do; one whose nodes fail it (a running job outlived its estimate, a
node went down) is re-placed. Passes are run on ``schedule()``'s own inputs, with the kept
node lists carried from one pass to the next as the simulator carries them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

import rush.core.schedule as core_schedule
from rush.core.config import CoreConfig
from rush.core.node_pool import new_slots
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.core.scheduling_pass import scheduling_pass
from rush.core.snapshot import PendingJob, RunningJob, Snapshot

NOW = 10_000.0
CONSERVATIVE = CoreConfig.from_names("FCFS", "conservative", None)


def _fresh(value):
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_fresh(v) for v in value))
    return value


def _pass_inputs(snapshot: Snapshot) -> tuple:
    """The arguments ``schedule()`` hands the compiled pass (copied), with a ``reserved``
    buffer large enough to keep every reservation's nodes."""
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
    # What each node has booked, as the simulator starts it (the pass keeps it up to date).
    memory = np.zeros((nodes.pool.count, 5))
    memory[:, 1:] = (-np.inf, 0.0, np.inf, -np.inf)
    memory[:, 2] = nodes.pool.usable
    state = args[3]._replace(node_memory=memory)
    return (*args[:3], state, *args[4:7], nodes._replace(reserved=new_slots(n + 1, n * nodes.pool.count + 1)))


def _run(args: tuple, carried: tuple | None = None) -> dict[int, tuple[float, list[int]]]:
    """One pass; ``carried`` is the previous pass's (state, reserved) to keep node lists
    from (None: reservations carry their times only). Returns job id -> (start or
    reservation time, nodes), and keeps (state, reserved) in ``args`` for the next pass."""
    moment, config, jobs, state, queues, running, out, nodes = args
    if carried is not None:
        old_state, old_reserved = carried
        state.reserved_row[:] = old_state.reserved_row
        state.node_memory[:] = old_state.node_memory
        nodes = nodes._replace(reserved=old_reserved)
    result = scheduling_pass(moment, config, jobs, state, queues, running, out, nodes)
    plan: dict[int, tuple[float, list[int]]] = {}
    placed = nodes.placed
    for k in range(result.started):
        j = int(out.start[k])
        plan[j] = (moment.now, sorted(placed.node[placed.offset[k] : placed.offset[k + 1]].tolist()))
    kept = nodes.reserved
    for r in range(result.reserved):
        j = int(out.reserved[r])
        row = state.reserved_row[j]
        where = sorted(kept.node[kept.offset[row] : kept.offset[row + 1]].tolist()) if row >= 0 else []
        plan[j] = (float(out.reserved_at[r]), where)
    return plan, (state, nodes.reserved)


def _machine() -> tuple[Node, ...]:
    # Partition p is nodes 0 and 2: a two-node job of p needs exactly them.
    return (
        Node("n0", 1, partitions=("batch", "p")),
        Node("n1", 1, partitions=("batch",)),
        Node("n2", 1, partitions=("batch", "p")),
    )


def _snapshot(now: float, running: tuple[RunningJob, ...], reserved: dict[int, float]) -> Snapshot:
    pending = (
        PendingJob(100, 0.0, 1, 100.0, request=Request(1, 1), reserved_at=reserved.get(100, np.inf)),
        PendingJob(
            101, 1.0, 2, 10.0, request=Request(2, 1, partition="p"), reserved_at=reserved.get(101, np.inf)
        ),
    )
    busy = sum(r.procs for r in running)
    return Snapshot(
        now=now, total_procs=3, free_procs=3 - busy, pending=pending, running=running, nodes=_machine()
    )


def _running(ends: dict[int, float]) -> tuple[RunningJob, ...]:
    # Job 1 + i runs on node i until ends[i] (its estimate).
    return tuple(RunningJob(1 + i, 0.0, 1, end, allocation=(Slot(i, 1),)) for i, end in sorted(ends.items()))


def test_a_reservation_does_not_move_later_when_one_ahead_moves_earlier_onto_its_nodes() -> None:
    first, carried = _run(
        _pass_inputs(_snapshot(NOW, _running({0: NOW + 100, 1: NOW + 40, 2: NOW + 50}), {}))
    )
    # Job 0 (id 100) waits for n1 at +40; job 1 (id 101, partition p) for n0 and n2 at +100.
    assert first == {0: (NOW + 40, [1]), 1: (NOW + 100, [0, 2])}
    # At +10 the job on n2 ended early: job 0 could start there now, but only by taking n2
    # over job 1's window.
    reserved = {100: NOW + 40, 101: NOW + 100}
    later = _snapshot(NOW + 10, _running({0: NOW + 100, 1: NOW + 40}), reserved)
    times_only, _ = _run(_pass_inputs(later))
    assert times_only[1][0] == NOW + 110  # with times alone (before issue 31), job 1 moves later
    kept, _ = _run(_pass_inputs(later), carried)
    assert kept == {0: (NOW + 40, [1]), 1: (NOW + 100, [0, 2])}


def test_a_reservation_still_moves_earlier_when_room_opens_before_it() -> None:
    _, carried = _run(_pass_inputs(_snapshot(NOW, _running({0: NOW + 100, 1: NOW + 40, 2: NOW + 50}), {})))
    # The job on n0 ended early too: job 1 can have n0 and n2 as soon as job 0 leaves them.
    reserved = {100: NOW + 40, 101: NOW + 100}
    later = _snapshot(NOW + 10, _running({1: NOW + 40}), reserved)
    plan, _ = _run(_pass_inputs(later), carried)
    assert plan[1][0] < NOW + 100
    assert plan[0][0] <= NOW + 40


def test_a_reservation_whose_node_went_down_is_replaced() -> None:
    _, carried = _run(_pass_inputs(_snapshot(NOW, _running({0: NOW + 100, 1: NOW + 40, 2: NOW + 50}), {})))
    reserved = {100: NOW + 40, 101: NOW + 100}
    later = _snapshot(NOW + 10, _running({0: NOW + 100, 1: NOW + 40, 2: NOW + 50}), reserved)
    nodes = list(later.nodes)
    nodes[1] = Node("n1", 1, partitions=("batch",), state="down")
    plan, _ = _run(_pass_inputs(Snapshot(**{**later.__dict__, "nodes": tuple(nodes)})), carried)
    # Job 0's node n1 is down: it is re-placed elsewhere, after job 1's window, which stands.
    assert plan[1] == (NOW + 100, [0, 2])
    assert 1 not in plan[0][1] and plan[0][0] >= NOW + 110


# --- random passes: kept reservations never move later, and nothing is overcommitted ------


def _random_snapshot(rng, now: float, running: tuple[RunningJob, ...]) -> Snapshot:
    nodes = tuple(
        Node(f"n{i}", 4, partitions=("batch", "p") if i % 2 else ("batch",), leaf=i // 3) for i in range(8)
    )
    pending = []
    for k in range(14):
        kind = k % 4
        if kind == 0:
            request = Request(0, int(rng.integers(1, 9)))
        elif kind == 1:
            request = Request(int(rng.integers(1, 4)), 4, exclusive=True)
        elif kind == 2:
            request = Request(int(rng.integers(1, 3)), int(rng.integers(1, 4)), partition="p")
        else:
            request = Request(int(rng.integers(1, 5)), int(rng.integers(1, 3)))
        procs = request.cores_per_node if request.nodes == 0 else request.nodes * request.cores_per_node
        estimate = float(rng.choice([60, 300, 900, 3000]))
        pending.append(PendingJob(100 + k, float(k), procs, estimate, request=request))
    busy = sum(r.procs for r in running)
    return Snapshot(
        now=now, total_procs=32, free_procs=32 - busy, pending=tuple(pending), running=running, nodes=nodes
    )


def _no_overcommit(snapshot: Snapshot, plan: dict[int, tuple[float, list[int]]], args: tuple) -> None:
    """At every instant no node holds more than its cores (running jobs and the plan)."""
    jobs, nodes = args[2], args[7]
    request = nodes.request
    windows = [
        (snapshot.now, r.start + r.requested_time, [(s.node, s.cores) for s in r.allocation])
        for r in snapshot.running
    ]
    for j, (at, where) in plan.items():
        if request.nodes[j] == 0:
            continue  # cores anywhere: the kernel's counts per node are not in the plan's node list
        per = 4 if request.exclusive[j] else int(request.cores[j])
        windows.append((at, at + max(float(jobs.est[j]), 1e-6), [(w, per) for w in where]))
    for t, _, _ in windows:
        load = np.zeros(8, dtype=np.int64)
        for t0, t1, slots in windows:
            if t0 <= t < t1:
                for node, c in slots:
                    load[node] += c
        assert (load <= 4).all(), (t, load)


def test_over_random_passes_kept_reservations_never_move_later() -> None:
    moved_earlier = checked = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        ends = {i: NOW + float(rng.choice([200, 600, 1200, 4000])) for i in range(8) if rng.random() < 0.7}
        running = tuple(RunningJob(1 + i, 0.0, 4, end, allocation=(Slot(i, 4),)) for i, end in ends.items())
        snapshot = _random_snapshot(rng, NOW, running)
        args = _pass_inputs(snapshot)
        plan, carried = _run(args)
        _no_overcommit(snapshot, plan, args)
        # Next pass: some running jobs ended early, none outlived its estimate.
        now = NOW + 30.0  # before any booking ends: no reservation is overdue
        survivors = tuple(r for r in running if rng.random() < 0.6)
        reserved = {100 + j: at for j, (at, _) in plan.items() if at > NOW}
        started = {j for j, (at, _) in plan.items() if at == NOW}
        # Jobs started in the first pass run on their nodes (those on cores anywhere, or
        # already past their estimate, ended: room only opens).
        running2 = list(survivors)
        for j in started:
            est = float(args[2].est[j])
            per = 4 if args[7].request.exclusive[j] else int(args[7].request.cores[j])
            if args[7].request.nodes[j] == 0 or NOW + est <= now:
                continue
            running2.append(
                RunningJob(
                    100 + j,
                    NOW,
                    per * len(plan[j][1]),
                    est,
                    allocation=tuple(Slot(w, per) for w in plan[j][1]),
                )
            )
        pending_left = Snapshot(
            now=now,
            total_procs=32,
            free_procs=32 - sum(r.procs for r in running2),
            pending=tuple(
                replace(p, reserved_at=reserved.get(p.job_id, np.inf))
                for p in snapshot.pending
                if p.job_id - 100 not in started
            ),
            running=tuple(running2),
            nodes=snapshot.nodes,
        )
        args2 = _pass_inputs(pending_left)
        ids = [p.job_id for p in pending_left.pending]
        # Rows of the first pass's kept lists are by job index; the second pass's indices differ.
        old_state, old_reserved = carried
        state2 = args2[3]
        for new_index, job_id in enumerate(ids):
            state2.reserved_row[new_index] = old_state.reserved_row[job_id - 100]
        state2.node_memory[:] = old_state.node_memory
        # The same pass not knowing what was freed since searches every kept reservation from
        # now: knowing it must change nothing.
        blind = tuple(_fresh(a) for a in args2)
        blind_state = blind[3]._replace(node_memory=np.zeros((0, 5)))
        blind_plan, _ = _run(
            (*blind[:3], blind_state, *blind[4:7], _fresh(blind[7])._replace(reserved=_fresh(old_reserved)))
        )
        plan2, _ = _run(args2, (state2, old_reserved))
        assert plan2 == blind_plan, seed
        _no_overcommit(pending_left, plan2, args2)
        for new_index, job_id in enumerate(ids):
            before = reserved.get(job_id)
            if before is None or old_state.reserved_row[job_id - 100] < 0:
                continue
            checked += 1
            assert new_index in plan2 and plan2[new_index][0] <= max(before, now), (seed, job_id)
            moved_earlier += plan2[new_index][0] < max(before, now)
    assert checked > 100 and moved_earlier > 10
