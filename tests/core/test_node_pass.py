"""The core's node-level pass (rush.core.easy_nodes, conservative_nodes, node_pool).

The anchor: on one-core nodes with processor requests, node-level EASY and list scheduling
decide exactly what processor-count EASY decides (starts, backfill flags, skips, the head's
shadow time), on random snapshots. Then what only nodes can express: whole nodes, exclusive
jobs, GPUs, partitions, drained nodes, topology and variability-aware placement, and bad
requests reported as infeasible instead of stalling the queue.
"""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, Snapshot


def _random_case(seed: int, machine: int = 24) -> tuple[Snapshot, Snapshot]:
    """The same queue as a processor-count snapshot and on ``machine`` one-core nodes."""
    rng = np.random.default_rng(seed)
    now = 10_000.0
    running, pending, allocations = [], [], []
    taken = 0
    order = rng.permutation(machine)
    for job_id in range(1, int(rng.integers(0, 8)) + 1):
        q = int(rng.integers(1, 6))
        if taken + q > machine:
            break
        start = now - float(rng.integers(0, 500))
        running.append(RunningJob(job_id, start, q, float(rng.choice([300, 600, 900, 1200]))))
        allocations.append(tuple(Slot(int(i), 1) for i in order[taken : taken + q]))
        taken += q
    for k in range(int(rng.integers(1, 25))):
        pending.append(
            PendingJob(
                100 + k,
                now - float(rng.integers(0, 5000)),
                int(rng.integers(1, machine + 1)) if rng.random() < 0.3 else int(rng.integers(1, 6)),
                float(rng.choice([60, 300, 900, 3600])),
                variable=bool(rng.random() < 0.2),
                skips=int(rng.integers(0, 3)),
            )
        )
    procs = Snapshot(
        now=now,
        total_procs=machine,
        free_procs=machine - taken,
        pending=tuple(pending),
        running=tuple(running),
    )
    nodes = tuple(Node(f"n{i}", 1) for i in range(machine))
    on_nodes = Snapshot(
        now=now,
        total_procs=machine,
        free_procs=machine - taken,
        pending=tuple(pending),
        running=tuple(
            RunningJob(r.job_id, r.start, r.procs, r.requested_time, allocation=a)
            for r, a in zip(running, allocations, strict=True)
        ),
        nodes=nodes,
    )
    return procs, on_nodes


def _outcome(decisions, with_reserve: bool) -> list[tuple]:
    kept = ("start", "backfill", "skip") + (("reserve",) if with_reserve else ())
    return [(d.job_id, d.action, d.value) for d in decisions.decisions if d.action in kept]


@pytest.mark.parametrize("backfill", ["easy", "none"])
def test_one_core_nodes_decide_as_processor_counts(backfill: str) -> None:
    config = CoreConfig.from_names("FCFS", backfill, None, skip_limit=2)
    starts = 0
    for seed in range(300):
        procs, on_nodes = _random_case(seed)
        expected = schedule(procs, config)
        got = schedule(on_nodes, config)
        assert _outcome(got, True) == _outcome(expected, True), f"seed {seed}"
        for d in got.decisions:
            if d.action in ("start", "backfill"):
                job = next(p for p in on_nodes.pending if p.job_id == d.job_id)
                assert len(d.nodes) == job.procs
                starts += 1
    assert starts > 300  # the cases do start jobs


def _no_overcommit(snapshot: Snapshot, decisions) -> None:
    used = {n.name: snapshot.nodes[i].cores - (n.free_cores or 0) for i, n in enumerate(snapshot.nodes)}
    by_name = {n.name: n for n in snapshot.nodes}
    for d in decisions.decisions:
        if d.action in ("start", "backfill"):
            job = next(p for p in snapshot.pending if p.job_id == d.job_id)
            request = job.request or Request(0, job.procs)
            if request.nodes:
                assert len(d.nodes) == request.nodes
                for name in d.nodes:
                    node = by_name[name]
                    assert node.state == "up"
                    used[name] += node.cores if request.exclusive else request.cores_per_node
                    assert used[name] <= node.cores, (d, used)


def _cluster() -> tuple[Node, ...]:
    """Two pods of four 8-core nodes; pod 1's nodes carry 2 GPUs and form partition gpu."""
    return tuple(
        Node(
            f"n{i}",
            8,
            gpus=2 if i >= 4 else 0,
            partitions=("batch",) if i < 4 else ("batch", "gpu"),
            leaf=i // 4,
            free_cores=8,
            free_gpus=2 if i >= 4 else 0,
        )
        for i in range(8)
    )


def test_exclusive_gpu_and_partition_requests_are_placed_on_fitting_nodes() -> None:
    nodes = _cluster()
    pending = (
        PendingJob(1, 0, 16, 100, request=Request(2, 8, exclusive=True)),
        PendingJob(2, 1, 4, 100, request=Request(2, 2, 1, partition="gpu")),
        PendingJob(3, 2, 3, 100, request=Request(1, 3, partition="batch")),
        PendingJob(4, 3, 8, 100, request=Request(1, 8, 2, exclusive=True, partition="gpu")),
    )
    snapshot = Snapshot(now=0.0, total_procs=64, free_procs=64, pending=pending, nodes=nodes)
    decisions = schedule(snapshot, CoreConfig())
    where = {d.job_id: d.nodes for d in decisions.decisions if d.action in ("start", "backfill")}
    assert where[1] == ("n0", "n1")
    assert set(where[2]) <= {"n4", "n5", "n6", "n7"} and len(where[2]) == 2
    assert where[3] == ("n2",)
    # Exclusive: a whole GPU node nobody else uses.
    assert len(where[4]) == 1 and where[4][0] not in where[2]
    _no_overcommit(snapshot, decisions)


def test_drained_nodes_are_not_used_and_a_job_waiting_for_them_blocks_nobody() -> None:
    nodes = tuple(
        Node(
            n.name,
            n.cores,
            n.gpus,
            state="drained" if n.name in ("n0", "n1") else "up",
            partitions=n.partitions,
            leaf=n.leaf,
        )
        for n in _cluster()
    )
    pending = (
        # Needs all 8 nodes: two are drained, so it waits with no reservation...
        PendingJob(1, 0, 64, 100, request=Request(8, 8, exclusive=True)),
        # ... and a long job behind it still starts.
        PendingJob(2, 1, 8, 10_000, request=Request(1, 8)),
    )
    snapshot = Snapshot(now=0.0, total_procs=64, free_procs=48, pending=pending, nodes=nodes)
    decisions = schedule(snapshot, CoreConfig())
    started = {d.job_id: d.nodes for d in decisions.decisions if d.action in ("start", "backfill")}
    assert 1 not in started and started[2] == ("n2",)
    head = next(d for d in decisions.decisions if d.action == "reserve")
    assert head.job_id == 1 and head.value == np.inf


def test_backfill_respects_the_heads_nodes() -> None:
    """EASY on nodes: the head's reserved nodes are not given to a job that outlasts the shadow."""
    nodes = _cluster()
    running = (RunningJob(10, 0, 48, 1000, allocation=tuple(Slot(i, 8) for i in range(6))),)
    nodes = tuple(
        Node(n.name, 8, n.gpus, partitions=n.partitions, leaf=n.leaf, free_cores=0 if i < 6 else 8)
        for i, n in enumerate(nodes)
    )
    pending = (
        PendingJob(1, 0, 64, 100, request=Request(8, 8, exclusive=True)),  # head: all nodes at t=1000
        PendingJob(2, 1, 8, 5000, request=Request(1, 8)),  # would hold n6 past t=1000: no
        PendingJob(3, 2, 8, 500, request=Request(1, 8)),  # ends by t=1000: yes
    )
    snapshot = Snapshot(
        now=100.0, total_procs=64, free_procs=16, pending=pending, running=running, nodes=nodes
    )
    decisions = schedule(snapshot, CoreConfig())
    started = {d.job_id for d in decisions.decisions if d.action in ("start", "backfill")}
    assert started == {3}
    head = next(d for d in decisions.decisions if d.action == "reserve")
    assert head.value == 1000.0 and len(head.nodes) == 8


def test_topology_placement_packs_a_job_into_one_pod() -> None:
    nodes = tuple(
        Node(n.name, 8, 0, partitions=("batch",), leaf=n.leaf, free_cores=0 if n.name in ("n0", "n1") else 8)
        for n in _cluster()
    )
    running = (RunningJob(10, 0, 16, 1000, allocation=(Slot(0, 8), Slot(1, 8))),)
    pending = (PendingJob(1, 0, 24, 100, request=Request(3, 8)),)
    snapshot = Snapshot(now=0.0, total_procs=64, free_procs=48, pending=pending, running=running, nodes=nodes)
    first_fit = schedule(snapshot, CoreConfig())
    packed = schedule(snapshot, CoreConfig(placement="topology"))
    assert next(d.nodes for d in first_fit.decisions if d.action == "start") == ("n2", "n3", "n4")
    assert next(d.nodes for d in packed.decisions if d.action == "start") == ("n4", "n5", "n6")


def test_variability_placement_moves_a_flagged_job_to_a_quiet_pod_instead_of_skipping() -> None:
    nodes = tuple(
        Node(n.name, 8, 0, partitions=("batch",), leaf=n.leaf, quiet=n.leaf == 1) for n in _cluster()
    )
    pending = (PendingJob(1, 0, 16, 100, variable=True, request=Request(2, 8)),)
    snapshot = Snapshot(now=0.0, total_procs=64, free_procs=64, pending=pending, nodes=nodes)
    skipped = schedule(snapshot, CoreConfig(placement="topology"))
    assert [d.action for d in skipped.decisions if d.job_id == 1 and d.action != "priority"] == ["skip"]
    moved = schedule(snapshot, CoreConfig(placement="variability"))
    start = next(d for d in moved.decisions if d.action == "start")
    assert start.nodes == ("n4", "n5")
    # No quiet room left: skip-with-limit as before.
    loud = Snapshot(
        now=0.0, total_procs=64, free_procs=64, nodes=tuple(Node(n.name, 8, quiet=False) for n in nodes),
        pending=pending,
    )  # fmt: skip
    assert any(d.action == "skip" for d in schedule(loud, CoreConfig(placement="variability")).decisions)


def _pods(quiet_leaves: set[int], busy: set[int] = frozenset()) -> tuple[Node, ...]:
    """Two pods of two leaves of two 8-core nodes: leaves 0, 1 in pod 0, leaves 2, 3 in pod 1;
    nodes n0..n7 in leaf order; ``busy`` nodes have no free core."""
    return tuple(
        Node(
            f"n{i}",
            8,
            leaf=i // 2,
            pod=i // 4,
            quiet=i // 2 in quiet_leaves,
            free_cores=0 if i in busy else None,
        )
        for i in range(8)
    )


def _start(nodes: tuple[Node, ...], placement: str, variable: bool, size: int = 3):
    busy = sum(n.free_cores == 0 for n in nodes)
    pending = (PendingJob(1, 0, 8 * size, 100, variable=variable, request=Request(size, 8, exclusive=True)),)
    snapshot = Snapshot(
        now=0.0, total_procs=64, free_procs=64 - 8 * busy, pending=pending, nodes=nodes, trigger="event"
    )
    return [
        d for d in schedule(snapshot, CoreConfig(placement=placement)).decisions if d.action != "priority"
    ]


def test_quiet_pod_rule_keeps_a_flagged_job_in_one_quiet_pod() -> None:
    # Quiet leaves 1 (pod 0), 2 and 3 (pod 1). Without pods the roomiest quiet leaves are 1 and 2
    # (ties by index): across the pods' tapered links. With pods the job goes to pod 1's leaves.
    flat = tuple(Node(n.name, 8, leaf=n.leaf, quiet=n.quiet) for n in _pods({1, 2, 3}))
    [across] = _start(flat, "variability", True)
    assert across.action == "start" and set(across.nodes) & {"n2", "n3"} and set(across.nodes) & {"n4", "n5"}
    [inside] = _start(_pods({1, 2, 3}), "variability", True)
    assert inside.action == "start" and set(inside.nodes) <= {"n4", "n5", "n6", "n7"}, inside
    # Best fit among pods, as among leaves: pod 0 holds it when it is the smaller pod that does.
    [small] = _start(_pods({0, 1, 2, 3}, busy={5, 6, 7}), "variability", True)
    assert set(small.nodes) <= {"n0", "n1", "n2", "n3"}, small


def test_quiet_pod_rule_skips_when_only_a_placement_across_pods_is_quiet() -> None:
    # Quiet room: leaf 1 (pod 0) and leaf 2 (pod 1), 2 nodes each; a 3-node flagged job fits
    # quietly only across the pods: not quiet, so skip-with-limit, as with no quiet room.
    [held] = _start(_pods({1, 2}), "variability", True)
    assert held.action == "skip", held
    flat = tuple(Node(n.name, 8, leaf=n.leaf, quiet=n.quiet) for n in _pods({1, 2}))
    assert _start(flat, "variability", True)[0].action == "start"


@pytest.mark.parametrize("placement", ["first-fit", "topology"])
def test_pods_change_no_first_fit_or_topology_placement(placement: str) -> None:
    # Pods change only variability placement: first fit and topology place every job as without.
    for quiet, busy in [({1, 2, 3}, set()), ({0}, {0, 3, 5}), (set(), {1, 6})]:
        with_pods = _pods(quiet, busy)
        flat = tuple(Node(n.name, 8, leaf=n.leaf, quiet=n.quiet, free_cores=n.free_cores) for n in with_pods)
        for size in (1, 3, 5):
            for variable in (False, True):
                assert _start(with_pods, placement, variable, size) == _start(flat, placement, variable, size)


def test_variability_placement_keeps_an_unflagged_job_in_one_pod_when_one_holds_it() -> None:
    # Busy n0, n2, n7: leaf room 1, 1, 2, 1; pods 2 and 3. Topology takes the roomiest leaves
    # anywhere (leaf 2, then leaf 0: across the pods); variability takes pod 1's leaves 2 and 3.
    nodes = _pods(set(), busy={0, 2, 7})
    [packed] = _start(nodes, "topology", False, 3)
    assert set(packed.nodes) == {"n1", "n4", "n5"}, packed
    [in_pod] = _start(nodes, "variability", False, 3)
    assert set(in_pod.nodes) == {"n4", "n5", "n6"}, in_pod
    # No pod holds 4 of the 5 free nodes: the roomiest leaves anywhere, as topology.
    assert _start(nodes, "variability", False, 4) == _start(nodes, "topology", False, 4)
    # A job inside one leaf and the machine without pods: as topology.
    flat = tuple(Node(n.name, 8, leaf=n.leaf, free_cores=n.free_cores) for n in nodes)
    assert _start(flat, "variability", False, 3) == _start(flat, "topology", False, 3)
    assert _start(nodes, "variability", False, 2) == _start(nodes, "topology", False, 2)


def _pod_wait(variable: bool, skips: int = 0) -> list:
    """Pods 0 (n0-n3) and 1 (n4-n7), none quiet; n0, n1 and n4, n5 busy (ends 2000, 3000 and
    1000): the free nodes n2, n3 (pod 0) and n6, n7 (pod 1) hold a 3-node job only across the
    pods. Job 1 (3 nodes, flagged or not) and behind it job 2 (1 node, ends after 1000)."""
    nodes = _pods(set(), busy={0, 1, 4, 5})
    running = (
        RunningJob(10, 0, 8, 2000, allocation=(Slot(0, 8),)),
        RunningJob(11, 0, 8, 3000, allocation=(Slot(1, 8),)),
        RunningJob(12, 0, 16, 1000, allocation=(Slot(4, 8), Slot(5, 8))),
    )
    pending = (
        PendingJob(1, 0, 24, 100, variable=variable, skips=skips, request=Request(3, 8, exclusive=True)),
        PendingJob(2, 1, 8, 5000, request=Request(1, 8, exclusive=True)),
    )
    snapshot = Snapshot(
        now=0.0, total_procs=64, free_procs=32, pending=pending, running=running, nodes=nodes, trigger="event"
    )
    return [
        d for d in schedule(snapshot, CoreConfig(placement="variability")).decisions if d.action != "priority"
    ]


def test_a_flagged_job_that_fits_only_across_pods_waits_for_one_pod_without_a_skip() -> None:
    # Not a skip (the wait is for room in one pod, not for quiet): job 1 is EASY's head, and its
    # reservation lies inside one pod: pod 1 at 1000, when job 12 gives back n4 and n5 (across
    # the pods it would fit now, at 0). A job that runs past 1000 backfills around it.
    decisions = _pod_wait(variable=True)
    of_1 = [d for d in decisions if d.job_id == 1]
    assert [d.action for d in of_1] == ["reserve"], of_1
    assert of_1[0].value == 1000.0 and set(of_1[0].nodes) <= {"n4", "n5", "n6", "n7"}, of_1
    [long] = [d for d in decisions if d.job_id == 2]
    assert long.action == "backfill" and not set(long.nodes) & set(of_1[0].nodes), long


def test_the_pod_wait_leaves_unflagged_jobs_and_jobs_at_their_limit_as_before() -> None:
    # Unflagged, or flagged at its skip limit: it starts now across the pods, as rule h places it.
    for variable, skips in [(False, 0), (True, 10)]:
        start = next(d for d in _pod_wait(variable, skips) if d.job_id == 1)
        assert start.action == "start" and set(start.nodes) & {"n2", "n3"} and set(start.nodes) & {"n6", "n7"}


def test_nodes_of_one_leaf_in_two_pods_are_refused() -> None:
    from rush.errors import RushError

    nodes = (Node("a", 8, leaf=0, pod=0), Node("b", 8, leaf=0, pod=1))
    with pytest.raises(RushError, match="different pods"):
        _start(nodes, "variability", True, 1)


@pytest.mark.parametrize(
    ("request_", "words"),
    [
        (Request(9, 8), "has 8 such nodes"),
        (Request(1, 8, 1, partition="batch"), "no node with GPUs"),
        (Request(1, 8, partition="nowhere"), "does not exist"),
        (Request(1, 1, 3, partition="gpu"), "0 such nodes"),
        (Request(-1, 1), "nodes >= 0"),
        (Request(1, 0), "cores >= 1"),
        (Request(1 << 40, 1), "nodes >= 0"),
        (Request(0, 4, 1), "without a node count"),
    ],
)
def test_infeasible_requests_are_reported_and_do_not_block_the_queue(request_: Request, words: str) -> None:
    nodes = tuple(
        Node(n.name, 8, n.gpus, partitions=("batch",) if n.gpus == 0 else ("gpu",), leaf=n.leaf)
        for n in _cluster()
    )
    pending = (PendingJob(1, 0, 8, 100, request=request_), PendingJob(2, 1, 4, 100))
    snapshot = Snapshot(now=0.0, total_procs=64, free_procs=64, pending=pending, nodes=nodes)
    decisions = schedule(snapshot, CoreConfig())
    bad = [d for d in decisions.decisions if d.action == "infeasible"]
    assert [d.job_id for d in bad] == [1] and words in bad[0].reason, bad
    assert {d.job_id for d in decisions.decisions if d.action == "start"} == {2}


def test_conservative_on_nodes_reserves_without_overcommitting() -> None:
    nodes = tuple(Node(f"n{i}", 4, leaf=i // 2, free_cores=0 if i < 2 else 4) for i in range(4))
    running = (RunningJob(10, 0, 8, 1000, allocation=(Slot(0, 4), Slot(1, 4))),)
    pending = (
        PendingJob(1, 0, 16, 500, request=Request(4, 4)),  # all nodes: after t=1000
        PendingJob(2, 1, 8, 2000, request=Request(2, 4)),  # would overlap job 1: after it
        PendingJob(3, 2, 4, 900, request=Request(1, 4)),  # ends before t=1000: starts now
    )
    snapshot = Snapshot(now=0.0, total_procs=16, free_procs=8, pending=pending, running=running, nodes=nodes)
    decisions = schedule(snapshot, CoreConfig(backfill="conservative"))
    reserved = {d.job_id: d.value for d in decisions.decisions if d.action == "reserve"}
    started = {d.job_id: d.nodes for d in decisions.decisions if d.action in ("start", "backfill")}
    assert reserved == {1: 1000.0, 2: 1500.0}
    assert list(started) == [3] and started[3][0] in ("n2", "n3")


@pytest.mark.parametrize(
    ("node", "words"),
    [
        (Node("bad", 0), "1..16777216 cores"),
        (Node("bad", -4), "1..16777216 cores"),
        (Node("bad", 1 << 40), "1..16777216 cores"),
        (Node("bad", 4, gpus=-1), "0..16777216 GPUs"),
        (Node("bad", 4, state="rebooting"), "give a state in"),  # type: ignore[arg-type]
        (Node("bad", 4, leaf=-1), "leaf switch"),
    ],
)
def test_a_hostile_node_is_refused_with_its_name(node: Node, words: str) -> None:
    from rush.errors import RushError

    snapshot = Snapshot(
        now=0.0, total_procs=8, free_procs=4, pending=(PendingJob(1, 0, 1, 10),), nodes=(Node("ok", 4), node)
    )
    with pytest.raises(RushError, match=words) as caught:
        schedule(snapshot, CoreConfig())
    assert "snapshot node" in caught.value.where or "snapshot.nodes" in caught.value.where


def test_an_allocation_on_an_unknown_node_is_refused() -> None:
    from rush.errors import RushError

    running = (RunningJob(10, 0, 4, 100, allocation=(Slot(7, 4),)),)
    snapshot = Snapshot(
        now=1.0, total_procs=4, free_procs=4, pending=(PendingJob(1, 0, 1, 10),), running=running,
        nodes=(Node("n0", 4),),
    )  # fmt: skip
    with pytest.raises(RushError, match="node index 7 of 1"):
        schedule(snapshot, CoreConfig())
