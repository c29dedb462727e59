"""Slurm's nodes, requests and allocations as rush reads them (rush.rjms.slurm_json), on the
shapes of 22.05 (v0.0.38) and 25.11 (v0.0.41+), and on hostile values: bounded work and a
clear error, never a crash. The live counterpart is tests/slurm/test_nodes_live.py."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rush.core.resources import Request
from rush.errors import RJMSError
from rush.rjms import slurm_json
from rush.rjms.base import get_backend

RECORDED = Path(__file__).resolve().parents[1] / "slurm" / "recorded"


def n(value: int) -> dict:
    """A v0.0.39+ count."""
    return {"set": True, "infinite": False, "number": value}


def job(**fields) -> dict:
    """A minimal 25.11 job record (pending unless ``job_state`` says otherwise)."""
    return {
        "job_id": 7,
        "job_state": ["PENDING"],
        "submit_time": n(1_700_000_000),
        "partition": "batch",
    } | fields


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("n[1-3]", ["n1", "n2", "n3"]),
        ("n[1-2,7],x", ["n1", "n2", "n7", "x"]),
        ("gpu[08-10]", ["gpu08", "gpu09", "gpu10"]),
        ("r[1-2]-n[1-2]", ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]),
        ("", []),
    ],
)
def test_host_lists(text, names):
    assert slurm_json.hostlist(text) == names


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("n[1-99999999999]", "more than"),
        ("r[1-5000]-n[1-5000]", "more than"),
        ("n[1-3", "malformed"),
        ("n[a-b]", "malformed"),
        ("n[5-1]", "reversed"),
        (["n1"], "not a host list"),
    ],
)
def test_hostile_host_lists_are_refused_quickly(text, message):
    with pytest.raises(ValueError, match=message):
        slurm_json.hostlist(text, limit=1_000_000)


@pytest.mark.parametrize(
    ("text", "gpus"),
    [
        ("gpu:2", 2),
        ("gpu:a100:2(S:0-1)", 2),
        ("gpu:1(IDX:0),mps:100(IDX:0)", 1),
        ("gpu:a100:1(IDX:0,2),gpu:v100:3", 4),
        ("gres/gpu:2", 2),
        ("gres/gpu=1", 1),
        ("gres:gpu:2", 2),
        ("gpu", 1),
        ("gpu:0(IDX:N/A)", 0),
        ("mps:100", 0),
        ("", 0),
        (None, 0),
    ],
)
def test_gpu_counts_in_every_shape(text, gpus):
    assert slurm_json.gres_gpus(text) == gpus


@pytest.mark.parametrize("text", ["gpu:99999999999", 5, "gpu:1," * 5000])
def test_hostile_gres_is_refused(text):
    with pytest.raises(ValueError):
        slurm_json.gres_gpus(text)


@pytest.mark.parametrize(
    ("fields", "request_"),
    [
        # -n 5: Slurm estimates two nodes, the user asked for none.
        (
            {"cpus": n(5), "node_count": n(2), "tres_req_str": "cpu=5,node=1"},
            Request(0, 5, 0, False, "batch"),
        ),
        (
            {"cpus": n(4), "node_count": n(2), "tres_req_str": "cpu=4,node=2"},
            Request(2, 2, 0, False, "batch"),
        ),
        # -N 2 -n 3: cores per node rounded up.
        (
            {"cpus": n(3), "node_count": n(2), "tres_req_str": "cpu=3,node=2"},
            Request(2, 2, 0, False, "batch"),
        ),
        ({"cpus": n(2), "shared": ["none"], "tres_req_str": "cpu=2,node=1"}, Request(1, 2, 0, True, "batch")),
        ({"cpus": 2, "shared": "none", "node_count": 1}, Request(1, 2, 0, True, "batch")),  # 22.05
        (
            {"cpus": n(1), "exclusive": ["true"], "node_count": n(1)},
            Request(1, 1, 0, True, "batch"),
        ),  # v0.0.41
        ({"cpus": n(1), "tres_per_node": "gres/gpu:1", "partition": "gpu"}, Request(1, 1, 1, False, "gpu")),
        ({"cpus": n(1), "tres_per_job": "gres/gpu:3", "node_count": n(2)}, Request(2, 1, 2, False, "batch")),
        ({"cpus": n(3), "tasks": n(3), "tres_per_task": "gres/gpu=1"}, Request(1, 3, 3, False, "batch")),
        ({"cpus": n(1), "partition": "batch,gpu"}, Request(0, 1, 0, False, "batch")),
    ],
)
def test_requests(fields, request_):
    assert slurm_json.parse_job(job(**fields)).request == request_


def test_huge_node_count_is_a_clear_error():
    with pytest.raises(ValueError, match="more than"):
        slurm_json.parse_job(job(cpus=n(1), tres_req_str=f"cpu=1,node={2**31}"))


def test_allocations_of_both_shapes():
    running = {"job_state": ["RUNNING"], "start_time": n(1_700_000_100)}
    record = job(
        **running,
        cpus=n(8),
        node_count=n(2),
        tres_per_node="gres/gpu:2",
        gres_detail=["gpu:2(IDX:0-1)", "gpu:2(IDX:0-1)"],
        job_resources={
            "nodes": {"allocation": [{"name": "n7", "cpus": {"count": 4}}, {"name": "n8", "cpus": 4}]}
        },
    )
    assert slurm_json.parse_job(record).allocation == (("n7", 4, 2), ("n8", 4, 2))
    # gres_detail that does not match the nodes: the request's GPUs per node.
    record["gres_detail"] = ["gpu:2"]
    assert slurm_json.parse_job(record).allocation == (("n7", 4, 2), ("n8", 4, 2))
    # 22.05: the core map, scaled to the job's CPUs (allocated_cpus is 1 for an exclusive job).
    sockets = {str(i): {"cores": {"0": "allocated"}} for i in range(32)}
    legacy = job(
        job_state="RUNNING",
        start_time=1_700_000_100,
        cpus=64,
        job_resources={"allocated_cpus": 1, "allocated_nodes": [{"nodename": "vm", "sockets": sockets}]},
    )
    assert slurm_json.parse_job(legacy).allocation == (("vm", 64, 0),)
    # A pending job has no allocation, whatever its record holds.
    assert slurm_json.parse_job(job(cpus=n(1), job_resources=record["job_resources"])).allocation == ()


@pytest.mark.parametrize(
    "resources",
    [
        {"nodes": {"allocation": [{"name": "n1", "cpus": 1}] * (slurm_json.MAX_NODES + 1)}},
        {"nodes": {"allocation": [{"cpus": 1}]}},
        {"nodes": {"allocation": [{"name": "n1", "cpus": -4}]}},
        {"allocated_nodes": [{"sockets": {}}]},
        {"allocated_nodes": "n1"},
    ],
)
def test_hostile_allocations_are_refused(resources):
    record = job(job_state=["RUNNING"], start_time=n(1_700_000_100), cpus=n(1), job_resources=resources)
    with pytest.raises(ValueError):
        slurm_json.parse_job(record)


@pytest.mark.parametrize(
    ("state", "flags", "expected"),
    [
        (["IDLE"], [], "up"),
        (["MIXED", "PLANNED"], [], "up"),
        (["IDLE", "DRAIN"], [], "drained"),
        (["ALLOCATED", "DRAIN"], [], "drained"),
        ("drained", [], "drained"),  # 22.05
        ("idle", ["DRAIN"], "drained"),
        (["DOWN"], [], "down"),
        (["IDLE", "NOT_RESPONDING"], [], "down"),
        (["DOWN", "DRAIN"], [], "down"),
        (["IDLE", "MAINTENANCE"], [], "up"),
    ],
)
def test_node_states(state, flags, expected):
    record = {"name": "n1", "cpus": 4, "alloc_cpus": 1, "state": state, "state_flags": flags, "gres": "gpu:2"}
    node = slurm_json.parse_node(record, {})
    assert node.state == expected
    usable = not slurm_json.node_states(record) & slurm_json.UNUSABLE_NODE
    assert (node.free_cores, node.free_gpus) == ((3, 2) if usable else (0, 0))


def test_leaf_switches_from_scontrol_show_topology():
    text = (
        "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-4]\n"
        "SwitchName=s2 Level=0 LinkSpeed=1 Nodes=n[5-8]\n"
        "SwitchName=s0 Level=1 LinkSpeed=1 Nodes=n[1-8] Switches=s1,s2\n"
    )
    leaves = slurm_json.leaf_switches(text)
    assert leaves == {f"n{i}": 0 if i <= 4 else 1 for i in range(1, 9)}
    assert slurm_json.leaf_switches("") == {}
    with pytest.raises(RJMSError, match="more than"):
        slurm_json.leaf_switches("SwitchName=s1 Level=0 Nodes=n[1-99999999999]")


def test_pod_switches_from_scontrol_show_topology():
    # Two pods (level-1 switches p0, p1) of two leaves each, under a top switch.
    text = "".join(
        f"SwitchName=s{k} Level=0 LinkSpeed=1 Nodes=n[{2 * k + 1}-{2 * k + 2}]\n" for k in range(4)
    )
    text += "SwitchName=p0 Level=1 Switches=s[0-1]\nSwitchName=p1 Level=1 Switches=s2,s3\n"
    text += "SwitchName=top Level=2 Switches=p[0-1]\n"
    pods = slurm_json.pod_switches(text)
    assert pods == {f"n{i}": 0 if i <= 4 else 1 for i in range(1, 9)}
    records = [{"name": f"n{i}", "cpus": 4, "partitions": ["batch"]} for i in range(1, 9)]
    nodes = slurm_json.node_list(records, (), slurm_json.leaf_switches(text), pods)
    assert [(n.leaf, n.pod) for n in nodes] == [(i // 2, i // 4) for i in range(8)]
    # One level (leaves only): every node in pod 0.
    assert slurm_json.pod_switches("SwitchName=s1 Level=0 Nodes=n[1-4]\n") == {}


def test_recorded_answers_give_nodes_and_allocations():
    """The recorded single-node answers of both versions: one node, the running job's CPUs on it."""
    for version in ("22.05", "25.11"):
        jobs = json.loads((RECORDED / version / "commands" / "jobs.json").read_text())["jobs"]
        nodes = json.loads((RECORDED / version / "commands" / "nodes.json").read_text())["nodes"]
        [node] = slurm_json.node_list(nodes)
        running = [slurm_json.parse_job(r) for r in jobs if slurm_json.job_state(r["job_state"]) == "RUNNING"]
        assert [j.allocation for j in running] == [((node.name, 60, 0),)], version
        assert node.free_cores == node.cores - 60


def test_hostile_topology_through_the_backend_names_the_place(tmp_path):
    """A topology whose host list would name billions of nodes fails the read with a clear
    RJMSError, as any hostile node record does."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    jobs, nodes = (RECORDED / "25.11" / "commands" / f"{name}.json" for name in ("jobs", "nodes"))
    (bin_dir / "squeue").write_text(f"#!/bin/sh\ncat '{jobs}'\n")
    (bin_dir / "scontrol").write_text(
        "#!/bin/sh\n"
        'if [ "$2" = topology ]; then echo "SwitchName=s1 Level=0 Nodes=n[1-99999999999]"; exit 0; fi\n'
        f"cat '{nodes}'\n"
    )
    for tool in ("squeue", "scontrol"):
        (bin_dir / tool).chmod(0o755)
    with pytest.raises(RJMSError, match="more than") as caught:
        get_backend("slurm", bin_dir=str(bin_dir)).read_state()
    assert caught.value.where == "scontrol show topology, line 1"


# -- the RJMS's own priority (RJMSJob.priority, the RJMS policy's key) -----------------------
@pytest.mark.parametrize(
    ("value", "priority"),
    [
        (n(4_294_000), 4_294_000.0),  # v0.0.39+
        (12_345, 12_345.0),  # v0.0.38: a plain number
        (n(0), 0.0),  # a held job
        ({"set": False, "infinite": False, "number": 0}, 0.0),
        (None, 0.0),
        ({"set": True, "infinite": True, "number": 0}, 2.0**32 - 1),
        (0xFFFFFFFE, 2.0**32 - 1),  # NO_VAL as v0.0.38 prints it: still finite, still first
    ],
)
def test_job_priority_in_every_shape(value, priority):
    parsed = slurm_json.parse_job(job(priority=value) if value is not None else job())
    assert parsed.priority == priority and math.isfinite(parsed.priority)


@pytest.mark.parametrize("value", [-1, 2**40, "high", n(-5), True, float("nan")])
def test_hostile_job_priority_is_refused(value):
    with pytest.raises(ValueError, match="priority"):
        slurm_json.parse_job(job(priority=value))


def test_pyslurm_priority_maps_to_the_json_shape():
    """pyslurm's Job.priority: an int, None (NO_VAL) or "UNLIMITED" (INFINITE)."""
    from rush.rjms.slurm_pyslurm import _priority

    for given, expected in ((7, 7.0), (None, 0.0), ("UNLIMITED", 2.0**32 - 1)):
        assert slurm_json.parse_job(job(priority=_priority(given))).priority == expected


def test_recorded_priorities_and_the_rjms_policy_order():
    """Both versions' recorded answers carry each job's priority (0 for the held job); the
    planner hands it to the core, whose RJMS policy orders by it, highest first."""
    from rush.core.config import CoreConfig
    from rush.core.schedule import schedule
    from rush.planner.snapshot_builder import SnapshotBuilder
    from rush.rjms.base import ClusterState

    for version in ("22.05", "25.11"):
        records = json.loads((RECORDED / version / "commands" / "jobs.json").read_text())["jobs"]
        parsed = {j.job_id: j for j in map(slurm_json.parse_job, records)}
        held = [j for j in parsed.values() if j.held]
        assert held and {j.priority for j in held} == {0.0}, version
        assert all(j.priority == 1.0 for j in parsed.values() if not j.held), version
    # Three pending jobs whose Slurm priorities disagree with their submit order.
    pending = [
        slurm_json.parse_job(job(job_id=k, submit_time=n(1_700_000_000 + k), priority=n(p), cpus=n(4)))
        for k, p in ((1, 10), (2, 900), (3, 50))
    ]
    state = ClusterState(taken_at=1_700_000_100.0, total_procs=4, free_procs=0, jobs=tuple(pending))
    snapshot = SnapshotBuilder().build(state, {}).snapshot
    assert [p.rjms_priority for p in snapshot.pending] == [10.0, 900.0, 50.0]
    assert schedule(snapshot, CoreConfig.from_names("RJMS", "easy", None)).order == [2, 3, 1]


def test_hostile_priority_through_the_backend_names_the_place(tmp_path):
    """A job record whose priority is garbage fails the read with a clear RJMSError."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    data = json.loads((RECORDED / "25.11" / "commands" / "jobs.json").read_text())
    data["jobs"][1]["priority"] = {"set": True, "infinite": False, "number": -3}
    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps(data))
    nodes = RECORDED / "25.11" / "commands" / "nodes.json"
    (bin_dir / "squeue").write_text(f"#!/bin/sh\ncat '{jobs}'\n")
    (bin_dir / "scontrol").write_text(f"#!/bin/sh\ncat '{nodes}'\n")
    for tool in ("squeue", "scontrol"):
        (bin_dir / tool).chmod(0o755)
    with pytest.raises(RJMSError, match="priority") as caught:
        get_backend("slurm", bin_dir=str(bin_dir)).read_state()
    assert caught.value.where.startswith("slurm")
