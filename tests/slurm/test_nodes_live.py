"""What the Slurm backends report about nodes, requests and allocations, on real clusters.

The multi-node cluster (``slurm_nodes``, tests/conftest.py; layout in tests/slurm/cluster.py:
n1 .. n8 of 4 CPUs, ``batch`` = n[1-6], ``gpu`` = n[5-8] with 2 GPUs each, leaf switches
n[1-4] and n[5-8], n4 drained) is read through every backend kind that runs here: Slurm's
commands, slurmrestd (negotiated, and pinned to its oldest version v0.0.41) and pyslurm. Each
must give the same :class:`Request`, allocation and :class:`Node` list. The single-node
clusters of both installs (``slurm``) check the same fields on 22.05's JSON shapes.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

import pytest

from rush.core.resources import Node, Request
from rush.rjms.base import ClusterState, RJMSBackend, RJMSJob, get_backend
from tests import polling
from tests.slurm.cluster import DRAIN_REASON, MULTI_NODE

pytestmark = pytest.mark.slurm

BATCH = {"n1", "n2", "n3", "n4", "n5", "n6"}
GPU = {"n5", "n6", "n7", "n8"}
CPUS, GPUS = MULTI_NODE.cpus, MULTI_NODE.gpus_per_node
SLEEP = "sleep 300"


def readers(cluster) -> dict[str, RJMSBackend]:
    """Every backend kind that can read this cluster here, by name."""
    found = {
        "commands": get_backend("slurm", **cluster.options()),
        "rest": get_backend("slurm", **cluster.options(**cluster.rest_options(), fallback=False)),
    }
    if cluster.name == "25.11":  # its oldest OpenAPI beside the negotiated newest
        found["rest-v0.0.41"] = get_backend(
            "slurm", **cluster.options(**cluster.rest_options(), fallback=False, rest_api="v0.0.41")
        )
    if cluster.name == "25.11" and importlib.util.find_spec("pyslurm") is not None:
        found["pyslurm"] = get_backend("pyslurm", **cluster.options())
    return found


def read_all(cluster) -> dict[str, ClusterState]:
    states = {}
    for kind, backend in readers(cluster).items():
        states[kind] = backend.read_state()
        if kind.startswith("rest"):
            assert backend.last_source == "rest", f"{kind} read through {backend.last_source}"
    return states


def jobs_by_id(state: ClusterState) -> dict[int, RJMSJob]:
    return {job.job_id: job for job in state.jobs}


def running(cluster, job_ids: list[int]) -> Callable[[], ClusterState | None]:
    """A poll: the commands' read once every job in ``job_ids`` runs, else None."""
    backend = get_backend("slurm", **cluster.options())

    def poll() -> ClusterState | None:
        state = backend.read_state()
        jobs = jobs_by_id(state)
        if all(j in jobs and jobs[j].state == "RUNNING" and jobs[j].allocation for j in job_ids):
            return state
        return None

    return poll


def assert_nodes_account_for_jobs(state: ClusterState) -> None:
    """Free CPUs and GPUs on each usable node are its size minus what the running jobs hold."""
    held: dict[str, list[int]] = {}
    for job in state.running:
        for name, cores, gpus in job.allocation:
            used = held.setdefault(name, [0, 0])
            used[0] += cores
            used[1] += gpus
    for node in state.nodes:
        cores, gpus = held.get(node.name, [0, 0])
        if node.state == "up":
            assert (node.free_cores, node.free_gpus) == (node.cores - cores, node.gpus - gpus), node
        else:
            assert (node.free_cores, node.free_gpus) == (0, 0), node
    assert state.free_procs == sum(node.free_cores or 0 for node in state.nodes)


def test_idle_cluster_nodes(nodes_cluster) -> None:
    """Eight nodes with their CPUs, GPUs, memory, partitions, leaf switch; n4 drained."""
    expected = tuple(
        Node(
            name=name,
            cores=CPUS,
            gpus=GPUS if name in GPU else 0,
            memory_mb=MULTI_NODE.memory_mb,
            state="drained" if name == "n4" else "up",
            partitions=tuple(p for p, members in (("batch", BATCH), ("gpu", GPU)) if name in members),
            leaf=0 if name in {"n1", "n2", "n3", "n4"} else 1,
            free_cores=0 if name == "n4" else CPUS,
            free_gpus=GPUS if name in GPU else 0,
        )
        for name in MULTI_NODE.nodes
    )
    for kind, state in read_all(nodes_cluster).items():
        assert state.nodes == expected, kind
        assert state.total_procs == 8 * CPUS and state.free_procs == 7 * CPUS, kind
        assert state.partitions == ("batch", "gpu"), kind
    reason = nodes_cluster.run(nodes_cluster.tool("sinfo"), "-h", "-n", "n4", "-o", "%E").stdout.strip()
    assert reason == DRAIN_REASON
    gpu_only = readers(nodes_cluster)["commands"].read_state(["gpu"])
    assert [node.name for node in gpu_only.nodes] == sorted(GPU)


def test_multi_node_exclusive_and_gpu_jobs(nodes_cluster) -> None:
    """Jobs in both partitions: two nodes shared, one whole node, one GPU, two whole GPU nodes,
    and a pending job bigger than what is free; every backend reads the same requests,
    allocations and nodes, and the nodes' free counts account for the allocations."""
    submit = nodes_cluster.submit
    shared2 = submit("-p", "batch", "-N", "2", "-n", "2", "-t", "5", "--wrap", SLEEP)
    whole = submit("-p", "batch", "-N", "1", "--exclusive", "-t", "5", "--wrap", SLEEP)
    one_gpu = submit("-p", "gpu", "--gres=gpu:1", "-n", "1", "-t", "5", "--wrap", SLEEP)
    gpu_nodes = submit("-p", "gpu", "-N", "2", "--gres=gpu:2", "--exclusive", "-t", "5", "--wrap", SLEEP)
    polling.wait_for(running(nodes_cluster, [shared2, whole, one_gpu, gpu_nodes]), timeout=60, step=0.3)
    # Submitted once the others run: the gpu partition has no four nodes with 2 GPUs free.
    waiting = submit("-p", "gpu", "-N", "4", "--gres=gpu:2", "-t", "5", "--wrap", SLEEP)

    states = read_all(nodes_cluster)
    reference = states["commands"]
    for kind, state in states.items():
        jobs = jobs_by_id(state)
        assert jobs[shared2].request == Request(2, 1, 0, False, "batch"), kind
        assert jobs[whole].request == Request(1, 1, 0, True, "batch"), kind
        assert jobs[one_gpu].request == Request(1, 1, 1, False, "gpu"), kind
        assert jobs[gpu_nodes].request == Request(2, 1, 2, True, "gpu"), kind
        assert jobs[waiting].state == "PENDING" and jobs[waiting].allocation == (), kind
        assert jobs[waiting].request == Request(4, 1, 2, False, "gpu"), kind

        names = [name for name, _, _ in jobs[shared2].allocation]
        assert len(set(names)) == 2 and set(names) <= BATCH - {"n4"}, kind
        assert all(cores == 1 and gpus == 0 for _, cores, gpus in jobs[shared2].allocation), kind
        [(node, cores, gpus)] = jobs[whole].allocation
        assert node in BATCH - {"n4"} and (cores, gpus) == (CPUS, 0), kind
        [(node, cores, gpus)] = jobs[one_gpu].allocation
        assert node in GPU and (cores, gpus) == (1, 1), kind
        assert len(jobs[gpu_nodes].allocation) == 2, kind
        assert all(n in GPU and (c, g) == (CPUS, GPUS) for n, c, g in jobs[gpu_nodes].allocation), kind

        assert_nodes_account_for_jobs(state)
        # The same reading through every path.
        assert state.nodes == reference.nodes, kind
        assert [(j.job_id, j.request, j.allocation) for j in state.jobs] == [
            (j.job_id, j.request, j.allocation) for j in reference.jobs
        ], kind


def test_drained_node_takes_no_job(nodes_cluster) -> None:
    """A job pinned to the drained n4 waits; n4 stays drained with nothing free."""
    pinned = nodes_cluster.submit("-p", "batch", "-w", "n4", "-n", "1", "-t", "5", "--wrap", SLEEP)
    for kind, state in read_all(nodes_cluster).items():
        job = jobs_by_id(state)[pinned]
        assert job.state == "PENDING" and job.allocation == (), kind
        assert job.request == Request(0, 1, 0, False, "batch"), kind
        [n4] = [node for node in state.nodes if node.name == "n4"]
        assert (n4.state, n4.free_cores) == ("drained", 0), kind


def test_requests_beyond_a_partition(nodes_cluster) -> None:
    """More nodes than a partition has stays pending with Slurm's reason and reads as asked;
    more GPUs per node than any node has is refused by sbatch. No read fails."""
    too_many_nodes = nodes_cluster.submit("-p", "gpu", "-N", "9", "-t", "5", "--wrap", SLEEP)
    # Five usable nodes in batch (n4 is drained): six waits.
    six = nodes_cluster.submit("-p", "batch", "-N", "6", "-t", "5", "--wrap", SLEEP)
    refused = nodes_cluster.run(
        nodes_cluster.tool("sbatch"), "-p", "gpu", "--gres=gpu:3", "-t", "5", "--wrap", SLEEP, check=False
    )
    assert refused.returncode != 0 and "node configuration is not available" in refused.stderr

    def reasons() -> dict[int, RJMSJob] | None:
        jobs = jobs_by_id(readers(nodes_cluster)["commands"].read_state())
        done = all(jobs[j].reason not in ("", "None") for j in (too_many_nodes, six))
        return jobs if done else None

    jobs = polling.wait_for(reasons, timeout=30, step=0.3)
    # Slurm's first word is PartitionConfig, its scheduler's later one PartitionNodeLimit.
    assert jobs[too_many_nodes].reason in ("PartitionConfig", "PartitionNodeLimit")
    for kind, state in read_all(nodes_cluster).items():
        found = jobs_by_id(state)
        assert found[too_many_nodes].request == Request(9, 1, 0, False, "gpu"), kind
        assert found[six].request == Request(6, 1, 0, False, "batch"), kind
        assert found[too_many_nodes].state == found[six].state == "PENDING", kind


def test_single_node_cluster_nodes(slurm) -> None:
    """The single-node clusters (22.05's JSON shapes too): one node, a running job's
    allocation on it, an exclusive job's whole node."""
    job = slurm.submit("-n", "2", "-t", "5", "--wrap", SLEEP)
    state = polling.wait_for(running(slurm, [job]), timeout=60, step=0.3)
    for kind, state in read_all(slurm).items():
        [node] = state.nodes
        assert (node.name, node.cores, node.state, node.partitions) == (
            slurm.node,
            slurm.cpus,
            "up",
            ("debug",),
        )
        found = jobs_by_id(state)[job]
        assert found.allocation == ((slurm.node, 2, 0),), kind
        assert found.request == Request(0, 2, 0, False, "debug"), kind
        assert node.free_cores == slurm.cpus - 2 and state.free_procs == node.free_cores, kind
    slurm.cancel_all()
    whole = slurm.submit("--exclusive", "-n", "1", "-t", "5", "--wrap", SLEEP)
    state = polling.wait_for(running(slurm, [whole]), timeout=60, step=0.3)
    for kind, state in read_all(slurm).items():
        found = jobs_by_id(state)[whole]
        assert found.request is not None and found.request.exclusive, kind
        assert found.allocation == ((slurm.node, slurm.cpus, 0),), kind
        assert state.nodes[0].free_cores == 0, kind


def test_node_down_under_a_running_job(nodes_cluster) -> None:
    """An admin sets a node DOWN under a running job: Slurm ends or requeues the job, the node
    reads down with nothing free, and every read still succeeds. The node is resumed after."""
    scontrol = nodes_cluster.tool("scontrol")
    job = nodes_cluster.submit("-p", "batch", "-w", "n3", "-n", "2", "-t", "5", "--wrap", SLEEP)
    polling.wait_for(running(nodes_cluster, [job]), timeout=60, step=0.3)
    try:
        nodes_cluster.run(scontrol, "update", "NodeName=n3", "State=DOWN", "Reason=rush-test-down")
        commands = readers(nodes_cluster)["commands"]

        def off_n3() -> ClusterState | None:
            state = commands.read_state()
            on_n3 = [j for j in state.running if any(name == "n3" for name, _, _ in j.allocation)]
            return None if on_n3 else state

        polling.wait_for(off_n3, timeout=60, step=0.3)

        def reads_while_down() -> dict[str, ClusterState] | None:
            # The test cluster has ReturnToService=2: slurmctld asks DOWN nodes to register and
            # n3 comes back after a ping interval, which a loaded machine can outlast. Set it
            # down (again), read, and keep the reads only if it was still down after them.
            nodes_cluster.run(
                scontrol, "update", "NodeName=n3", "State=DOWN", "Reason=rush-test-down", check=False
            )
            reads = read_all(nodes_cluster)
            state = nodes_cluster.run(nodes_cluster.tool("sinfo"), "-h", "-n", "n3", "-o", "%T", check=False)
            return reads if state.stdout.strip().startswith("down") else None

        for kind, state in polling.wait_for(reads_while_down, timeout=120, step=0.5).items():
            [n3] = [node for node in state.nodes if node.name == "n3"]
            assert (n3.state, n3.free_cores) == ("down", 0), kind
            assert_nodes_account_for_jobs(state)
    finally:
        nodes_cluster.cancel_all()
        # RESUME fails ("invalid node state transition") when n3 has already returned by itself.
        nodes_cluster.run(scontrol, "update", "NodeName=n3", "State=RESUME", check=False)
        polling.wait_for(nodes_cluster.node_up("n3"), timeout=60, step=0.3)
