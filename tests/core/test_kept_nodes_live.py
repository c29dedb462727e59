"""Live conservative backfilling on nodes keeps each standing reservation's nodes between
``schedule()`` calls (issue 31, item 2; rush.core.kept_nodes): the shell gives the last pass's
``Decisions.kept`` back as ``Snapshot.kept``. A reservation then no longer moves later when the
free nodes fragment, and knowing what was freed since (found by comparing the record with the
snapshot) decides exactly as searching every kept reservation from now, whatever the shell and
the RJMS did between the passes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import rush.core.schedule as core_schedule
from rush.core.config import CoreConfig
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.core.snapshot import Decisions, PendingJob, RunningJob, Snapshot
from tests.script_module import load_script

# The live state's builders, shared with the warm-pass benchmarks (benchmarks/bench_scale.py).
live = load_script(Path(__file__).resolve().parents[2] / "benchmarks" / "live_next_pass.py", "live_next_pass")

NOW = 10_000.0
CONSERVATIVE = CoreConfig.from_names("FCFS", "conservative", None)


def _plan(decisions: Decisions) -> dict[int, tuple[float, tuple]]:
    """Job id -> (start or reservation time, its nodes with cores and GPUs)."""
    plan = {
        d.job_id: (d.value, d.allocation) for d in decisions.decisions if d.action in ("start", "backfill")
    }
    kept = decisions.kept
    for r, job_id in enumerate(kept.reserved_job.tolist()):
        lo, hi = kept.reserved.offset[r], kept.reserved.offset[r + 1]
        where = tuple(
            zip(
                kept.reserved.node[lo:hi].tolist(),
                kept.reserved.cores[lo:hi].tolist(),
                kept.reserved.gpus[lo:hi].tolist(),
                strict=True,
            )
        )
        plan[job_id] = (decisions.reserved_at[job_id], tuple(sorted(where)))
    assert set(decisions.reserved_at) == set(kept.reserved_job.tolist())
    return plan


def _three_nodes() -> tuple[Node, ...]:
    # Partition p is nodes 0 and 2: a two-node job of p needs exactly them.
    return (
        Node("n0", 1, partitions=("batch", "p")),
        Node("n1", 1, partitions=("batch",)),
        Node("n2", 1, partitions=("batch", "p")),
    )


def _queue(now: float, ends: dict[int, float], reserved: dict[int, float]) -> Snapshot:
    running = tuple(
        RunningJob(1 + i, 0.0, 1, end, allocation=(Slot(i, 1),)) for i, end in sorted(ends.items())
    )
    pending = (
        PendingJob(100, 0.0, 1, 100.0, request=Request(1, 1), reserved_at=reserved.get(100, np.inf)),
        PendingJob(
            101, 1.0, 2, 10.0, request=Request(2, 1, partition="p"), reserved_at=reserved.get(101, np.inf)
        ),
    )
    return Snapshot(
        now=now,
        total_procs=3,
        free_procs=3 - len(running),
        pending=pending,
        running=running,
        nodes=_three_nodes(),
    )


def test_a_reservation_no_longer_moves_later_when_free_nodes_fragment() -> None:
    first = schedule(_queue(NOW, {0: NOW + 100, 1: NOW + 40, 2: NOW + 50}, {}), CONSERVATIVE)
    # Job 100 waits for n1 at +40; job 101 (partition p) for n0 and n2 at +100.
    assert first.reserved_at == {100: NOW + 40, 101: NOW + 100}
    # At +10 the job on n2 ends early: n2 is free but alone, job 100 could take it now only
    # over job 101's window.
    later = _queue(NOW + 10, {0: NOW + 100, 1: NOW + 40}, first.reserved_at)
    times_only = schedule(later, CONSERVATIVE)
    assert times_only.reserved_at[101] == NOW + 110  # before issue 31: it moved later
    kept = schedule(replace(later, kept=first.kept), CONSERVATIVE)
    assert kept.reserved_at == {100: NOW + 40, 101: NOW + 100}
    assert _plan(kept)[101][1] == ((0, 1, 0), (2, 1, 0))
    assert not kept.job_ids("start") and not kept.job_ids("backfill")


def test_a_record_of_another_machine_is_not_used() -> None:
    first = schedule(_queue(NOW, {0: NOW + 100, 1: NOW + 40, 2: NOW + 50}, {}), CONSERVATIVE)
    later = _queue(NOW + 10, {0: NOW + 100, 1: NOW + 40}, first.reserved_at)
    renamed = replace(later, nodes=tuple(replace(n, name=f"x{n.name}") for n in later.nodes), kept=first.kept)
    assert schedule(renamed, CONSERVATIVE).reserved_at == schedule(later, CONSERVATIVE).reserved_at


# --- random live passes: the record's freed room decides as searching from now -------------


def _machine(rng) -> tuple[Node, ...]:
    return tuple(
        Node(
            f"n{i}",
            4,
            gpus=2 if i % 4 == 3 else 0,
            partitions=("batch", "p") if i % 2 else ("batch",),
            leaf=i // 3,
        )
        for i in range(10)
    )


def _request(rng, k: int) -> Request:
    kind = k % 5
    if kind == 0:
        return Request(0, int(rng.integers(1, 9)))
    if kind == 1:
        return Request(int(rng.integers(1, 4)), 4, exclusive=True)
    if kind == 2:
        return Request(int(rng.integers(1, 3)), int(rng.integers(1, 4)), partition="p")
    if kind == 3:
        return Request(1, 1, gpus_per_node=int(rng.integers(1, 3)))
    return Request(int(rng.integers(1, 5)), int(rng.integers(1, 3)))


def _pending(rng, first_id: int, count: int, submit: float) -> list[PendingJob]:
    jobs = []
    for k in range(count):
        request = _request(rng, int(rng.integers(0, 5)))
        procs = request.cores_per_node if request.nodes == 0 else request.nodes * request.cores_per_node
        limit = float(rng.choice([60, 300, 900, 3000]))
        estimate = limit * float(rng.choice([0.3, 0.7, 1.0]))
        jobs.append(PendingJob(first_id + k, submit + k, procs, limit, estimate=estimate, request=request))
    return jobs


def _initial(rng) -> Snapshot:
    nodes = _machine(rng)
    running = []
    for i in range(len(nodes)):
        if rng.random() < 0.7:
            cores = int(rng.integers(1, 5))
            running.append(
                RunningJob(
                    1 + i,
                    NOW - 100,
                    cores,
                    float(rng.choice([200, 600, 1200, 4000])),
                    allocation=(Slot(i, cores),),
                )
            )
    return Snapshot(
        now=NOW,
        total_procs=40,
        free_procs=40 - sum(r.procs for r in running),
        pending=tuple(_pending(rng, 100, 16, 0.0)),
        running=tuple(running),
        nodes=nodes,
    )


def _next(rng, snapshot: Snapshot, decided: Decisions, frees_only: bool) -> Snapshot:
    """The next snapshot, 30 s on: the core's starts applied (or not, or on other nodes), some
    running jobs ended early or got shorter or longer estimates, pending jobs cancelled or
    re-estimated or made infeasible, new arrivals, a node down or up; with ``frees_only`` only changes that free
    room (every start applied where the core put it), one second on."""
    now = snapshot.now + (1.0 if frees_only else 30.0)
    started = {d.job_id: d for d in decided.decisions if d.action in ("start", "backfill")}
    index = live.node_index(snapshot)
    running = []
    for r in snapshot.running:
        roll = rng.random()
        if roll < 0.25 or (frees_only and r.start + (r.estimate or r.requested_time) <= now + 1.0):
            continue  # ended early, or was cancelled (with frees_only none outlives its estimate)
        if roll < 0.4:
            old = r.estimate or r.requested_time
            r = replace(r, estimate=min(old, max(now - r.start + 5.0, 0.5 * old)))
        elif roll < 0.5 and not frees_only:
            r = replace(
                r, estimate=(r.estimate or r.requested_time) * 2.0, requested_time=r.requested_time * 2.0
            )
        running.append(r)
    busy = np.zeros(len(snapshot.nodes), dtype=np.int64)
    gpus = np.zeros(len(snapshot.nodes), dtype=np.int64)
    for r in running:
        for s in r.allocation:
            busy[s.node] += s.cores
            gpus[s.node] += s.gpus
    pending = []
    for p in snapshot.pending:
        d = started.get(p.job_id)
        if d is not None and (frees_only or rng.random() < 0.8):
            where = live.started_where(index, d)
            if not frees_only and rng.random() < 0.3:  # the RJMS put it elsewhere, where it fits
                free = [i for i in range(len(snapshot.nodes)) if busy[i] == 0 and gpus[i] == 0]
                if len(free) >= len(where):
                    picked = rng.choice(free, size=len(where), replace=False).tolist()
                    where = [(int(i), c, g) for i, (_, c, g) in zip(picked, where, strict=True)]
            if frees_only and snapshot.now + p.estimate <= now + 1.0:
                continue  # started and already ended
            if all(busy[i] + c <= 4 and gpus[i] + g <= snapshot.nodes[i].gpus for i, c, g in where):
                for i, c, g in where:
                    busy[i] += c
                    gpus[i] += g
                running.append(live.started_job(p, snapshot.now, where))
                continue
        if d is not None:
            pending.append(p)  # not started (yet): no reservation
            continue
        roll = rng.random()
        if roll < 0.1:
            continue  # cancelled
        if roll < 0.2:
            p = replace(p, estimate=p.estimate * 0.5)
        elif roll < 0.25 and not frees_only:
            p = replace(p, estimate=min(p.estimate * 2.0, p.requested_time))
        elif roll < 0.3 and not frees_only:  # now asks for more nodes than there are: left out
            p = replace(p, request=Request(len(snapshot.nodes) + 1, 1), procs=len(snapshot.nodes) + 1)
        pending.append(live.with_reservation(p, decided))
    pending += _pending(rng, 1000 + int(rng.integers(0, 10**6)) * 100, int(rng.integers(0, 4)), now)
    nodes = list(snapshot.nodes)
    if rng.random() < 0.3:
        i = int(rng.integers(0, len(nodes)))
        if frees_only:
            nodes[i] = replace(nodes[i], state="up")
        else:
            nodes[i] = replace(nodes[i], state="down" if nodes[i].state == "up" else "up")
    return Snapshot(
        now=now,
        total_procs=snapshot.total_procs,
        free_procs=max(snapshot.total_procs - int(busy.sum()), 0),
        pending=tuple(pending),
        running=tuple(running),
        nodes=tuple(nodes),
        kept=decided.kept,
    )


def _blind(monkeypatch) -> None:
    """The same passes not knowing what was freed since (every node counts as freed)."""
    original = core_schedule.kept_state

    def blind(kept, p, state):
        state, reserved = original(kept, p, state)
        return state._replace(node_memory=np.zeros((0, 5))), reserved

    monkeypatch.setattr(core_schedule, "kept_state", blind)


@pytest.mark.parametrize("frees_only", [False, True])
def test_over_random_live_passes_the_record_decides_as_searching_from_now(monkeypatch, frees_only) -> None:
    searched = moved_earlier = 0
    for seed in range(30):
        rng = np.random.default_rng(seed)
        snapshot = _initial(rng)
        decided = schedule(snapshot, CONSERVATIVE, explain_priorities=False, estimate_starts_too=False)
        for _ in range(4):
            snapshot = _next(rng, snapshot, decided, frees_only)
            with monkeypatch.context() as patch:
                _blind(patch)
                blind = schedule(snapshot, CONSERVATIVE, explain_priorities=False, estimate_starts_too=False)
            informed = schedule(snapshot, CONSERVATIVE, explain_priorities=False, estimate_starts_too=False)
            plan = _plan(informed)
            assert plan == _plan(blind), seed
            before = _plan(decided)
            # A reservation overdue (its time passed between passes) stands from now, longer
            # than planned: it may push others later, and that is no fragmentation.
            overdue = any(p.reserved_at <= snapshot.now for p in snapshot.pending)
            for p in snapshot.pending:
                if p.reserved_at < np.inf and p.job_id in before and p.job_id in plan:
                    searched += 1
                    moved_earlier += plan[p.job_id][0] < p.reserved_at
                    if frees_only and not overdue:  # room only opened: none moves later
                        assert plan[p.job_id][0] <= p.reserved_at, (seed, p.job_id)
            decided = informed
    assert searched > 100 and moved_earlier > 0  # the cases exercise kept and moved reservations


def test_one_second_on_behind_overdue_jobs_the_record_decides_as_searching_from_now(monkeypatch) -> None:
    # The live cycle one second later (benchmarks/bench_scale.py --step 1): running jobs past
    # their estimates are booked to one second from now at every pass, so the reservations
    # placed right behind them fail on their nodes each second and free their windows; the
    # cascade that follows (others moving earlier into that room) is what makes this cycle
    # cost as much as a first pass. Over several such cycles, with arrivals and early ends,
    # the record's freed room decides exactly as searching every kept reservation from now.
    failed = moved_earlier = 0
    for seed in range(30):
        rng = np.random.default_rng(500 + seed)
        snapshot = _initial(rng)
        overdue = tuple(
            replace(r, start=snapshot.now - r.requested_time - 5.0) if rng.random() < 0.5 else r
            for r in snapshot.running
        )
        snapshot = replace(snapshot, running=overdue)
        decided = schedule(snapshot, CONSERVATIVE, explain_priorities=False, estimate_starts_too=False)
        for _ in range(5):
            snapshot = live.next_snapshot(snapshot, decided, int(rng.integers(0, 2)), kept=True, step=1.0)
            arrivals = _pending(
                rng, 1000 + int(rng.integers(0, 10**6)) * 100, int(rng.integers(0, 3)), snapshot.now
            )
            snapshot = replace(snapshot, pending=(*snapshot.pending, *arrivals))
            with monkeypatch.context() as patch:
                _blind(patch)
                blind = schedule(snapshot, CONSERVATIVE, explain_priorities=False, estimate_starts_too=False)
            informed = schedule(snapshot, CONSERVATIVE, explain_priorities=False, estimate_starts_too=False)
            plan = _plan(informed)
            assert plan == _plan(blind), seed
            for p in snapshot.pending:
                if p.reserved_at < np.inf and p.job_id in plan:
                    failed += plan[p.job_id][0] > max(p.reserved_at, snapshot.now)
                    moved_earlier += plan[p.job_id][0] < p.reserved_at
            decided = informed
    assert failed > 0 and moved_earlier > 0  # reservations failed behind overdue jobs, others moved up
