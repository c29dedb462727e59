"""A snapshot's nodes, requests and allocations as the pass's :class:`NodeView`.

The live entry point (:func:`rush.core.schedule.schedule`) calls :func:`on_nodes` when the
snapshot has nodes: it checks every pending request against the machine (an infeasible one
is reported, not scheduled), gives back the allocations of jobs killed in this pass, and
lays out the running jobs' allocations in the pass's running order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rush.core.config import CoreConfig
from rush.core.node_pool import NodeView
from rush.core.node_view import (
    held_slots,
    node_pool,
    node_view,
    partition_index,
    request_problem,
    requests_of,
)
from rush.core.resources import Request
from rush.core.snapshot import PendingJob, RunningJob, Snapshot


@dataclass(frozen=True)
class OnNodes:
    view: NodeView
    # Pending job index -> why it can never run here (and the fix).
    infeasible: dict[int, str]
    # Cores free now on usable nodes (after this pass's kills).
    free: int


def on_nodes(
    snapshot: Snapshot,
    config: CoreConfig,
    pending: Sequence[PendingJob],
    running: Sequence[RunningJob],
    killed: set[int],
) -> OnNodes:
    """The node view for ``pending`` and ``running`` (in the pass's running order); the jobs
    in ``killed`` are no longer running, so their nodes are free."""
    nodes = snapshot.nodes
    m = len(nodes)
    partitions = partition_index(nodes)
    allocated = np.zeros((m, 2), dtype=np.int64)
    every_running = [*running, *(r for r in snapshot.running if r.job_id in killed)]
    for r in every_running:
        for slot in r.allocation:
            if 0 <= slot.node < m:
                allocated[slot.node] += (slot.cores, slot.gpus)
    pool = node_pool(nodes, allocated, partitions)
    for r in snapshot.running:
        if r.job_id in killed:
            for slot in r.allocation:
                if 0 <= slot.node < m:
                    pool.free_cores[slot.node] = min(
                        pool.free_cores[slot.node] + slot.cores, pool.cores[slot.node]
                    )
                    pool.free_gpus[slot.node] = min(
                        pool.free_gpus[slot.node] + slot.gpus, pool.gpus[slot.node]
                    )
    procs = np.fromiter((p.procs for p in pending), dtype=np.int64, count=len(pending))
    infeasible: dict[int, str] = {}
    problems: dict[tuple[Request, int], str | None] = {}
    for k, job in enumerate(pending):
        request = job.request if job.request is not None else Request(0, int(job.procs))
        key = (request, int(job.procs) if request.nodes == 0 else 0)
        if key not in problems:
            problems[key] = request_problem(request, int(job.procs), pool, partitions)
        if problems[key] is not None:
            infeasible[k] = f"job {job.job_id} {problems[key]}"
    requests = requests_of([p.request for p in pending], procs, partitions)
    held = held_slots([[(s.node, s.cores, s.gpus) for s in r.allocation] for r in running], m)
    view = node_view(pool, requests, held, config.placement)
    free = int(pool.free_cores[pool.usable].sum())
    return OnNodes(view, infeasible, free)
