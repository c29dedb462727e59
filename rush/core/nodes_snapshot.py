"""A snapshot's nodes, requests and allocations as the pass's :class:`NodeView`.

The live entry point (:func:`rush.core.schedule.schedule`) calls :func:`on_nodes` when the
snapshot has nodes: it checks every pending request against the machine (an infeasible one
is reported, not scheduled), gives back the allocations of jobs killed in this pass, and
lays out the running jobs' allocations in the pass's running order.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rush.core.config import CoreConfig
from rush.core.job_columns import NO_SHAPE, PendingColumns, request_shape
from rush.core.node_pool import NodePool, NodeRequests, NodeView
from rush.core.node_view import (
    MachineCounts,
    held_slots,
    node_pool,
    node_view,
    partition_index,
    request_problem,
    requests_of,
)
from rush.core.resources import Request
from rush.core.snapshot import RunningJob, Snapshot


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
    pending: PendingColumns,
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
    slots = [slot for r in every_running for slot in r.allocation]
    node, cores, gpus = (
        np.fromiter(map(operator.attrgetter(name), slots), dtype=np.int64, count=len(slots))
        for name in ("node", "cores", "gpus")
    )
    on_machine = (node >= 0) & (node < m)  # a running job's index off the machine: held_slots refuses it
    np.add.at(allocated[:, 0], node[on_machine], cores[on_machine])
    np.add.at(allocated[:, 1], node[on_machine], gpus[on_machine])
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
    infeasible, requests = _requests(pending, pool, partitions)
    held = held_slots([[(s.node, s.cores, s.gpus) for s in r.allocation] for r in running], m)
    view = node_view(pool, requests, held, config.placement)
    free = int(pool.free_cores[pool.usable].sum())
    return OnNodes(view, infeasible, free)


def _requests(
    pending: PendingColumns, pool: NodePool, partitions: dict[str, int]
) -> tuple[dict[int, str], NodeRequests]:
    """Why each infeasible job can never run here, and every job's request arrays: each
    distinct request (with its processor count where it asks for cores anywhere) checked and
    converted once, then spread to its jobs (a queue repeats a few shapes many times)."""
    code, anywhere = _shapes(pending)
    procs = np.where(anywhere[code], pending.procs, 0)
    by_key = np.lexsort((procs, code))
    new = np.ones(len(by_key), dtype=np.bool_)
    new[1:] = (np.diff(code[by_key]) != 0) | (np.diff(procs[by_key]) != 0)
    first = by_key[new].tolist()  # one job of each distinct key
    inverse = np.empty(len(by_key), dtype=np.int64)
    inverse[by_key] = np.cumsum(new) - 1
    distinct = [pending.request[j] for j in first]
    distinct_procs = pending.procs[first].tolist()
    machine = MachineCounts(pool, partitions)
    problems = [
        request_problem(r if r is not None else Request(0, p), p, machine)
        for r, p in zip(distinct, distinct_procs, strict=True)
    ]
    bad = np.array([p is not None for p in problems], dtype=np.bool_)
    infeasible = {
        k: f"job {int(pending.job_id[k])} {problems[inverse[k]]}"
        for k in np.flatnonzero(bad[inverse]).tolist()
    }
    rows = requests_of(distinct, np.array(distinct_procs, dtype=np.int64), partitions)
    return infeasible, NodeRequests(*(column[inverse] for column in rows))


def _shapes(pending: PendingColumns) -> tuple[np.ndarray, np.ndarray]:
    """Each job's request shape as a number (equal shapes, one number) and, per number, whether
    the shape asks for cores anywhere (no request, or no node count): a request's processor
    count matters only there. From the rows' kept shape codes (``request_shape``, read once
    per row), else by reading every request."""
    kept = pending.request_shape
    if not len(kept) or kept.min() != NO_SHAPE:
        first, code = np.unique(kept, return_index=True, return_inverse=True)[1:]
        requests = pending.request
        anywhere = np.fromiter(
            (r is None or r.nodes == 0 for r in map(requests.__getitem__, first.tolist())),
            dtype=np.bool_,
            count=len(first),
        )
        return code.reshape(len(kept)), anywhere
    code_of: dict[tuple | None, int] = {}
    # Each shape tuple dies at once unless new: no heap of 100 000 tuples for the collector.
    code = np.fromiter(
        (code_of.setdefault(None if r is None else request_shape(r), len(code_of)) for r in pending.request),
        dtype=np.int64,
        count=len(pending.request),
    )
    anywhere = np.fromiter((s is None or s[0] == 0 for s in code_of), dtype=np.bool_, count=len(code_of))
    return code, anywhere
