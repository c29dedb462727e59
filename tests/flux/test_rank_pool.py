"""The module's pool (rush/flux_module/rank_pool.py) against flux-core's own Rv1 pool: the
same allocations, refusals and feasibility answers on random requests, and the nodes it
reads from its rank table equal to those read from the pool's R sets. No instance needed:
flux-core's Python pool runs in this process."""

from __future__ import annotations

import random

import pytest

from tests.flux.instance import available

why = available()
if why:
    pytest.skip(why, allow_module_level=True)

from flux.idset import IDset  # noqa: E402
from flux.resource import InfeasibleRequest, InsufficientResources  # noqa: E402
from flux.resource.ResourcePool import ResourcePool  # noqa: E402

from rush.flux_module.rank_pool import (  # noqa: E402
    RankCachedResourcePool,
    allocation_of,
    confined_request,
    pool_nodes,
)
from rush.rjms.flux.resource_set import allocation_from_r, count_cores, nodes_from_r  # noqa: E402


def random_r(rng: random.Random, nodes: int, hostnames: str) -> dict:
    """Nodes of 2 or 4 cores, some with 2 GPUs, properties ``big`` and ``gpu``."""
    groups: dict[tuple[str, str], list[int]] = {}
    for rank in range(nodes):
        cores = rng.choice(["0-1", "0-3"])
        gpus = "0-1" if rng.random() < 0.3 else ""
        groups.setdefault((cores, gpus), []).append(rank)
    r_lite = []
    for (cores, gpus), ranks in groups.items():
        children = {"core": cores, **({"gpu": gpus} if gpus else {})}
        r_lite.append({"rank": ",".join(map(str, ranks)), "children": children})
    execution: dict = {"R_lite": r_lite, "starttime": 0.0, "expiration": 0.0}
    if hostnames == "unique":
        execution["nodelist"] = [f"n[0-{nodes - 1}]"]
    elif hostnames == "repeated":  # what `flux R encode` without hosts gives
        execution["nodelist"] = ["localhost"] * nodes
    big = [g for (cores, _), ranks in groups.items() if cores == "0-3" for g in ranks]
    gpu = [g for (_, gpus), ranks in groups.items() if gpus for g in ranks]
    execution["properties"] = {
        name: ",".join(map(str, sorted(ranks))) for name, ranks in (("big", big), ("gpu", gpu)) if ranks
    }
    return {"version": 1, "execution": execution}


QUEUES = {"batch": [], "big": ["big"], "gpus": ["gpu", "big"], "nogpu": ["^gpu"]}


def jobspec(rng: random.Random) -> dict:
    cores = rng.choice([1, 2, 4])
    slot = {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": cores}]}
    if rng.random() < 0.2:
        slot["with"].append({"type": "gpu", "count": 1})
    count = rng.choice([1, 1, 2, 3])
    node = {"type": "node", "count": count, "with": [slot]}
    if rng.random() < 0.5:
        node["exclusive"] = True
    system: dict = {"duration": 60}
    if rng.random() < 0.2:
        system["constraints"] = {"properties": [rng.choice(["big", "gpu", "^gpu"])]}
    return {"version": 1, "resources": [node], "tasks": [], "attributes": {"system": system}}


def outcome(call, *args):
    try:
        result = call(*args)
    except (InfeasibleRequest, InsufficientResources) as exc:
        return type(exc).__name__, str(exc)
    if result is None:
        return "ok", None
    return "ok", result.to_dict(), result.dumps(), result


def same(mine, theirs, names) -> bool:
    """Equal outcomes; for an allocation also its summary and its nodes as the module reads
    them from the allocation (against what it would read from the R)."""
    if mine[0] != "ok" or mine[1] is None:
        return mine == theirs
    r, alloc = mine[1], mine[3]
    read = allocation_of(alloc, names)
    return mine[1:3] == theirs[1:3] and read == (allocation_from_r(r, names), count_cores(r))


@pytest.mark.parametrize("seed", range(6))
def test_allocations_refusals_and_feasibility_are_flux_cores(seed):
    rng = random.Random(seed)
    r = random_r(rng, rng.choice([8, 24, 60]), rng.choice(["unique", "repeated", "none"]))
    ours, theirs = RankCachedResourcePool(r), ResourcePool(r)
    nnodes = len(ours.impl._ranks)
    for pool in (ours, theirs):
        pool.mark_up("all")
    running: list[int] = []
    seen: set[str] = set()
    names = {rank: f"n{rank}" for rank in range(0, nnodes, 2)}  # some ranks unnamed: rank<N>
    for jobid in range(1, 200):
        spec = jobspec(rng)
        rr_ours, rr_theirs = ours.parse_resource_request(spec), theirs.parse_resource_request(spec)
        assert outcome(ours.check_feasibility, rr_ours) == outcome(theirs.check_feasibility, rr_theirs)
        ranks = sorted(rng.sample(range(nnodes + 2), rng.choice([1, 2, 3, 5])))  # ranks past the end too
        # The request confined to the ranks as the module confines it, handed to both pools.
        mine = outcome(ours.alloc, jobid, confined_request(rr_ours, ranks))
        assert same(mine, outcome(theirs.alloc, jobid, confined_request(rr_theirs, ranks)), names)
        seen.add(mine[0])
        if mine[0] == "ok":
            running.append(jobid)
        if running and rng.random() < 0.4:
            done = running.pop(rng.randrange(len(running)))
            ours.free(done)
            theirs.free(done)
        if rng.random() < 0.05:
            rank = str(rng.randrange(nnodes))
            change = "mark_down" if rng.random() < 0.5 else "mark_up"
            getattr(ours, change)(rank)
            getattr(theirs, change)(rank)
        if rng.random() < 0.02:  # the pool shrinks: remembered feasibility goes
            gone = IDset(str(rng.randrange(nnodes)))
            ours.remove_ranks(gone)
            theirs.remove_ranks(gone)
        assert ours.to_dict() == theirs.to_dict() and ours.dumps() == theirs.dumps()
        assert ours.copy_allocated().to_dict() == theirs.copy_allocated().to_dict()
        # The nodes the module reads (kept from read to read) against a fresh read of the R sets.
        queues = QUEUES if jobid % 3 else {}
        view = pool_nodes(ours, queues)
        assert view is not None
        everything = theirs.to_resource_set().to_dict()
        allocated, down = theirs.copy_allocated().to_dict(), theirs.copy_down().to_dict()
        assert view.nodes == nodes_from_r(everything, allocated, down, queues=queues)
    assert seen == {"ok", "InsufficientResources", "InfeasibleRequest"}  # every branch taken


def test_a_read_builds_again_only_the_nodes_that_changed_and_a_summary_is_formatted_once():
    """pool_nodes keeps each rank's Node while its free cores and state stay; an allocation's
    summary (flux-core's alloc formats it for its debug line, the module for the annotation)
    is formatted once, and formatted again once the pool changes."""
    rng = random.Random(3)
    pool = RankCachedResourcePool(random_r(rng, 12, "unique"))
    pool.mark_up("all")
    first = pool_nodes(pool, QUEUES)
    assert first is not None
    spec = {
        "version": 1,
        "resources": [{"type": "node", "count": 1, "exclusive": True, "with": [
            {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}]}],
        "tasks": [],
        "attributes": {"system": {"duration": 60}},
    }  # fmt: skip
    alloc = pool.alloc(1, confined_request(pool.parse_resource_request(spec), [5]))
    assert alloc.dumps() is alloc.dumps()
    summary = pool.dumps()
    assert pool.dumps() is summary
    second = pool_nodes(pool, QUEUES)
    assert second is not None
    kept = [a is b for a, b in zip(first.nodes, second.nodes, strict=True)]
    assert kept == [rank != 5 for rank in range(12)]
    assert second.nodes[5].free_cores == 0 and first.nodes[5].free_cores == first.nodes[5].cores
    pool.free(1)
    assert pool_nodes(pool, QUEUES).nodes == first.nodes
    pool.mark_down("2")
    third = pool_nodes(pool, QUEUES)
    assert third.nodes[2].state == "down" and third.nodes[2].free_cores == 0
    assert pool_nodes(pool, {}).nodes[0].partitions == ()  # other queues: read again


@pytest.mark.parametrize("hostnames", ["unique", "repeated", "none"])
def test_nodes_read_from_the_rank_table_equal_those_read_from_r(hostnames):
    rng = random.Random(7)
    r = random_r(rng, 30, hostnames)
    pool = RankCachedResourcePool(r)
    pool.mark_up("all")
    pool.mark_down("3,17")
    for jobid in range(1, 25):
        try:
            pool.alloc(jobid, pool.parse_resource_request(jobspec(rng)))
        except (InfeasibleRequest, InsufficientResources):
            pass
    queues = {"batch": [], "big": ["big"], "gpus": ["gpu", "big"], "nogpu": ["^gpu"]}
    everything = pool.to_resource_set().to_dict()
    allocated = pool.copy_allocated().to_dict()
    down = pool.copy_down().to_dict()
    view = pool_nodes(pool, queues)
    assert view is not None
    assert view.nodes == nodes_from_r(everything, allocated, down, queues=queues)
    assert {n.state for n in view.nodes} == {"up", "down"}
    assert any(n.free_cores < n.cores for n in view.nodes if n.state == "up")
    total = sum(n.cores for n in view.nodes)
    assert view.total_cores == total
    expected_busy = sum(len(v["cores"]) for v in pool.impl._ranks.values() if not v["up"]) + sum(
        len(v["allocated_cores"]) for v in pool.impl._ranks.values()
    )
    assert view.busy_cores == expected_busy
    assert [view.names[rank] for rank in sorted(view.names)] == [n.name for n in view.nodes]


def test_idsets_are_encoded_as_flux_cores_c_library_encodes_them():
    """The module's Python idset encoders against flux-core's (its C library through cffi)."""
    from flux.resource.Rv1Set import _display_idset, _idset_str

    from rush.flux_module.rank_pool import display_ids, idset_text

    rng = random.Random(11)
    for _ in range(2000):
        ids = {rng.randrange(rng.choice([2, 5, 40, 3000])) for _ in range(rng.randrange(0, 14))}
        assert idset_text(ids) == _idset_str(ids) and display_ids(ids) == _display_idset(ids)
