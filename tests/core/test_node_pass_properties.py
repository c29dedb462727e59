"""Properties of the node-level pass on random multi-core, GPU, partitioned clusters with
drained nodes: starts never overcommit a node, use only up nodes of the job's partition and
idle nodes for exclusive jobs, and EASY keeps its promise: when every job ends by its
estimate, the head can be placed on its reserved nodes at the shadow time, whatever was
backfilled."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, Snapshot

NOW = 10_000.0


def _cluster(rng) -> tuple[Node, ...]:
    nodes = []
    for i in range(int(rng.integers(4, 13))):
        gpus = int(rng.choice([0, 0, 2, 4]))
        parts = ("batch",) if gpus == 0 else ("batch", "gpu")
        state = "drained" if rng.random() < 0.1 else "up"
        nodes.append(Node(f"n{i}", int(rng.choice([4, 8])), gpus, state=state, partitions=parts, leaf=i // 4))
    return tuple(nodes)


def _request(rng, nodes) -> Request:
    kind = rng.random()
    if kind < 0.3:
        return Request(0, int(rng.integers(1, 12)))
    if kind < 0.55:
        return Request(int(rng.integers(1, 4)), int(rng.integers(1, 5)), exclusive=True)
    if kind < 0.8 or not any(n.gpus for n in nodes):
        return Request(int(rng.integers(1, 4)), int(rng.integers(1, 5)), partition="batch")
    return Request(int(rng.integers(1, 3)), int(rng.integers(1, 4)), int(rng.integers(1, 3)), partition="gpu")


def _take(request: Request, node: Node, free_c: int) -> tuple[int, int]:
    """What a node request takes on ``node`` (cores-only requests: ``free_c``)."""
    if request.nodes == 0:
        return free_c, 0
    if request.exclusive:
        return node.cores, node.gpus
    return request.cores_per_node, request.gpus_per_node


def _random_snapshot(seed: int) -> Snapshot:
    rng = np.random.default_rng(seed)
    nodes = _cluster(rng)
    free_c = [n.cores for n in nodes]
    free_g = [n.gpus for n in nodes]
    running = []
    for job_id in range(1, int(rng.integers(1, 10))):
        i = int(rng.integers(0, len(nodes)))
        c = int(rng.integers(1, free_c[i] + 1)) if free_c[i] else 0
        g = int(rng.integers(0, free_g[i] + 1))
        if c == 0:
            continue
        free_c[i] -= c
        free_g[i] -= g
        estimate = float(rng.choice([300, 900, 3000]))
        running.append(
            RunningJob(job_id, NOW - float(rng.integers(0, 200)), c, estimate, allocation=(Slot(i, c, g),))
        )
    nodes = tuple(
        Node(n.name, n.cores, n.gpus, state=n.state, partitions=n.partitions, leaf=n.leaf,
             free_cores=free_c[i], free_gpus=free_g[i])
        for i, n in enumerate(nodes)
    )  # fmt: skip
    pending = []
    for k in range(int(rng.integers(1, 20))):
        request = _request(rng, nodes)
        procs = request.cores_per_node if request.nodes == 0 else request.nodes * request.cores_per_node
        pending.append(
            PendingJob(100 + k, NOW - float(rng.integers(0, 5000)), procs, float(rng.choice([60, 600, 6000])),
                       request=request)
        )  # fmt: skip
    total = sum(n.cores for n in nodes)
    free = sum(c for c, n in zip(free_c, nodes, strict=True) if n.state == "up")
    return Snapshot(now=NOW, total_procs=total, free_procs=free, pending=tuple(pending), running=tuple(running),
                    nodes=nodes)  # fmt: skip


@pytest.mark.parametrize("placement", ["first-fit", "topology"])
def test_starts_fit_and_the_heads_reservation_holds(placement: str) -> None:
    checked_heads = 0
    started = 0
    for seed in range(400):
        snapshot = _random_snapshot(seed)
        decisions = schedule(snapshot, CoreConfig.from_names("FCFS", "easy", None, placement=placement))
        nodes = snapshot.nodes
        index = {n.name: i for i, n in enumerate(nodes)}
        free_c = [n.free_cores for n in nodes]
        free_g = [n.free_gpus for n in nodes]
        pending = {p.job_id: p for p in snapshot.pending}
        ends: list[tuple[float, int, int, int]] = []  # (end, node, cores, gpus) of every holder
        for r in snapshot.running:
            for s in r.allocation:
                ends.append((r.start + r.requested_time, s.node, s.cores, s.gpus))
        for d in decisions.decisions:
            if d.action not in ("start", "backfill"):
                continue
            job = pending[d.job_id]
            request = job.request
            assert sum(c for _, c, _ in d.allocation) >= job.procs or request.exclusive, (seed, d)
            for name, c, g in d.allocation:
                i = index[name]
                node = nodes[i]
                assert node.state == "up", (seed, d)
                assert not request.partition or request.partition in node.partitions, (seed, d)
                if request.exclusive:
                    assert free_c[i] == node.cores and free_g[i] == node.gpus, (seed, d)
                if request.nodes:
                    assert (c, g) == _take(request, node, 0), (seed, d)
                free_c[i] -= c
                free_g[i] -= g
                assert free_c[i] >= 0 and free_g[i] >= 0, (seed, d)
                ends.append((NOW + job.requested_time, i, c, g))
            assert request.nodes == 0 or len(d.nodes) == request.nodes, (seed, d)
            started += 1
        head = [d for d in decisions.decisions if d.action == "reserve"]
        if not head or math.isinf(head[0].value):
            continue
        shadow = head[0].value
        at_shadow_c = list(free_c)
        at_shadow_g = list(free_g)
        for end, i, c, g in ends:
            if end <= shadow:
                at_shadow_c[i] += c
                at_shadow_g[i] += g
        job = pending[head[0].job_id]
        request = job.request
        assert sum(c for _, c, _ in head[0].allocation) >= job.procs or request.exclusive, (seed, head)
        for name, c, g in head[0].allocation:
            i = index[name]
            if request.exclusive:
                assert at_shadow_c[i] == nodes[i].cores and at_shadow_g[i] == nodes[i].gpus, (seed, head)
            assert at_shadow_c[i] >= c and at_shadow_g[i] >= g, (seed, head, name)
        checked_heads += 1
    assert started > 400 and checked_heads > 100


def test_conservative_on_nodes_never_overcommits_now() -> None:
    for seed in range(200):
        snapshot = _random_snapshot(seed)
        decisions = schedule(snapshot, CoreConfig.from_names("FCFS", "conservative", None))
        free_c = {n.name: n.free_cores for n in snapshot.nodes}
        pending = {p.job_id: p for p in snapshot.pending}
        for d in decisions.decisions:
            if d.action in ("start", "backfill"):
                request = pending[d.job_id].request
                if request.nodes:
                    for name in d.nodes:
                        node = next(n for n in snapshot.nodes if n.name == name)
                        free_c[name] -= node.cores if request.exclusive else request.cores_per_node
                        assert free_c[name] >= 0, (seed, d)
            if d.action == "reserve":
                assert d.value > NOW
