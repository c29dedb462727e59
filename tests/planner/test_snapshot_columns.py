"""The planner's kept job columns (rush.planner.snapshot_columns) against the columns read
afresh from the objects, and the core's decisions with them against its decisions without,
over random event sequences: arrivals, ends, starts, changed jobs, and the queue listed in
another order. Once on the columns alone (30 seeds x 8 cycles, on nodes and on processor
counts, EASY and conservative), once through the planner's whole cycle as each shell feeds it
(the Flux module keeps its job objects between passes, a daemon reads fresh ones)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import replace

import numpy as np
import pytest

from rush.core import CoreConfig, PendingJob, RunningJob, RuntimeClass, Snapshot
from rush.core.job_columns import SnapshotColumns, snapshot_columns
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.errors import RushError
from rush.planner.config import parse_config
from rush.planner.plan import Planner
from rush.planner.snapshot_columns import KeptColumns
from rush.rjms.base import Capabilities, ClusterState, RJMSJob
from tests.queue_backend import Queue

NODES = 12
CORES = 8


def machine() -> tuple[Node, ...]:
    return tuple(
        Node(f"n{i:02d}", CORES, gpus=2 if i % 6 == 5 else 0, partitions=("batch",), leaf=i // 6)
        for i in range(NODES)
    )


def new_pending(rng: np.random.Generator, job_id: int, now: float, on_nodes: bool) -> PendingJob:
    request = None
    procs = int(rng.integers(1, 2 * CORES))
    if on_nodes and rng.random() < 0.7:
        request = Request(int(rng.integers(1, 4)), int(rng.integers(1, CORES + 1)), partition="batch")
        procs = request.procs(CORES)
    limit = float(rng.integers(60, 7_200))
    return PendingJob(
        job_id,
        now - float(rng.integers(0, 5_000)),
        procs,
        limit,
        estimate=None if rng.random() < 0.5 else float(rng.uniform(0.1, 1.0)) * limit,
        runtime_class=RuntimeClass(int(rng.integers(-1, 2))),
        skips=int(rng.integers(0, 3)),
        user=int(rng.integers(0, 5)),
        request=request,
        rjms_priority=float(rng.integers(0, 100)),
        fairshare=None if rng.random() < 0.5 else float(rng.random()),
    )


def started(p: PendingJob, now: float, free: list[int]) -> RunningJob | None:
    """``p`` running from ``now`` on the free cores it needs, or None if they are not there."""
    if p.request is None:
        need = [(i, p.procs) for i in range(NODES) if free[i] >= p.procs][:1]
    else:
        need = [(i, p.request.cores_per_node) for i in range(NODES) if free[i] >= p.request.cores_per_node]
        need = need[: p.request.nodes] if len(need) >= p.request.nodes else []
    if not need:
        return None
    for i, cores in need:
        free[i] -= cores
    allocation = tuple(Slot(i, cores) for i, cores in need)
    return RunningJob(
        p.job_id, now, p.procs, p.requested_time, p.estimate, request=p.request, allocation=allocation
    )


def event_sequence(seed: int, cycles: int, on_nodes: bool):
    """Snapshots of one queue over ``cycles`` cycles; unchanged jobs keep their objects."""
    rng = np.random.default_rng(seed)
    nodes = machine() if on_nodes else ()
    now, next_id = 10_000.0, 1
    free = [CORES] * NODES
    pending: list[PendingJob] = []
    running: list[RunningJob] = []
    for _ in range(int(rng.integers(5, 40))):
        pending.append(new_pending(rng, next_id, now, on_nodes))
        next_id += 1
    for _ in range(cycles):
        for r in [r for r in running if rng.random() < 0.3]:  # ends
            running.remove(r)
            for s in r.allocation:
                free[s.node] += s.cores
        for p in [p for p in pending if rng.random() < 0.15]:  # starts
            r = started(p, now, free)
            if r is not None:
                pending.remove(p)
                running.append(r)
        for k in range(len(pending)):  # changes: a skip counted, a new estimate, a reservation
            if rng.random() < 0.1:
                pending[k] = replace(
                    pending[k],
                    skips=pending[k].skips + 1,
                    estimate=float(rng.uniform(10.0, pending[k].requested_time)),
                    reserved_at=now + float(rng.integers(0, 3_000)) if rng.random() < 0.5 else math.inf,
                )
        for _ in range(int(rng.integers(0, 8))):  # arrivals
            pending.append(new_pending(rng, next_id, now, on_nodes))
            next_id += 1
        if rng.random() < 0.3:  # listed in another order
            order = rng.permutation(len(pending))
            pending = [pending[k] for k in order]
        busy = sum(r.procs for r in running)
        total = NODES * CORES
        yield Snapshot(now, total, max(total - busy, 0), tuple(pending), tuple(running), nodes=nodes)
        now += float(rng.integers(1, 600))


def assert_same_columns(kept: SnapshotColumns, read: SnapshotColumns) -> None:
    for kind in ("pending", "running"):
        ours, theirs = getattr(kept, kind), getattr(read, kind)
        for field in dataclasses.fields(theirs):
            a, b = getattr(ours, field.name), getattr(theirs, field.name)
            if isinstance(b, np.ndarray):
                assert a.dtype == b.dtype, (kind, field.name)
                np.testing.assert_array_equal(a, b, err_msg=f"{kind}.{field.name}")
            else:
                assert tuple(a) == tuple(b), (kind, field.name)


def same_record(a, b) -> bool:
    """Two values equal: records (dataclasses, named tuples) field by field, arrays by value."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if dataclasses.is_dataclass(a) and type(a) is type(b):
        return all(same_record(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        return len(a) == len(b) and all(map(same_record, a, b))
    return a == b


def assert_same_decisions(ours, theirs) -> None:
    assert dataclasses.replace(ours, kept=None) == dataclasses.replace(theirs, kept=None)
    assert same_record(ours.kept, theirs.kept)


@pytest.mark.parametrize("on_nodes", [True, False], ids=["nodes", "counts"])
@pytest.mark.parametrize("seed", range(30))
def test_kept_columns_equal_columns_read_afresh_and_decide_the_same(seed: int, on_nodes: bool) -> None:
    kept = KeptColumns()
    config = CoreConfig(backfill="easy" if seed % 2 else "conservative")
    last: dict[int, PendingJob] = {}
    for snapshot in event_sequence(seed, 8, on_nodes):
        columns = kept.update(snapshot.pending, snapshot.running)
        assert_same_columns(columns, snapshot_columns(snapshot.pending, snapshot.running))
        assert len(kept.pending) == len(snapshot.pending) and len(kept.running) == len(snapshot.running)
        with_columns = schedule(replace(snapshot, columns=columns), config)
        assert_same_decisions(with_columns, schedule(snapshot, config))
        # Only the jobs that arrived or changed (a new object) are read again.
        assert kept.pending.rewritten == sum(last.get(p.job_id) is not p for p in snapshot.pending)
        last = {p.job_id: p for p in snapshot.pending}


def test_columns_of_other_jobs_or_in_another_order_are_refused() -> None:
    snapshot = next(event_sequence(0, 1, True))
    fewer = snapshot_columns(snapshot.pending[1:], snapshot.running)
    swapped = snapshot_columns(
        (snapshot.pending[1], snapshot.pending[0], *snapshot.pending[2:]), snapshot.running
    )
    for columns in (fewer, swapped):
        with pytest.raises(RushError, match="snapshot.columns.pending"):
            schedule(replace(snapshot, columns=columns), CoreConfig())


class KeptObjects(Queue):
    """A backend that starts jobs and keeps its job objects between reads, as the Flux module."""

    capabilities = Capabilities(starts_jobs=True)


def rjms_state(snapshot: Snapshot, fresh: bool, kept: dict[int, RJMSJob]) -> ClusterState:
    """``snapshot`` as an RJMS read: new objects for every job (``fresh``), else the same object
    for a job whose RJMS fields did not change."""
    jobs = []
    names = [node.name for node in snapshot.nodes]
    for r in snapshot.running:
        jobs.append(
            RJMSJob(
                r.job_id,
                "RUNNING",
                r.start - 5.0,
                r.procs,
                r.requested_time,
                start=r.start,
                user="u",
                request=r.request,
                allocation=tuple((names[s.node], s.cores, s.gpus) for s in r.allocation) if names else (),
            )
        )
    for p in snapshot.pending:
        job = RJMSJob(
            p.job_id,
            "PENDING",
            p.submit,
            p.procs,
            p.requested_time,
            user=f"u{p.user}",
            request=p.request,
            priority=p.rjms_priority,
        )
        jobs.append(job if fresh or kept.get(p.job_id) != job else kept[p.job_id])
    kept.clear()
    kept.update((j.job_id, j) for j in jobs)
    return ClusterState(
        snapshot.now, snapshot.total_procs, snapshot.free_procs, tuple(jobs), nodes=snapshot.nodes
    )


@pytest.mark.parametrize("shell", ["daemon", "flux-module"])
@pytest.mark.parametrize("seed", range(6))
def test_planner_cycles_hand_the_core_kept_columns_that_decide_as_read_ones(
    tmp_path, seed: int, shell: str
) -> None:
    backfill = "easy" if seed % 2 else "conservative"
    raw = {
        "daemon": {"journal": str(tmp_path / "journal.sqlite"), "dry_run": shell == "daemon"},
        "policy": {"policy": "FCFS", "backfill": backfill},
    }
    backend = KeptObjects() if shell == "flux-module" else Queue()
    planner = Planner(parse_config(raw), backend=backend)
    objects: dict[int, RJMSJob] = {}
    reread, listed = [], []
    for snapshot in event_sequence(seed, 6, on_nodes=seed % 3 != 0):
        backend.state = rjms_state(snapshot, fresh=shell == "daemon", kept=objects)
        report = planner.run_cycle()
        assert report.ok, report.error
        _, built, decisions = planner.last
        given = built.snapshot
        assert given.columns is not None
        assert_same_columns(given.columns, snapshot_columns(given.pending, given.running))
        again = schedule(replace(given, columns=None), planner.core_config, explain_priorities=False)
        words = [d for d in decisions.decisions if d.action != "priority"]
        assert_same_decisions(dataclasses.replace(decisions, decisions=words), again)
        reread.append(planner._columns.pending.rewritten)
        listed.append(len(given.pending))
    # Unchanged pending jobs keep their rows, whether the shell kept the objects or read anew.
    assert reread[0] == listed[0] and sum(reread[1:]) < sum(listed[1:])
