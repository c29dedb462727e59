"""The pass's decisions as columns (``Decisions.columns``, rush.core.decision_columns) hold, job
by job, the values of the decisions' dictionaries: priority, group and key, estimated start, why,
and the job waited behind; on random queues with infeasible jobs, jobs listed out of submit
order, bounded passes (jobs left unconsidered) and passes without estimates. The planner's
journal rows read these columns instead of the dictionaries, so they must agree exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.decision_columns import NONE, DecisionColumns, rows_of
from rush.core.policies import parse_policy
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.core.snapshot import Decisions, PendingJob, RunningJob, Snapshot

NOW = 80_000.0
TOTAL = 64


def random_snapshot(seed: int, on_nodes: bool = False) -> Snapshot:
    """Processor counts (some jobs ask for more than the machine), or 8 nodes of 8 cores (some
    jobs ask for more nodes than there are: infeasible, out of the pass)."""
    rng = np.random.default_rng(seed)
    nodes = tuple(Node(f"n{i}", 8, 0, leaf=i // 4) for i in range(TOTAL // 8)) if on_nodes else ()
    free = [8] * len(nodes)
    running = []
    used = 0
    for job_id in range(1, int(rng.integers(1, 12))):
        procs = int(rng.integers(1, 9 if on_nodes else 12))
        allocation: tuple = ()
        if on_nodes:
            i = int(rng.integers(0, len(nodes)))
            procs = min(procs, free[i])
            if procs == 0:
                continue
            free[i] -= procs
            allocation = (Slot(i, procs),)
        if used + procs > TOTAL:
            break
        used += procs
        estimate = None if rng.random() < 0.5 else float(rng.integers(60, 4000))
        start = NOW - float(rng.integers(0, 3000))
        running.append(RunningJob(job_id, start, procs, 3600.0, estimate=estimate, allocation=allocation))
    pending = []
    for k in range(int(rng.integers(1, 60))):
        request = None
        if on_nodes:
            count = len(nodes) + 1 if rng.random() < 0.1 else int(rng.integers(1, 4))  # some infeasible
            request = Request(count, int(rng.integers(1, 9)))
            procs = request.nodes * request.cores_per_node
        else:
            procs = TOTAL + 1 if rng.random() < 0.1 else int(rng.integers(1, TOTAL))
        estimate = None if rng.random() < 0.5 else float(rng.integers(60, 4000))
        pending.append(
            PendingJob(
                1000 + k,
                NOW - float(rng.integers(0, 50_000)),  # not in submit order
                procs,
                float(rng.choice([600, 3600, 14_400])),
                estimate,
                request=request,
            )
        )
    return Snapshot(NOW, TOTAL, TOTAL - used, tuple(pending), tuple(running), nodes=nodes)


def as_dictionaries(columns: DecisionColumns) -> dict[str, dict]:
    """The columns read back into the dictionaries' form (a value only where one is held)."""
    ids = columns.job_id.tolist()
    out: dict[str, dict] = {
        "priority": {
            j: v
            for j, v, h in zip(ids, columns.priority.tolist(), columns.has_priority.tolist(), strict=True)
            if h
        },
        "priority_group": {j: g for j, g in zip(ids, columns.group.tolist(), strict=True) if g != NONE},
        "priority_key": {
            j: k
            for j, k, g in zip(ids, columns.key.tolist(), columns.group.tolist(), strict=True)
            if g != NONE
        },
    }
    if columns.estimated_start is not None:
        out["estimated_start"] = dict(zip(ids, columns.estimated_start.tolist(), strict=True))
        out["estimate_basis"] = dict(zip(ids, columns.basis.tolist(), strict=True))
        out["waits_behind"] = {j: b for j, b in zip(ids, columns.behind.tolist(), strict=True) if b != NONE}
    return out


def dictionaries(d: Decisions, estimates: bool) -> dict[str, dict]:
    names = ["priority", "priority_group", "priority_key"]
    if estimates:
        names += ["estimated_start", "estimate_basis", "waits_behind"]
    return {name: getattr(d, name) for name in names}


@pytest.mark.parametrize("on_nodes", [False, True], ids=["procs", "nodes"])
@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize(
    ("config", "explain", "estimates"),
    [
        (CoreConfig(backfill="easy"), True, True),
        (CoreConfig(backfill="easy", max_jobs_considered=5), True, True),
        (CoreConfig(backfill="conservative", policy=parse_policy("SPF")), False, True),
        (CoreConfig(backfill="easy", policy=parse_policy("LINEAR:q=1,wait=-0.01")), True, False),
    ],
    ids=["easy", "bounded", "conservative", "no-estimates"],
)
def test_the_columns_hold_the_dictionaries_values(
    seed: int, config: CoreConfig, explain: bool, estimates: bool, on_nodes: bool
) -> None:
    snapshot = random_snapshot(seed, on_nodes)
    d = schedule(snapshot, config, explain_priorities=explain, estimate_starts_too=estimates)
    assert d.columns is not None
    assert sorted(d.columns.job_id.tolist()) == sorted(p.job_id for p in snapshot.pending)
    assert (d.columns.estimated_start is not None) == estimates
    assert as_dictionaries(d.columns) == dictionaries(d, estimates)
    # The columns made from the dictionaries (decisions made without columns) say the same.
    assert as_dictionaries(DecisionColumns.of(d)) == dictionaries(d, estimates)


def test_the_columns_are_not_part_of_the_decisions_equality() -> None:
    d = schedule(random_snapshot(1), CoreConfig(backfill="easy"))
    assert d.columns is not None
    other = Decisions(d.now, list(d.order), dict(d.priority), dict(d.priority_group), dict(d.priority_key))
    other.decisions = d.decisions
    other.reserved_at = d.reserved_at
    other.estimated_start, other.estimate_basis = d.estimated_start, d.estimate_basis
    other.waits_behind, other.estimate_notes, other.kept = d.waits_behind, d.estimate_notes, d.kept
    other.unconsidered = d.unconsidered
    assert other == d


@pytest.mark.parametrize("seed", range(20))
def test_rows_of_finds_each_id_or_none(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ids = rng.choice(1000, size=int(rng.integers(0, 50)), replace=False).astype(np.int64)
    wanted = rng.integers(0, 1000, size=int(rng.integers(0, 80))).astype(np.int64)
    got = rows_of(ids, wanted).tolist()
    where = {j: k for k, j in enumerate(ids.tolist())}
    assert got == [where.get(j, NONE) for j in wanted.tolist()]
    assert all(math.isfinite(k) for k in got)
