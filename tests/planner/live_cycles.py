"""Random live cycles for the planner's tests: one queue's snapshots over a sequence of cycles
(arrivals, ends, starts, changed jobs, RJMS priority changes, the queue listed in another order;
unchanged jobs keep their objects), and each snapshot as an RJMS read as either shell gives it
(the Flux module keeps its job objects between passes, a daemon reads fresh ones)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import replace

import numpy as np

from rush.core import PendingJob, RunningJob, RuntimeClass, Snapshot
from rush.core.resources import Node, Request, Slot
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


def event_sequence(seed: int, cycles: int, on_nodes: bool, priority_changes: bool = False):
    """Snapshots of one queue over ``cycles`` cycles; unchanged jobs keep their objects.
    ``priority_changes``: a changed job may also get another RJMS priority and runtime class,
    and now and then a job arrives that can never run here (more than the machine)."""
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
                if priority_changes:
                    pending[k] = replace(
                        pending[k],
                        rjms_priority=float(rng.integers(0, 100)),
                        runtime_class=RuntimeClass(int(rng.integers(-1, 2))),
                    )
        for _ in range(int(rng.integers(0, 8))):  # arrivals
            pending.append(new_pending(rng, next_id, now, on_nodes))
            next_id += 1
        if priority_changes and rng.random() < 0.3:  # a job that can never run here
            procs = (NODES + 1) * CORES
            request = Request(NODES + 1, CORES, partition="batch") if on_nodes else None
            pending.append(PendingJob(next_id, now, procs, 600.0, request=request))
            next_id += 1
        if rng.random() < 0.3:  # listed in another order
            order = rng.permutation(len(pending))
            pending = [pending[k] for k in order]
        busy = sum(r.procs for r in running)
        total = NODES * CORES
        yield Snapshot(now, total, max(total - busy, 0), tuple(pending), tuple(running), nodes=nodes)
        now += float(rng.integers(1, 600))


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
