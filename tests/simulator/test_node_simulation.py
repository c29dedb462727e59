"""The simulator on nodes (issue 20): on a trace's own nodes the one pass decides as on
processor counts wherever the two describe the same machine, and placement policies only
change where jobs go.

* KTH-SP2 (cores only): one-core nodes, processor requests;
* SDSC-BLUE and LLNL-Atlas (whole nodes of 8 cores): exclusive node requests on identical
  nodes are isomorphic to processor counts in multiples of 8, so every start time is equal.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.errors import RushError
from rush.simulator.engine import NODE_KERNELS, interchangeable_nodes, simulate
from rush.workload.model import workload_from_trace
from tests.core.real_traces import MIRROR

TRACES = {
    "KTH-SP2": "KTH-SP2-1996-2.1-cln.swf.gz",
    "SDSC-BLUE": "SDSC-BLUE-2000-4.2-cln.swf.gz",
    "LLNL-Atlas": "LLNL-Atlas-2006-2.1-cln.swf.gz",
}
JOBS = 4000


def _workload(name: str):
    path = MIRROR / TRACES[name]
    if not path.exists():
        pytest.skip(f"trace {path} not available: set RUSH_TRACE_MIRROR to the traces directory")
    from rush.workload.swf import read_swf

    return workload_from_trace(read_swf(path)).subset(np.arange(JOBS))


@pytest.mark.parametrize("trace", sorted(TRACES))
@pytest.mark.parametrize(("policy", "backfill"), [("FCFS", "easy"), ("SPF", "easy"), ("FCFS", "none")])
def test_nodes_decide_as_processor_counts_on_real_traces(trace: str, policy: str, backfill: str) -> None:
    workload = _workload(trace)
    config = CoreConfig.from_names(policy, backfill, 200_000)
    procs = simulate(workload, config)
    # The node kernels themselves (the replay would otherwise run the count kernels here).
    nodes = simulate(workload, config, on_nodes=NODE_KERNELS)
    assert np.array_equal(procs.start, nodes.start)
    assert np.array_equal(procs.backfilled, nodes.backfilled)
    if trace != "KTH-SP2":
        assert workload.machine.whole_node and workload.requests.exclusive.all()


@pytest.mark.parametrize("trace", sorted(TRACES))
def test_interchangeable_nodes_replay_as_the_node_kernels(trace: str) -> None:
    """Where no decision can depend on which node a job gets, the replay runs the count
    kernels (issue 31): starts, backfills and ends are still the node kernels' job by job."""
    workload = _workload(trace)
    config = CoreConfig.from_names("SPF", "easy", 200_000)
    assert interchangeable_nodes(workload, config)
    fast = simulate(workload, config, on_nodes=True, nodes_per_leaf=16)
    exact = simulate(workload, config, on_nodes=NODE_KERNELS, nodes_per_leaf=16)
    assert np.array_equal(fast.start, exact.start)
    assert np.array_equal(fast.backfilled, exact.backfilled)
    assert np.array_equal(fast.end, exact.end)


@pytest.mark.parametrize("trace", ["KTH-SP2", "SDSC-BLUE"])
def test_topology_on_one_leaf_replays_as_the_node_kernels(trace: str) -> None:
    """Topology placement with one leaf switch is first-fit (issue 31): the replay runs the
    count kernels and still decides as the node kernels job by job; with leaves of 16 nodes it
    keeps the node kernels."""
    workload = _workload(trace)
    config = CoreConfig.from_names("FCFS", "easy", 200_000, placement="topology")
    assert interchangeable_nodes(workload, config, 0)
    assert interchangeable_nodes(workload, config, workload.machine.nodes)
    assert not interchangeable_nodes(workload, config, 16)
    assert not interchangeable_nodes(workload, config)  # leaves not known
    fast = simulate(workload, config, on_nodes=True)
    exact = simulate(workload, config, on_nodes=NODE_KERNELS)
    assert np.array_equal(fast.start, exact.start)
    assert np.array_equal(fast.backfilled, exact.backfilled)
    assert np.array_equal(fast.end, exact.end)


def test_nodes_that_matter_keep_the_node_kernels() -> None:
    """Shared nodes beside exclusive ones, conservative reservations (same nodes for the whole
    window), topology placement (a leaf first: on one-core nodes it decides otherwise than the
    counts) and variability-aware placement are not count-equivalent: no shortcut."""
    workload = _workload("SDSC-BLUE")
    easy = CoreConfig.from_names("FCFS", "easy", 200_000)
    assert interchangeable_nodes(workload, easy)
    assert not interchangeable_nodes(workload, CoreConfig.from_names("FCFS", "conservative", 200_000))
    assert not interchangeable_nodes(workload, replace(easy, placement="variability"))
    assert not interchangeable_nodes(_workload("KTH-SP2"), replace(easy, placement="topology"))
    shared = workload.requests.exclusive.copy()
    shared[: len(shared) // 2] = False
    mixed = replace(workload, requests=replace(workload.requests, exclusive=shared))
    assert not interchangeable_nodes(mixed, easy)
    with pytest.raises(RushError, match="kernels"):
        simulate(workload.subset(np.arange(10)), easy, on_nodes="yes")


def test_topology_placement_keeps_every_job_on_valid_nodes() -> None:
    workload = _workload("SDSC-BLUE")
    config = CoreConfig.from_names("FCFS", "easy", 200_000, placement="topology")
    result = simulate(workload, config, on_nodes=True, nodes_per_leaf=16)
    started = result.start >= 0
    assert started.all()
    # Capacity is never exceeded: at every start, running nodes <= the machine's.
    nodes = workload.requests.nodes
    events = sorted(
        [(s, 1, k) for k, s in enumerate(result.start)] + [(e, 0, k) for k, e in enumerate(result.end)]
    )
    busy = 0
    for _, kind, k in events:
        busy += nodes[k] if kind else -nodes[k]
        assert busy <= workload.machine.nodes


def test_a_workload_without_nodes_is_refused_on_nodes() -> None:
    workload = _workload("KTH-SP2")
    bare = workload.__class__(**{**workload.__dict__, "machine": None})
    with pytest.raises(RushError, match="does not say what nodes"):
        simulate(bare, CoreConfig(), on_nodes=True)


def test_cli_simulates_on_nodes_and_checks_its_flags() -> None:
    import json

    from tests.rush_cli import rush

    _workload("SDSC-BLUE")  # skips without the mirror
    on_nodes = rush(
        "simulate", "SDSC-BLUE", "--nodes", "--placement", "topology", "--nodes-per-leaf", "16", "--json"
    )
    assert on_nodes.returncode == 0, on_nodes.stderr
    assert json.loads(on_nodes.stdout)["utilization"] > 0
    wrong = rush("simulate", "SDSC-BLUE", "--placement", "topology")
    assert wrong.returncode == 2 and "add --nodes" in wrong.stderr
    unknown = rush("simulate", "SDSC-BLUE", "--nodes", "--placement", "nearest")
    assert unknown.returncode == 2 and "first-fit, topology, variability" in unknown.stderr
