"""A bounded pass (``CoreConfig.max_jobs_considered``, rush.core.pass_budget) against the full
pass on random queues, on processor counts and on nodes, for EASY (with and without a backfill
policy of its own), conservative (with standing reservations) and list scheduling.

The property tested: **every decision of the bounded pass is the full pass's decision** — each
job it starts, the full pass starts too, on the same nodes; each reservation it makes (EASY's
head, conservative's) is the full pass's, at the same time; each job it skips, the full pass
skips. Why this one: the issue's rule is that a cut-off may only leave jobs unconsidered, never
start a job the full pass would not start ahead of an older reservation. The full pass respects
every reservation it makes, so a bounded pass whose starts are among the full pass's, with the
same reservations, respects them too; and a start the full pass would not make is exactly what
the rule forbids. The weaker "no reservation of the full pass is overlapped" would accept a
bounded pass that starts other jobs than the full pass in the room the cut-off left, which the
rule does not allow. Beside it: the jobs left out are the lowest-priority ones without a standing
reservation, reported in ``Decisions.unconsidered`` with the estimate basis "not considered";
priorities are published for every job.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.pass_budget import BASIS_UNCONSIDERED
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.core.snapshot import Decisions, PendingJob, RunningJob, Snapshot
from rush.errors import PolicyError, RushError
from tests.script_module import load_script

# The live next state (the core's starts running where it put them, reservations given back
# with their nodes, Snapshot.kept), as the warm-pass benchmarks build it.
live = load_script(Path(__file__).resolve().parents[2] / "benchmarks" / "live_next_pass.py", "live_next_pass")

NOW = 50_000.0
STARTS = ("start", "backfill")


def random_snapshot(seed: int, on_nodes: bool) -> Snapshot:
    rng = np.random.default_rng(seed)
    count = int(rng.integers(3, 10))
    nodes = tuple(Node(f"n{i}", 8, 2 if i % 4 == 3 else 0, leaf=i // 4) for i in range(count))
    free = [8] * count
    running = []
    for job_id in range(1, int(rng.integers(1, 2 * count))):
        i = int(rng.integers(0, count))
        cores = min(int(rng.integers(1, 9)), free[i])
        if cores == 0:
            continue
        free[i] -= cores
        limit = float(rng.choice([600, 1800, 3600, 7200]))
        start = NOW - float(rng.integers(0, 500))
        allocation = (Slot(i, cores),) if on_nodes else ()
        running.append(RunningJob(job_id, start, cores, limit, allocation=allocation))
    pending = []
    for k in range(int(rng.integers(2, 40))):
        if on_nodes and rng.random() < 0.6:
            request = Request(
                int(rng.integers(1, 4)), int(rng.integers(1, 9)), exclusive=bool(rng.random() < 0.2)
            )
            procs = request.nodes * (8 if request.exclusive else request.cores_per_node)
        else:
            request = None
            procs = int(rng.integers(1, 8 * count // 2 + 2))
        pending.append(
            PendingJob(
                100 + k,
                NOW - float(rng.integers(0, 20_000)),
                procs,
                float(rng.choice([300, 900, 3600, 14_400])),
                variable=bool(rng.random() < 0.2),
                request=request,
            )
        )
    if on_nodes:
        nodes = tuple(dataclasses.replace(n, free_cores=free[i]) for i, n in enumerate(nodes))
    else:
        nodes = ()
    return Snapshot(NOW, 8 * count, sum(free), tuple(pending), tuple(running), nodes=nodes)


def configs(rng: np.random.Generator) -> list[CoreConfig]:
    policy = str(rng.choice(["FCFS", "SPF", "WFP3", "LQF"]))
    skip_limit = int(rng.integers(0, 3))
    return [
        CoreConfig.from_names(policy, "easy", skip_limit=skip_limit),
        CoreConfig.from_names(policy, "easy", backfill_policy="SPF" if policy != "SPF" else "LQF"),
        CoreConfig.from_names(policy, "conservative", skip_limit=skip_limit),
        CoreConfig.from_names(policy, "none"),
    ]


def later(snapshot: Snapshot, decided: Decisions, rng: np.random.Generator) -> Snapshot:
    """The next pass: the started jobs run, some running jobs have ended, the standing
    conservative reservations are given back (as the daemon does)."""
    by_id = {p.job_id: p for p in snapshot.pending}
    started = [d for d in decided.decisions if d.action in STARTS]
    if snapshot.nodes:
        return snapshot  # allocations of the new starts would be needed; the same queue again
    gone = {r.job_id for r in snapshot.running if rng.random() < 0.3}
    running = [r for r in snapshot.running if r.job_id not in gone]
    for d in started:
        p = by_id.pop(d.job_id)
        running.append(RunningJob(p.job_id, NOW, p.procs, p.requested_time))
    pending = tuple(
        dataclasses.replace(p, reserved_at=decided.reserved_at.get(p.job_id, math.inf))
        for p in by_id.values()
    )
    busy = sum(r.procs for r in running)
    return dataclasses.replace(
        snapshot,
        now=NOW + 60.0,
        pending=pending,
        running=tuple(running),
        free_procs=snapshot.total_procs - busy,
    )


def decisions_by_action(decided: Decisions) -> dict[str, dict[int, tuple]]:
    out: dict[str, dict[int, tuple]] = {}
    for d in decided.decisions:
        if d.action in (*STARTS, "reserve", "skip"):
            out.setdefault(d.action, {})[d.job_id] = (d.value, d.nodes, d.allocation)
    return out


def check_prefix(snapshot: Snapshot, config: CoreConfig, limit: int) -> int:
    full = schedule(snapshot, config)
    bounded = schedule(snapshot, dataclasses.replace(config, max_jobs_considered=limit))
    full_by, bounded_by = decisions_by_action(full), decisions_by_action(bounded)
    full_starts = {**full_by.get("start", {}), **full_by.get("backfill", {})}
    for action, decided in bounded_by.items():
        for job_id, what in decided.items():
            if action in STARTS:
                assert full_starts.get(job_id) == what, (action, job_id, config)
            else:
                assert full_by.get(action, {}).get(job_id) == what, (action, job_id, config)
    assert bounded.reserved_at == {j: t for j, t in full.reserved_at.items() if j not in bounded.unconsidered}
    # Who is left out: the lowest-priority jobs without a standing reservation, never one acted on.
    held = (
        {p.job_id for p in snapshot.pending if p.reserved_at < math.inf}
        if config.backfill == "conservative"
        else set()
    )
    infeasible = {d.job_id for d in full.decisions if d.action == "infeasible"}
    candidates = [j for j in full.order if j not in held and j not in infeasible]
    if config.backfill_policy is None:
        assert bounded.unconsidered == candidates[limit:]
    else:  # also in: the first `limit` jobs in the scan's own order
        assert set(bounded.unconsidered) <= set(candidates[limit:])
        assert len(bounded.unconsidered) >= len(candidates) - 2 * limit
    acted = {d.job_id for d in bounded.decisions if d.action in (*STARTS, "reserve", "skip")}
    assert not acted & set(bounded.unconsidered)
    assert all(bounded.estimate_basis[j] == BASIS_UNCONSIDERED for j in bounded.unconsidered)
    # Priorities are published for every job, as by the full pass.
    assert bounded.order == full.order and bounded.priority == full.priority
    return len(bounded.unconsidered)


@pytest.mark.parametrize("on_nodes", [False, True], ids=["counts", "nodes"])
def test_every_decision_of_a_bounded_pass_is_the_full_pass(on_nodes: bool) -> None:
    left_out = 0
    for seed in range(40):
        rng = np.random.default_rng(1000 + seed)
        snapshot = random_snapshot(seed, on_nodes)
        for config in configs(rng):
            first = schedule(snapshot, config)
            for snap in (snapshot, later(snapshot, first, rng)):
                for limit in {1, 2, int(rng.integers(1, len(snap.pending) + 2))}:
                    left_out += check_prefix(snap, config, limit)
    assert left_out > 0  # the cut-off did cut


def with_arrivals(snapshot: Snapshot, rng: np.random.Generator) -> Snapshot:
    """``snapshot`` with a few new jobs (no reservation yet), submitted now, on nodes."""
    base = max(p.job_id for p in (*snapshot.pending, *snapshot.running)) + 1
    count = len(snapshot.nodes)
    arrivals = []
    for k in range(int(rng.integers(2, 8))):
        request = Request(
            int(rng.integers(1, count + 1)), int(rng.integers(1, 9)), exclusive=bool(rng.random() < 0.2)
        )
        procs = request.nodes * (8 if request.exclusive else request.cores_per_node)
        estimate = float(rng.choice([300, 900, 3600, 14_400]))
        arrivals.append(PendingJob(base + k, snapshot.now, procs, estimate, request=request))
    return dataclasses.replace(snapshot, pending=(*snapshot.pending, *arrivals))


def test_on_nodes_live_passes_with_kept_reservations_the_bounded_pass_is_the_full_pass() -> None:
    # Conservative on nodes as the daemon runs it: each pass's standing reservations come back
    # with their nodes (Snapshot.kept), one second or ten minutes later (running jobs outlive
    # their estimates, reservations fall due, some fail on their nodes). The bounded pass and
    # the full pass see the same snapshot and record; the chain follows the bounded pass, as a
    # daemon with a cut-off would.
    held_seen = left_out = 0
    for seed in range(30):
        rng = np.random.default_rng(7000 + seed)
        first = random_snapshot(seed, on_nodes=True)
        snapshot = dataclasses.replace(
            first, nodes=tuple(dataclasses.replace(n, free_cores=None) for n in first.nodes)
        )
        config = CoreConfig.from_names(str(rng.choice(["FCFS", "SPF", "WFP3"])), "conservative")
        decided = schedule(snapshot, config)
        for _ in range(4):
            step = float(rng.choice([1.0, 600.0]))
            snapshot = live.next_snapshot(snapshot, decided, int(rng.integers(0, 2)), kept=True, step=step)
            snapshot = with_arrivals(snapshot, rng)
            held_seen += sum(p.reserved_at < math.inf for p in snapshot.pending)
            limit = int(rng.integers(1, max(len(snapshot.pending), 1) + 1))
            left_out += check_prefix(snapshot, config, limit)
            decided = schedule(snapshot, dataclasses.replace(config, max_jobs_considered=limit))
    assert held_seen > 100 and left_out > 0  # standing reservations were there and the cut-off cut


def test_a_standing_reservation_is_never_overtaken() -> None:
    # Job 2 (low priority) holds a reservation for the whole machine at t=NOW+600. Job 3 is new,
    # first in priority order and would run 3600 s: started now it would delay job 2. A pass
    # that looked only at the first job would start it; the bounded pass keeps job 2 in.
    running = (RunningJob(1, NOW - 100, 8, 700.0),)
    pending = (
        PendingJob(2, NOW - 10_000, 16, 3600.0, reserved_at=NOW + 600),
        PendingJob(3, NOW - 20_000, 8, 3600.0),
    )
    snapshot = Snapshot(NOW, 16, 8, pending, running)
    config = CoreConfig.from_names("FCFS", "conservative", max_jobs_considered=1)
    decided = schedule(snapshot, config)
    assert decided.order == [3, 2]
    assert decided.job_ids("start") == [] and decided.job_ids("backfill") == []
    assert decided.reserved_at[2] <= NOW + 600 and decided.unconsidered == []
    assert (
        schedule(snapshot, dataclasses.replace(config, max_jobs_considered=None)).reserved_at
        == decided.reserved_at
    )


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "10"])
def test_max_jobs_considered_must_be_a_positive_integer(value: object) -> None:
    with pytest.raises(PolicyError, match="max_jobs_considered"):
        CoreConfig(max_jobs_considered=value)  # type: ignore[arg-type]


def test_the_simulator_refuses_a_bounded_pass() -> None:
    from rush.simulator.engine import simulate
    from rush.workload.lublin import lublin_generate
    from rush.workload.model import workload_from_trace

    workload = workload_from_trace(lublin_generate(20, 16, seed=1))
    with pytest.raises(RushError, match="live pass only"):
        simulate(workload, CoreConfig(max_jobs_considered=5))
