"""Flux on a fake multi-node instance (issue 20 §2, §4): what rush reads of the nodes, the
jobs' requests and allocations, and rush's module placing multi-node, exclusive and GPU jobs
on exactly the core's nodes, in two queues (rush's partitions).

The instance: four brokers node0..node3 (``resource.config`` with ``noverify``): node0-1 have
4 cores and the property ``batch``, node2-3 have 4 cores, 2 GPUs and the property ``gpu``;
queues ``batch`` and ``gpu`` require those properties (``batch`` is the default).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from rush.core.resources import Request
from rush.rjms.flux import FluxBackend, request_from_jobspec
from tests.flux.module_config import MODULE, write_config
from tests.polling import wait_for

LAYOUT = """
[[resource.config]]
hosts = "node[0-1]"
cores = "0-3"
properties = ["batch"]

[[resource.config]]
hosts = "node[2-3]"
cores = "0-3"
gpus = "0-1"
properties = ["gpu"]
"""
QUEUES = """
[queues.batch]
requires = ["batch"]

[queues.gpu]
requires = ["gpu"]

[policy.jobspec.defaults.system]
queue = "batch"
"""


@pytest.fixture
def nodes_flux(start_flux):
    flux = start_flux(size=4, layout=LAYOUT, config=QUEUES)
    wait_for(
        lambda: flux.run("resource", "list", "-s", "up", "-no", "{nnodes}").stdout.strip() == "4", 60, 0.2
    )
    flux.run("queue", "start", "--all")
    return flux


def ranks_of(flux, job_id: int) -> list[int]:
    r = json.loads(flux.run("job", "info", str(job_id), "R").stdout)
    out = []
    for entry in r["execution"]["R_lite"]:
        for part in entry["rank"].split(","):
            low, _, high = part.partition("-")
            out.extend(range(int(low), int(high or low) + 1))
    return sorted(out)


def submit_raw(flux, jobspec: dict) -> int:
    """``flux job submit`` of a jobspec as given (the validator is off in the test)."""
    out = flux.run("job", "submit", input=json.dumps(jobspec), check=False)
    assert out.returncode == 0, out.stderr
    out = out.stdout.strip()
    return int(flux.run("job", "id", "--to=dec", out).stdout)


def journal(tmp_path: Path) -> list[dict]:
    con = sqlite3.connect(tmp_path / "journal.sqlite")
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("SELECT * FROM decisions ORDER BY id")]
    con.close()
    return rows


def test_the_backend_reads_nodes_requests_and_allocations(nodes_flux):
    flux = nodes_flux  # sched-simple schedules here; rush only reads
    exclusive = flux.submit("-N2", "-t", "5m", "sleep", "300")
    gpu = flux.submit("-q", "gpu", "-n1", "-g1", "-t", "5m", "sleep", "300")
    for job in (exclusive, gpu):
        flux.run("job", "wait-event", "-t", "30", str(job), "start")
    blocked = flux.submit("-q", "gpu", "-N2", "-n2", "-g2", "-t", "1m", "true")
    flux.run("resource", "drain", "3", "rush test")
    backend = FluxBackend(handle=flux.handle())

    def drained():
        state = backend.read_state()
        return state if state.nodes and state.nodes[3].state == "drained" else None

    state = wait_for(drained, 30, 0.2)
    names = [n.name for n in state.nodes]
    assert names == ["node0", "node1", "node2", "node3"]
    assert [(n.cores, n.gpus) for n in state.nodes] == [(4, 0), (4, 0), (4, 2), (4, 2)]
    assert [n.state for n in state.nodes] == ["up", "up", "up", "drained"]
    assert [n.free_cores for n in state.nodes[:2]] == [0, 0]  # the exclusive job holds both
    assert state.nodes[2].free_gpus == 1 and state.nodes[3].free_cores == 0
    jobs = {j.job_id: j for j in state.jobs}
    assert jobs[exclusive].request == Request(2, 1, 0, True, "batch")
    assert jobs[exclusive].allocation == (("node0", 4, 0), ("node1", 4, 0))
    assert jobs[gpu].request == Request(1, 1, 1, False, "gpu")
    assert jobs[gpu].allocation == (("node2", 1, 1),)
    assert jobs[blocked].state == "PENDING" and jobs[blocked].request == Request(2, 1, 2, False, "gpu")
    assert state.free_procs == sum(n.free_cores for n in state.nodes)


def test_the_module_places_multi_node_exclusive_and_gpu_jobs_on_the_cores_nodes(nodes_flux, tmp_path):
    flux = nodes_flux
    flux.use_scheduler(str(MODULE), f"config={write_config(tmp_path, interval=1)}")
    # EASY on nodes: an exclusive job holds node0 for long, a two-node head waits for it; a
    # one-node short job backfills on node1 and a GPU pair runs in the other queue.
    long = flux.submit("-N1", "-n1", "--exclusive", "-t", "10m", "sleep", "600")
    flux.run("job", "wait-event", "-t", "30", str(long), "alloc")
    head = flux.submit("-N2", "-n2", "-t", "5m", "true")
    short = flux.submit("-N1", "-n1", "-t", "1m", "sleep", "600")
    pair = flux.submit("-q", "gpu", "-n2", "-g1", "-t", "1m", "sleep", "600")
    for job in (short, pair):
        flux.run("job", "wait-event", "-t", "30", str(job), "alloc")
    assert ranks_of(flux, long) == [0] and ranks_of(flux, short) == [1] and ranks_of(flux, pair) == [2, 3]
    gpus = flux.run("job", "info", str(pair), "R").stdout
    assert '"gpu"' in gpus
    assert flux.run("job", "wait-event", "-t", "1", str(head), "alloc", check=False).returncode != 0
    estimate = wait_for(
        lambda: flux.run("jobs", "-no", "{annotations.sched.t_estimate}", str(head)).stdout.strip(), 30, 0.2
    )
    assert float(estimate) > 0
    backfill = flux.run("jobs", "-no", "{annotations.sched.backfill}", str(short)).stdout.strip()
    assert backfill == flux.run("job", "id", "--to=f58", str(head)).stdout.strip()
    rows = journal(tmp_path)
    starts = {r["job_id"]: r for r in rows if r["action"] in ("start", "backfill")}
    assert starts[short]["action"] == "backfill" and all(r["status"] == "done" for r in starts.values())
    assert not [r for r in rows if "REFUSED" in (r["answer"] or "")]
    flux.run("cancel", str(long), str(short))
    flux.run("job", "wait-event", "-t", "30", str(head), "alloc")
    assert ranks_of(flux, head) == [0, 1]


def test_infeasible_and_hostile_requests_are_denied_with_a_reason(nodes_flux, tmp_path):
    flux = nodes_flux
    flux.module("reload", "-f", "job-ingest", "disable-validator")
    flux.use_scheduler(str(MODULE), f"config={write_config(tmp_path, interval=1)}")
    gpu_in_batch = flux.submit("-n1", "-g1", "-t", "1m", "true")  # batch nodes have no GPU
    too_many = flux.submit("-q", "gpu", "-N3", "-t", "1m", "true")  # the gpu queue has 2 nodes
    spec = json.loads(flux.run("run", "--dry-run", "-n1", "-t", "1m", "true").stdout)
    spec["attributes"]["system"]["queue"] = "batch"  # no frobnicator without the validator
    deep = json.loads(json.dumps(spec))
    vertex = deep["resources"][0]
    for _ in range(150):  # deeper than Flux parses (100)
        vertex = {"type": "socket", "count": 1, "with": [vertex]}
    deep["resources"] = [vertex]
    huge = json.loads(json.dumps(spec))
    huge["resources"][0]["count"] = 10**6  # the client refuses 2**40 itself
    hostile = [submit_raw(flux, s) for s in (deep, huge)]
    for job in (gpu_in_batch, too_many, *hostile):
        flux.run("job", "wait-event", "-t", "30", str(job), "exception")
        log = flux.run("job", "eventlog", str(job)).stdout
        assert "alloc" not in log.split("exception")[0]
    assert "gpu" in flux.run("job", "eventlog", str(gpu_in_batch)).stdout.lower()
    # Three GPU slots: rush reads one node each (three GPU nodes; the queue has two), Flux
    # could pack them on two: not denied on rush's reading, left queued, the disagreement logged.
    three = flux.submit("-q", "gpu", "-n3", "-g1", "-t", "1m", "true")
    ok = flux.submit("-n1", "-t", "1m", "true")
    flux.wait_job(ok)
    con = sqlite3.connect(tmp_path / "journal.sqlite")
    events = wait_for(
        lambda: con.execute("SELECT message FROM events WHERE kind = 'infeasible'").fetchall(), 30, 0.2
    )
    con.close()
    assert str(three) in events[0][0] and "left queued" in events[0][0]
    assert flux.run("jobs", "-no", "{state}", str(three)).stdout.strip() == "SCHED"
    assert "sched-rush" in flux.module("list").stdout
    flux.run("cancel", str(three))


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ({}, "no resources"),
        ({"resources": "x"}, "no resources"),
        ({"resources": [{"type": "slot", "count": "abc", "with": [{"type": "core"}]}]}, "invalid literal"),
        ({"resources": [{"type": "slot", "count": -1, "with": [{"type": "core"}]}]}, "integer 1.."),
        ({"resources": [{"type": "slot", "count": 2**40, "with": [{"type": "core"}]}]}, "integer 1.."),
        ({"resources": [{"type": "slot", "count": 1, "with": "core"}]}, "not a list"),
        ({"resources": [{"type": "node", "count": 1}]}, "no slot with cores"),
        ({"resources": [7]}, "not an object"),
    ],
)
def test_a_malformed_jobspec_is_a_value_error_never_a_crash(spec, why):
    with pytest.raises(ValueError, match=why):
        request_from_jobspec(spec)


def test_deep_jobspecs_are_refused():
    vertex = {"type": "slot", "count": 1, "with": [{"type": "core", "count": 1}]}
    for _ in range(120):
        vertex = {"type": "socket", "count": 1, "with": [vertex]}
    with pytest.raises(ValueError, match="nested deeper"):
        request_from_jobspec({"resources": [vertex]})


def test_sockets_between_node_and_slot_multiply_the_slots():
    """A level Fluxion accepts and flux-core's own schedulers do not (sockets): 2 nodes, each
    2 sockets of 3 slots of 4 cores and 1 GPU, is 24 cores and 6 GPUs per node."""
    slot = {
        "type": "slot",
        "count": 3,
        "label": "task",
        "with": [{"type": "core", "count": 4}, {"type": "gpu", "count": 1}],
    }
    spec = {
        "resources": [{"type": "node", "count": 2, "with": [{"type": "socket", "count": 2, "with": [slot]}]}]
    }
    request = request_from_jobspec(spec)
    assert (request.nodes, request.cores_per_node, request.gpus_per_node) == (2, 24, 6)
    # Without a node level: 2 sockets x 3 GPU slots, one node per slot (as -n6 -c4 -g1).
    loose = request_from_jobspec({"resources": [{"type": "socket", "count": 2, "with": [slot]}]})
    assert (loose.nodes, loose.cores_per_node, loose.gpus_per_node) == (6, 4, 1)
