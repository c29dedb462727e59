"""From the snapshot's nodes and requests to the pass's arrays (:class:`NodeView`), and the
checks that keep bad requests out of the pass.

A request the partition can never satisfy (more nodes or GPUs than it has, a GPU job where
no node has GPUs, an unknown partition, zero or absurd counts) is not scheduled: the core
reports it as ``infeasible`` with the job, the reason and the fix, and leaves it out of the
pass, so it can never become the EASY head and stall the queue. A job that only waits for
drained or down nodes is feasible: it waits, and its shadow time is infinite until they
return, so it blocks nobody.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rush.core.node_pool import (
    PLACEMENT_CODES,
    NodePool,
    NodeRequests,
    NodeView,
    Slots,
    leaf_index,
    new_slots,
)
from rush.core.resources import NODE_STATES, Node, Request
from rush.errors import RushError

# Bit p of a node's partition mask is partition p: at most 63 partitions.
MAX_PARTITIONS = 63
# No request may ask for more than this many nodes, cores or GPUs per node (bounded work).
MAX_COUNT = 1 << 24


def _empty_int(n: int = 0) -> np.ndarray:
    return np.zeros(n, dtype=np.int64)


def procs_only_view(jobs: int) -> NodeView:
    """The view of a cluster without nodes (the pass runs its processor-count kernels)."""
    pool = NodePool(
        _empty_int(), _empty_int(), _empty_int(), _empty_int(), np.zeros(0, dtype=np.bool_),
        _empty_int(), _empty_int(), np.zeros(0, dtype=np.bool_), _empty_int(1), _empty_int(), 0,
        _empty_int(), _empty_int(2),
    )  # fmt: skip
    requests = NodeRequests(
        _empty_int(jobs), np.ones(jobs, dtype=np.int64), _empty_int(jobs), np.zeros(jobs, dtype=np.bool_),
        np.full(jobs, -1, dtype=np.int64),
    )  # fmt: skip
    return NodeView(pool, requests, new_slots(0, 0), 0, new_slots(0, 0), new_slots(1, 0))


def partition_index(nodes: Sequence[Node]) -> dict[str, int]:
    """Partition name -> bit index, in order of first appearance."""
    names: dict[str, int] = {}
    for node in nodes:
        for p in node.partitions:
            names.setdefault(p, len(names))
    if len(names) > MAX_PARTITIONS:
        raise RushError(
            f"{len(names)} partitions; the core handles at most {MAX_PARTITIONS}",
            where="snapshot.nodes",
            fix="schedule fewer partitions per rush instance (daemon.partitions)",
        )
    return names


def node_pool(nodes: Sequence[Node], allocated: np.ndarray, partitions: dict[str, int]) -> NodePool:
    """The pool; a node whose free counts the RJMS did not give is free where no running job
    holds it (``allocated``: cores and GPUs held per node, shape (m, 2))."""
    m = len(nodes)
    cores = np.fromiter((n.cores for n in nodes), dtype=np.int64, count=m)
    gpus = np.fromiter((n.gpus for n in nodes), dtype=np.int64, count=m)
    for i, node in enumerate(nodes):
        if (
            node.state not in NODE_STATES
            or not (0 < node.cores <= MAX_COUNT)
            or not (0 <= node.gpus <= MAX_COUNT)
        ):
            raise RushError(
                f"node {node.name!r}: state {node.state!r}, {node.cores} cores, {node.gpus} GPUs",
                where=f"snapshot node {i}",
                fix=f"give a state in {NODE_STATES}, 1..{MAX_COUNT} cores and 0..{MAX_COUNT} GPUs",
            )
    free_c = np.array(
        [n.cores - allocated[i, 0] if n.free_cores is None else n.free_cores for i, n in enumerate(nodes)],
        dtype=np.int64,
    ).reshape(m)
    free_g = np.array(
        [n.gpus - allocated[i, 1] if n.free_gpus is None else n.free_gpus for i, n in enumerate(nodes)],
        dtype=np.int64,
    ).reshape(m)
    free_c = np.clip(free_c, 0, cores)
    free_g = np.clip(free_g, 0, gpus)
    masks = np.fromiter(
        (sum(1 << partitions[p] for p in set(n.partitions)) for n in nodes), dtype=np.int64, count=m
    )
    leaf = np.fromiter((n.leaf for n in nodes), dtype=np.int64, count=m)
    if m and (leaf.min() < 0 or leaf.max() >= MAX_COUNT):
        raise RushError(
            "a node's leaf switch index is negative or huge",
            where="snapshot.nodes",
            fix="number leaves 0..L-1",
        )
    leaves = int(leaf.max()) + 1 if m else 1
    leaf_pod = np.zeros(leaves, dtype=np.int64)
    pods = np.fromiter((n.pod for n in nodes), dtype=np.int64, count=m)
    if m and (pods.min() < 0 or pods.max() >= MAX_COUNT):
        raise RushError(
            "a node's pod index is negative or huge", where="snapshot.nodes", fix="number pods 0..P-1"
        )
    leaf_pod[leaf] = pods
    if m and np.any(leaf_pod[leaf] != pods):
        raise RushError(
            "two nodes on one leaf switch name different pods",
            where="snapshot.nodes",
            fix="give every node of a leaf its leaf's pod",
        )
    return NodePool(
        cores,
        gpus,
        free_c,
        free_g,
        np.fromiter((n.state == "up" for n in nodes), dtype=np.bool_, count=m),
        masks,
        leaf,
        np.fromiter((n.quiet for n in nodes), dtype=np.bool_, count=m),
        np.zeros(leaves, dtype=np.int64),
        _empty_int(m),
        m,
        *leaf_index(leaf, leaves),
        leaf_pod,
    )


class MachineCounts:
    """What :func:`request_problem` asks of one pool, each count computed once per pass: a
    queue of 10 000 jobs asks for a few hundred distinct shapes over a few partitions."""

    def __init__(self, pool: NodePool, partitions: dict[str, int]) -> None:
        self.pool, self.partitions = pool, partitions
        self._member: dict[str, np.ndarray] = {}
        self._counts: dict[tuple, int] = {}

    def member(self, partition: str) -> np.ndarray:
        """Nodes of ``partition`` (every node for none)."""
        got = self._member.get(partition)
        if got is None:
            if partition:
                got = ((self.pool.partitions >> self.partitions[partition]) & 1) == 1
            else:
                got = np.ones(self.pool.count, dtype=np.bool_)
            self._member[partition] = got
        return got

    def count(self, what: str, partition: str, cores: int = 0, gpus: int = 0) -> int:
        """``cores``: cores on the partition's nodes; ``gpu nodes``: its nodes with GPUs; ``fit``:
        its nodes with at least ``cores`` cores and ``gpus`` GPUs."""
        key = (what, partition, cores, gpus)
        got = self._counts.get(key)
        if got is None:
            member, pool = self.member(partition), self.pool
            if what == "cores":
                got = int(pool.cores[member].sum())
            elif what == "gpu nodes":
                got = int(np.count_nonzero(member & (pool.gpus > 0)))
            else:
                got = int(np.count_nonzero(member & (pool.cores >= cores) & (pool.gpus >= gpus)))
            self._counts[key] = got
        return got


def request_problem(request: Request, procs: int, machine: MachineCounts) -> str | None:
    """Why ``request`` can never run on this machine (None: it can), naming the fix."""
    if not (0 <= request.nodes <= MAX_COUNT and 1 <= request.cores_per_node <= MAX_COUNT):
        return f"asks for {request.nodes} nodes of {request.cores_per_node} cores: give nodes >= 0 and cores >= 1"
    if not 0 <= request.gpus_per_node <= MAX_COUNT:
        return f"asks for {request.gpus_per_node} GPUs per node: give 0 or more"
    if request.nodes == 0 and request.gpus_per_node:
        return "asks for GPUs without a node count: give nodes and GPUs per node"
    partitions = machine.partitions
    if request.partition and request.partition not in partitions:
        known = ", ".join(sorted(partitions)) or "none"
        return f"partition {request.partition!r} does not exist here (partitions: {known})"
    where = f"partition {request.partition!r}" if request.partition else "the machine"
    if request.nodes == 0:
        cores = machine.count("cores", request.partition)
        if procs > cores:
            return f"asks for {procs} cores; {where} has {cores}"
        return None
    if request.gpus_per_node and not machine.count("gpu nodes", request.partition):
        return f"asks for GPUs; {where} has no node with GPUs: submit to a GPU partition"
    fit = machine.count("fit", request.partition, request.cores_per_node, request.gpus_per_node)
    if fit < request.nodes:
        return (
            f"asks for {request.nodes} nodes with {request.cores_per_node} cores and "
            f"{request.gpus_per_node} GPUs each; {where} has {fit} such nodes"
        )
    return None


def requests_of(
    requests: Sequence[Request | None], procs: np.ndarray, partitions: dict[str, int]
) -> NodeRequests:
    """Per-job request arrays (a job without a request asks for ``procs`` cores anywhere)."""
    n = len(requests)
    nodes = _empty_int(n)
    cores = np.ones(n, dtype=np.int64)
    gpus = _empty_int(n)
    exclusive = np.zeros(n, dtype=np.bool_)
    partition = np.full(n, -1, dtype=np.int64)
    for j, r in enumerate(requests):
        if r is None:
            cores[j] = procs[j]
            continue
        nodes[j] = min(max(r.nodes, 0), MAX_COUNT)
        cores[j] = min(max(r.cores_per_node, 1), MAX_COUNT) if r.nodes else procs[j]
        gpus[j] = min(max(r.gpus_per_node, 0), MAX_COUNT)
        exclusive[j] = r.exclusive
        # An unknown partition only reaches here for a job reported infeasible (not scheduled).
        partition[j] = partitions.get(r.partition, -1) if r.partition else -1
    return NodeRequests(nodes, cores, gpus, exclusive, partition)


def held_slots(allocations: Sequence[Sequence[tuple[int, int, int]]], m: int) -> Slots:
    """Running jobs' allocations as rows (in the pass's running order)."""
    rows = len(allocations)
    entries = sum(len(a) for a in allocations)
    slots = new_slots(rows, entries)
    k = 0
    for i, allocation in enumerate(allocations):
        for node, c, g in allocation:
            if not 0 <= node < m:
                raise RushError(
                    f"a running job's allocation names node index {node} of {m}",
                    where="snapshot running allocation",
                    fix="give Slot.node as an index into Snapshot.nodes",
                )
            slots.node[k], slots.cores[k], slots.gpus[k] = node, c, g
            k += 1
        slots.offset[i + 1] = k
    return slots


def node_view(pool: NodePool, requests: NodeRequests, held: Slots, placement: str) -> NodeView:
    """The pass's view, with output buffers large enough for any pass."""
    if placement not in PLACEMENT_CODES:
        raise RushError(
            f"unknown placement {placement!r}",
            where="placement",
            fix=f"use one of {', '.join(PLACEMENT_CODES)}",
        )
    n = len(requests.nodes)
    # Every slot of a start holds at least one core; a failed try writes at most one per node.
    entries = int(pool.cores.sum()) + pool.count + 1
    return NodeView(
        pool, requests, held, PLACEMENT_CODES[placement], new_slots(n, entries), new_slots(1, pool.count + 1)
    )


def uniform_pool(nodes: int, cores: int, nodes_per_leaf: int = 0) -> NodePool:
    """``nodes`` idle, up nodes of ``cores`` cores in one partition; leaf switches of
    ``nodes_per_leaf`` nodes (0: one leaf). The simulator's machine for a trace."""
    if not (0 < nodes <= MAX_COUNT and 0 < cores <= MAX_COUNT and nodes_per_leaf >= 0):
        raise RushError(
            f"a machine of {nodes} nodes x {cores} cores, {nodes_per_leaf} nodes per leaf",
            where="machine",
            fix="give nodes and cores per node > 0 and nodes per leaf >= 0",
        )
    leaf = np.arange(nodes, dtype=np.int64) // nodes_per_leaf if nodes_per_leaf else _empty_int(nodes)
    return NodePool(
        np.full(nodes, cores, dtype=np.int64),
        _empty_int(nodes),
        np.full(nodes, cores, dtype=np.int64),
        _empty_int(nodes),
        np.ones(nodes, dtype=np.bool_),
        np.ones(nodes, dtype=np.int64),
        leaf,
        np.ones(nodes, dtype=np.bool_),
        _empty_int(int(leaf.max()) + 1),
        _empty_int(nodes),
        nodes,
        *leaf_index(leaf, int(leaf.max()) + 1),
    )
