"""Issue 30's bad input beside Fluxion (flux-sched 0.54), on REAL Flux instances of fake nodes:

* jobspecs Fluxion accepts and matches otherwise than flux-core's pool (nodes inside a slot,
  whole nodes inside a slot, exclusive slots without a node level): rush's backend reads them
  as the instance's scheduler allocates them, so that the core's "would start now" (and so a
  RUSH hold) is Fluxion's;
* Fluxion reordering a job rush expected to start (a constraint rush does not read), leaving
  it pending, or refusing it outright: the next cycle journals it with the job named (once per
  episode for a job left pending), the daemon goes on, each job starts once;
* a jobspec Flux accepts and rush cannot read: journaled once, naming the job.

rush's priority mode: its jobtap plugin (``gate = true``) and ``rush daemon``'s cycles, as in
tests/flux/test_rush_on_fluxion.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from rush.cli.explain import explain_text
from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from rush.core.priority_values import LOWEST_VALUE
from rush.core.resources import Request
from rush.daemon.service import Daemon
from rush.planner.config import parse_config
from rush.planner.journal_query import JournalQuery
from rush.planner.start_order import pending_line, released_pending_line
from rush.rjms.flux import FluxBackend, request_from_jobspec
from tests.flux import fluxion, plugin_build
from tests.flux.instance import FluxInstance
from tests.flux.live_rush import started, state
from tests.flux.plugin_build import jobtap_config, priorities, urgencies, wait_for

pytestmark = pytest.mark.flux


def two_nodes(instances: list, workdir: Path, plugin: Path, match: str, layout: str = "", gate: bool = True):
    """Two fake nodes of 4 cores under Fluxion (``queue-policy=easy``); rush's plugin gated."""
    config = jobtap_config(plugin, "gate = true") if gate else ""
    inst = FluxInstance(workdir, size=2, cores=4, layout=layout, config=config)
    instances.append(inst)
    inst.start()
    fluxion.use_fluxion(inst, "easy", match)
    return inst


def core(count: int) -> dict[str, Any]:
    return {"type": "core", "count": count}


def slot(count: int, *inside: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "slot", "label": "task", "count": count, "with": list(inside), **extra}


def node(count: int, *inside: dict[str, Any]) -> dict[str, Any]:
    return {"type": "node", "count": count, **({"with": list(inside)} if inside else {})}


# rush's reading of each (as Fluxion allocates it) and flux-core's pool's, which rush's
# backend gave under Fluxion before it read as Fluxion does.
NODES_IN_A_SLOT = [slot(2, node(1, core(1)))]
EXCLUSIVE_SLOTS = [slot(2, core(1), exclusive=True)]


def submit_jobspec(
    inst: FluxInstance, resources: list, *command: str, tags: dict | None = None, urgency: int = 16
) -> int:
    system: dict[str, Any] = {
        "duration": 600.0,
        "cwd": str(inst.workdir),
        "environment": {"PATH": "/usr/bin:/bin"},
    }
    if tags:
        system["rush"] = tags
    spec = {
        "version": 1,
        "resources": resources,
        "tasks": [{"command": list(command), "slot": "task", "count": {"per_slot": 1}}],
        "attributes": {"system": system},
    }
    jobid = inst.run("job", "submit", f"--urgency={urgency}", input=json.dumps(spec)).stdout.strip()
    return int(inst.run("job", "id", "--to=dec", jobid).stdout.strip())


def allocated(inst: FluxInstance, job_id: int) -> list[tuple[str, str]]:
    r = json.loads(inst.run("job", "info", str(job_id), "R").stdout)
    return [(e["rank"], e["children"].get("core", "")) for e in r["execution"]["R_lite"]]


def read(inst: FluxInstance, job_id: int) -> Request | None:
    [job] = [j for j in FluxBackend(uri=inst.uri).read_state().jobs if j.job_id == job_id]
    return job.request


def test_nodes_inside_a_slot_read_as_the_whole_nodes_fluxion_takes(instances, tmp_path, plugin):
    """``slot[2] > node[1] > core[1]``: Fluxion's R lists one core of each of two nodes, but it
    takes the nodes whole: a job asking for one core on a node waits until the job ends. rush
    reads two whole nodes (flux-core's pool: two cores on each of two nodes, not whole)."""
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonode", gate=False)
    job = submit_jobspec(inst, NODES_IN_A_SLOT, "sleep", "300")
    wait_for(lambda: started(inst, job), timeout=60)
    assert allocated(inst, job) == [("0-1", "0")]
    assert (
        read(inst, job)
        == Request(2, 1, 0, True)
        != request_from_jobspec(json.loads(inst.run("job", "info", str(job), "jobspec").stdout))
    )
    beside = inst.submit("-N1", "-n1", "true")
    inst.run("cancel", str(job))
    inst.wait_job(job)
    inst.wait_job(beside)  # it started only once the whole nodes were free again
    assert event_time(inst, beside, "alloc") > event_time(inst, job, "free")


def test_exclusive_slots_read_as_the_cores_fluxion_packs(instances, tmp_path, plugin):
    """``slot[2, exclusive] > core[1]`` without a node level: Fluxion packs both slots on one
    node and starts other jobs beside them; rush reads two cores anywhere (flux-core's pool:
    two whole nodes)."""
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonode", gate=False)
    job = submit_jobspec(inst, EXCLUSIVE_SLOTS, "sleep", "300")
    wait_for(lambda: started(inst, job), timeout=60)
    assert allocated(inst, job) == [("0", "0-1")]
    assert read(inst, job) == Request(0, 2) != Request(2, 1, 0, True)
    beside = inst.submit("-N1", "-n2", "sleep", "300")
    wait_for(lambda: started(inst, beside), timeout=60)
    assert allocated(inst, beside) == [("0", "2-3")]


def event_time(inst: FluxInstance, job_id: int, name: str) -> float:
    out = inst.run("job", "eventlog", str(job_id)).stdout.splitlines()
    return min(float(line.split()[0]) for line in out if line.split()[1:2] == [name])


def test_whole_nodes_inside_a_slot_read_as_fluxion_allocates_them(instances, tmp_path, plugin):
    """``slot > node`` with nothing below: flux-core's pool cannot read it (no slot size);
    Fluxion (lonodex) gives whole nodes, and so does rush's reading."""
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonodex", gate=False)
    # Held while rush reads it: its tasks fail at once (one task per slot of two nodes) once
    # it starts, and a job that has ended is no longer read.
    job = submit_jobspec(inst, [slot(1, node(2))], "sleep", "300", urgency=0)
    assert read(inst, job) == Request(2, 1, 0, True)
    inst.run("job", "urgency", str(job), "16")
    inst.run("job", "wait-event", "-t", "60", str(job), "alloc", timeout=70)
    assert allocated(inst, job) == [("0-1", "0-3")]


GPUS = """
[[resource.config]]
hosts = "node[0-1]"
cores = "0-3"
gpus = "0-1"
"""


def gpu(count: int) -> dict[str, Any]:
    return {"type": "gpu", "count": count}


def allocated_gpus(inst: FluxInstance, job_id: int) -> list[tuple[str, str, str]]:
    r = json.loads(inst.run("job", "info", str(job_id), "R").stdout)
    return [
        (e["rank"], e["children"].get("core", ""), e["children"].get("gpu", ""))
        for e in r["execution"]["R_lite"]
    ]


def test_nodes_with_gpus_inside_a_slot_read_as_the_whole_nodes_fluxion_takes(instances, tmp_path, plugin):
    """Two fake nodes of 4 cores and 2 GPUs (``resource.config``'s ``gpus``): ``slot[2] >
    node[1] > (core[1], gpu[1])`` takes two whole nodes in Fluxion (its R lists one core and
    one GPU of each; a one-GPU job waits until it ends): rush reads two whole nodes."""
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonode", layout=GPUS, gate=False)
    assert "gpu" in json.dumps(json.loads(inst.run("resource", "R").stdout))
    job = submit_jobspec(inst, [slot(2, node(1, core(1), gpu(1)))], "sleep", "300")
    wait_for(lambda: started(inst, job), timeout=60)
    assert allocated_gpus(inst, job) == [("0-1", "0", "0")]
    assert read(inst, job) == Request(2, 1, 1, True)
    beside = inst.submit("-N1", "-n1", "-g1", "true")
    inst.run("cancel", str(job))
    inst.wait_job(job)
    inst.wait_job(beside)
    assert event_time(inst, beside, "alloc") > event_time(inst, job, "free")


def test_more_gpu_slots_than_nodes_read_as_the_nodes_fluxion_packs_them_on(instances, tmp_path, plugin):
    """``slot[3] > (core[1], gpu[1])`` without a node level on two nodes of 2 GPUs: Fluxion
    packs two slots on one node and one on the other, and starts it at once; rush read one node
    per slot, three nodes of two, which the core left out as never fitting. Now: the two
    nodes, each with room for two slots: rush expects it to start (the queue stopped, so that
    Fluxion does not start it first), and Fluxion's allocation fits in rush's reading."""
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonode", layout=GPUS)
    inst.run("queue", "stop")
    job = submit_jobspec(inst, [slot(3, core(1), gpu(1))], "sleep", "300")
    assert read(inst, job) == Request(2, 2, 2, False)
    daemon = flagging_daemon(inst, tmp_path, skip_limit=2)
    assert daemon.run_cycle().ok
    assert [d.job_id for d in daemon.last[2].among(("start",))] == [job]
    inst.run("queue", "start")
    wait_for(lambda: started(inst, job), timeout=60)
    placed = allocated_gpus(inst, job)
    assert sorted(placed) == [("0", "0-1", "0-1"), ("1", "0", "0")], placed


def test_a_job_fluxion_has_not_yet_reached_at_the_next_read_is_not_journaled(instances, tmp_path, plugin):
    """rush expects a one-core job to start; Fluxion has not got to it when the next cycle
    reads (the queue stopped: the job-manager sends Fluxion no request), then starts it: no
    "left pending" line (before: one, at the first read that found it pending)."""
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonodex")
    inst.run("queue", "stop")
    job = inst.submit("-n1", "-t", "10m", "sleep", "300")
    daemon = flagging_daemon(inst, tmp_path, skip_limit=2)
    for _ in range(2):
        assert daemon.run_cycle().ok
        assert [d.job_id for d in daemon.last[2].among(("start",))] == [job]  # rush's view
    assert state(inst, job) == "SCHED"
    inst.run("queue", "start")
    wait_for(lambda: started(inst, job), timeout=60)
    assert daemon.run_cycle().ok
    assert order_lines(daemon) == []


def flagging_daemon(inst: FluxInstance, tmp_path: Path, skip_limit: int) -> Daemon:
    """rush in priority mode whose threshold predictor flags network jobs (the network counter
    high in its feature store), as tests/flux/test_rush_on_fluxion.py's refused hold."""
    store = tmp_path / "busy.sqlite"
    with FeatureStore(store) as fs:
        now = time.time() - 30
        fs.insert([Sample(now, host, "sysfs_ib", "ib_xmit_bytes_per_s", 9e9) for host in ("node0", "node1")])
    raw = {
        "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": False},
        "policy": {"policy": "FCFS", "threshold": "none", "skip_limit": skip_limit},
        "variation": {"enabled": True, "threshold": 1e9, "store": str(store), "workload_type": "network"},
        "rjms": {"backend": "flux", "options": {"uri": inst.uri, "priority_lever": "plugin"}},
    }
    return Daemon(parse_config(raw))


def test_a_flagged_job_with_nodes_inside_a_slot_is_not_held_while_fluxion_cannot_start_it(
    instances, tmp_path, plugin
):
    """Half of each node busy; a network job asks for ``slot[2] > node[1] > core[1]``, which
    Fluxion starts only on two whole nodes: it cannot start now, so RUSH does not hold it (a
    held job has no reservation in Fluxion). Read as flux-core's pool reads it (two cores on
    each node), rush thought it could start, and held it. Fluxion starts it once the busy job
    ends, once, and it completes."""
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonode")
    busy = inst.submit("-N2", "-n4", "-t", "10m", "--urgency=31", "sleep", "300")  # past the gate
    wait_for(lambda: started(inst, busy), timeout=60)
    assert allocated(inst, busy) == [("0-1", "0-1")]
    job = submit_jobspec(inst, NODES_IN_A_SLOT, "sleep", "1", tags={"wtype": "network"})
    daemon = flagging_daemon(inst, tmp_path, skip_limit=2)
    for _ in range(3):
        assert daemon.run_cycle().ok
        assert daemon.journal.decisions(job, "hold") == [] and urgencies(inst)[job] == 16
        assert [d.job_id for d in daemon.last[2].among(("start", "backfill"))] == []
    assert state(inst, job) == "SCHED"
    inst.run("cancel", str(busy))
    inst.wait_job(job)
    assert event_time(inst, job, "alloc") > event_time(inst, busy, "free")
    eventlog = inst.run("job", "eventlog", str(job)).stdout.splitlines()
    assert sum(1 for line in eventlog if line.split()[1:2] == ["start"]) == 1
    assert inst.run("jobs", "-no", "{result}", str(job)).stdout.strip() == "COMPLETED"


SPECIAL = """
[[resource.config]]
hosts = "node0"
cores = "0-3"

[[resource.config]]
hosts = "node1"
cores = "0-3"
properties = ["special"]
"""


def test_fluxion_starting_a_job_ahead_of_one_rush_expected_is_journaled(instances, tmp_path, plugin):
    """A job that requires a node property (a constraint rush does not read) is first in rush's
    order and would start now on rush's view of the pool; Fluxion cannot start it (the only
    node with the property is busy), reserves for it and backfills the next job on the free
    node. rush's next cycle journals that with both jobs named; the daemon goes on; every job
    starts once and completes."""
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonodex", layout=SPECIAL)
    busy = inst.submit("-N1", "--requires=special", "-t", "10m", "--urgency=31", "sleep", "300")
    wait_for(lambda: started(inst, busy), timeout=60)
    first = inst.submit("-N1", "--requires=special", "-t", "10m", "sleep", "1")
    daemon = flagging_daemon(inst, tmp_path, skip_limit=3)  # no job is tagged: nothing is held
    for _ in range(3):  # rush expects it to start; Fluxion leaves it pending, nothing else starts
        assert daemon.run_cycle().ok
        assert [d.job_id for d in daemon.last[2].among(("start",))] == [first]  # rush's view
    assert state(inst, first) == "SCHED"
    assert order_lines(daemon) == [pending_line(first)]  # once for the episode, not every cycle
    second = inst.submit("-N1", "-t", "1m", "sleep", "300")  # running until cancelled below
    assert daemon.run_cycle().ok
    assert daemon.last[2].order[:2] == [first, second]
    assert [d.job_id for d in daemon.last[2].among(("start",))] == [first]  # rush's view
    wait_for(lambda: started(inst, second), timeout=60)
    assert state(inst, first) == "SCHED"
    assert daemon.run_cycle().ok
    [line] = [e for e in order_lines(daemon) if "started ahead" in e]
    assert line.startswith(f"job {second} (rush's rank 2) started ahead of job(s) {first},"), line
    assert order_lines(daemon).count(pending_line(first)) == 1
    inst.run("cancel", str(busy), str(second))
    plugin_build.polling.wait_for(lambda: daemon.run_cycle().ok and started(inst, first), 120, 0.5)
    for job, result in ((first, "COMPLETED"), (second, "CANCELED")):
        inst.wait_job(job)
        eventlog = inst.run("job", "eventlog", str(job)).stdout.splitlines()
        assert sum(1 for line in eventlog if line.split()[1:2] == ["start"]) == 1
        assert inst.run("jobs", "-no", "{result}", str(job)).stdout.strip() == result
    assert daemon.journal.decisions(first, "hold") == daemon.journal.decisions(second, "hold") == []


def test_a_job_fluxion_refuses_outright_ends_and_the_daemon_goes_on(instances, tmp_path, plugin):
    """A job rush reads (one node, one core below a ``socket`` level) and expects to start,
    which Fluxion denies (the fake nodes' graph has no sockets): Flux ends it with Fluxion's
    reason, unstarted; rush's next cycles go on and the next job starts once."""
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonodex")
    refused = submit_jobspec(
        inst, [node(1, {"type": "socket", "count": 1, "with": [slot(1, core(1))]})], "true"
    )
    # Held by its user (so it stays): Flux accepts a slot of a GPU only, rush cannot read it.
    unread = submit_jobspec(inst, [slot(1, {"type": "gpu", "count": 1})], "true", urgency=0)
    daemon = flagging_daemon(inst, tmp_path, skip_limit=2)
    assert daemon.run_cycle().ok
    assert [d.job_id for d in daemon.last[2].among(("start",))] == [refused]  # rush's view
    inst.wait_job(refused)
    eventlog = inst.run("job", "eventlog", str(refused)).stdout
    assert 'type="alloc"' in eventlog and "unsatisfiable" in eventlog, eventlog
    assert not any(line.split()[1:2] in (["alloc"], ["start"]) for line in eventlog.splitlines())
    after = inst.submit("-N1", "true")
    plugin_build.polling.wait_for(lambda: daemon.run_cycle().ok and started(inst, after), 60, 0.5)
    inst.wait_job(after)
    assert inst.run("jobs", "-no", "{result}", str(after)).stdout.strip() == "COMPLETED"
    assert daemon.journal.decisions(refused, "hold") == []
    [line] = [e for e in order_lines(daemon) if f"job {refused}" in e]
    assert line.startswith(
        f"job {refused}, which rush expected the RJMS to start, ended without starting: "
    ), line
    assert "unsatisfiable" in line, line
    [note] = [e["message"] for e in daemon.journal.events("request")]  # once, over every cycle
    assert note.startswith(f"job {unread}: rush cannot read its resource request (jobspec has no slot"), note


def order_lines(daemon: Daemon) -> list[str]:
    return [e["message"] for e in daemon.journal.events("rjms_order")]


def test_a_job_rush_misreads_as_infeasible_passes_the_gate_and_fluxion_starts_it(
    instances, tmp_path, plugin, monkeypatch
):
    """The packed GPU shape ``slot[3] > (core[1], gpu[1])`` on two nodes of 2 GPUs, read as
    main read it (one node per slot, sizes not read: three nodes, infeasible here). With the
    gate a job rush does not rank stays at priority 0, unseen by Fluxion, for ever; rush now
    releases it at the lowest priority, journaled once with the job named and the reason, and
    Fluxion, which packs the slots on the two nodes, starts it, once."""

    def mains_reading(spec: Any, fluxion: bool = False, sizes: Any = (), queue_sizes: Any = None) -> Request:
        return request_from_jobspec(spec, fluxion=fluxion)

    monkeypatch.setattr("rush.rjms.flux.backend.request_from_jobspec", mains_reading)
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonode", layout=GPUS)
    job = submit_jobspec(inst, [slot(3, core(1), gpu(1))], "sleep", "300")
    assert read(inst, job) == Request(3, 1, 1, False)  # main's reading
    daemon = flagging_daemon(inst, tmp_path, skip_limit=2)
    assert daemon.run_cycle().ok
    [infeasible] = daemon.last[2].of("infeasible")
    assert infeasible.job_id == job and "2 such nodes" in infeasible.reason, infeasible
    wait_for(lambda: started(inst, job), timeout=60)
    assert daemon.run_cycle().ok  # running now: nothing more is sent for it
    [line] = [r for r in daemon.journal.decisions(job, "priority")]
    assert line["reason"] == (
        f"rush reads it as infeasible: {infeasible.reason}; released to the RJMS at the lowest priority"
    )
    assert line["status"] == "done" and line["value"] == LOWEST_VALUE
    eventlog = inst.run("job", "eventlog", str(job)).stdout.splitlines()
    assert sum(1 for e in eventlog if e.split()[1:2] == ["start"]) == 1


def test_with_a_small_priority_weight_the_last_ranked_and_a_released_job_still_start(
    instances, tmp_path, plugin, monkeypatch
):
    """``site.priority_weight = 2`` with rush's plugin in ``combine = "replace"`` (the value is
    the job's Flux priority; 0 is Flux's hold) and the gate: the core scales every value into
    [1, 2], so the last-ranked job and a job rush misreads as infeasible (released at the lowest
    value) get priority 1, Flux holds the very value rush journaled, and Fluxion starts them
    (SPF: both ranked jobs' keys are positive, so their values lie in the lower half of band 1).
    Main scaled into [0, 2]: every job here was decided and journaled at 0."""

    def mains_reading(spec: Any, fluxion: bool = False, sizes: Any = (), queue_sizes: Any = None) -> Request:
        return request_from_jobspec(spec, fluxion=fluxion)

    monkeypatch.setattr("rush.rjms.flux.backend.request_from_jobspec", mains_reading)
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonode", layout=GPUS)
    last = inst.submit("-n1", "-t", "10m", "sleep", "300")
    first = inst.submit("-n1", "-t", "1m", "sleep", "300")
    misread = submit_jobspec(inst, [slot(3, core(1), gpu(1))], "sleep", "300")
    wait_for(lambda: all(priorities(inst).get(j) == 0 for j in (first, last, misread)))  # the gate
    raw = {
        "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": False},
        "policy": {"policy": "SPF", "threshold": "none", "wait_quantum": 0},
        "site": {"priority_weight": 2},
        "rjms": {"backend": "flux", "options": {"uri": inst.uri, "priority_lever": "plugin"}},
    }
    daemon = Daemon(parse_config(raw))
    assert daemon.run_cycle().ok
    decided = daemon.last[2]
    assert decided.order == [first, last] and [d.job_id for d in decided.of("infeasible")] == [misread]
    wait_for(lambda: all(started(inst, j) for j in (first, last, misread)), timeout=60)
    assert decided.priority[last] >= 1 and decided.priority[misread] == LOWEST_VALUE, decided.priority
    shown = priorities(inst)  # the last priority Flux gave each job (job-list keeps it)
    for job in (first, last, misread):
        [line] = daemon.journal.decisions(job, "priority")
        assert line["status"] == "done" and line["value"] >= 1 and shown[job] == line["value"], (job, line)


def test_an_oversized_job_passes_the_gate_and_fluxion_refuses_it(instances, tmp_path, plugin):
    """Eight cores on one node, asked of nodes of four: rush reads it as infeasible and Fluxion
    would refuse it; with the gate it stayed at priority 0, neither started nor refused.
    Released at the lowest priority, Fluxion refuses it (``unsatisfiable``), Flux ends it, and the next cycle journals
    the refusal with the job named; the daemon goes on and the next job starts."""
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonodex")
    job = inst.submit("-N1", "-n1", "-c8", "-t", "10m", "true")
    daemon = flagging_daemon(inst, tmp_path, skip_limit=2)
    assert daemon.run_cycle().ok
    assert [d.job_id for d in daemon.last[2].of("infeasible")] == [job]
    inst.wait_job(job)
    eventlog = inst.run("job", "eventlog", str(job)).stdout
    assert "unsatisfiable" in eventlog, eventlog
    assert not any(e.split()[1:2] in (["alloc"], ["start"]) for e in eventlog.splitlines()), eventlog
    after = inst.submit("-N1", "true")
    plugin_build.polling.wait_for(lambda: daemon.run_cycle().ok and started(inst, after), 60, 0.5)
    inst.wait_job(after)
    [release] = daemon.journal.decisions(job, "priority")
    assert release["reason"].startswith("rush reads it as infeasible: ") and release["value"] == LOWEST_VALUE
    [line] = [e for e in order_lines(daemon) if f"job {job}" in e]
    assert line.startswith(f"job {job}, which rush read as infeasible and released to the RJMS, ended"), line
    assert "unsatisfiable" in line, line


def test_a_released_job_fluxion_keeps_pending_is_journaled_once_and_explained(instances, tmp_path, plugin):
    """``-N3`` on two nodes: rush reads it as infeasible and releases it at the lowest priority;
    Fluxion's ``easy`` neither starts nor refuses it (more nodes than are up is EBUSY in its
    ``request_feasible``, and the backfilling policies keep such a job blocked until the
    resources change; without rush's plugin too). Journaled once over the cycles, naming the
    job and rush's reason, and on the job's history for ``rush explain``; the daemon goes on
    and the next job starts once. Before: the release line only, then nothing."""
    inst = two_nodes(instances, tmp_path / "flux", plugin, "lonodex")
    job = inst.submit("-N3", "-n3", "-t", "10m", "true")
    daemon = flagging_daemon(inst, tmp_path, skip_limit=2)
    assert daemon.run_cycle().ok
    [infeasible] = daemon.last[2].of("infeasible")
    assert infeasible.job_id == job and infeasible.value == LOWEST_VALUE
    line = released_pending_line(job, infeasible.reason)
    wait_for(lambda: inst.run("jobs", "-no", "{priority}", str(job)).stdout.strip() == str(LOWEST_VALUE), 60)
    plugin_build.polling.wait_for(lambda: daemon.run_cycle().ok and line in order_lines(daemon), 60, 0.5)
    for _ in range(3):  # once for the episode
        assert daemon.run_cycle().ok
    assert order_lines(daemon) == [line]
    assert state(inst, job) == "SCHED"
    eventlog = inst.run("job", "eventlog", str(job)).stdout
    assert "exception" not in eventlog and " alloc" not in eventlog, eventlog
    [row] = daemon.journal.decisions(job, "rjms_order")
    assert row["reason"] == line
    with JournalQuery(tmp_path / "journal.sqlite") as query:
        text = "\n".join(explain_text(query.job_view(job).to_json(), time.time()))
    assert line in text, text
    after = inst.submit("-N1", "true")
    plugin_build.polling.wait_for(lambda: daemon.run_cycle().ok and started(inst, after), 60, 0.5)
    inst.wait_job(after)
    assert inst.run("jobs", "-no", "{result}", str(after)).stdout.strip() == "COMPLETED"
    assert state(inst, job) == "SCHED"


TWO_QUEUES = """
[[resource.config]]
hosts = "node0"
cores = "0-3"
gpus = "0-1"
properties = ["batch"]

[[resource.config]]
hosts = "node1"
cores = "0-3"
gpus = "0-1"
properties = ["gpu"]
"""
QUEUES = """
[queues.batch]
requires = ["batch"]

[queues.gpu]
requires = ["gpu"]
"""


def two_queue_fluxion(instances, tmp_path, plugin, match: str) -> FluxInstance:
    """TWO_QUEUES under Fluxion (``easy``, the match policy ``match``) with rush's plugin gating
    the jobs, its queues stopped so that Fluxion starts nothing before rush's cycle."""
    config = QUEUES + "\n" + jobtap_config(plugin, "gate = true")
    inst = FluxInstance(tmp_path / "flux", size=2, layout=TWO_QUEUES, config=config)
    instances.append(inst)
    inst.start()
    fluxion.use_fluxion(inst, "easy", match)
    inst.run("queue", "stop", "--all")
    return inst


def test_gpu_slots_read_with_the_nodes_of_the_jobs_queue(instances, tmp_path, plugin):
    """Two queues of one node each (2 GPUs): ``-q gpu -n2 -g1`` (``slot[2] > (core[1],
    gpu[1])``). Fluxion matches it on the queue's one node, packing both slots there, and
    starts it at once. rush read it with all the instance's nodes: two can hold a slot, so one
    node per slot, two nodes, and the queue has one: infeasible (and its nodes carried no
    queue, so the queue did not exist for the core). Now: the queue's nodes, one node with
    room for both slots; rush expects it to start (the queues stopped, so that Fluxion does
    not start it first), and Fluxion starts it on that node."""
    inst = two_queue_fluxion(instances, tmp_path, plugin, "lonode")
    job = inst.submit("-q", "gpu", "-n2", "-g1", "-t", "10m", "sleep", "300")
    assert read(inst, job) == Request(1, 2, 2, False, "gpu")
    daemon = flagging_daemon(inst, tmp_path, skip_limit=2)
    assert daemon.run_cycle().ok
    assert daemon.last[2].of("infeasible") == []
    assert [d.job_id for d in daemon.last[2].among(("start",))] == [job]
    inst.run("queue", "start", "--all")
    wait_for(lambda: started(inst, job), timeout=60)
    assert sorted(allocated_gpus(inst, job)) == [("1", "0-1", "0-1")], allocated_gpus(inst, job)


def test_a_queued_job_of_a_multi_queue_instance_is_ranked_not_read_as_infeasible(instances, tmp_path, plugin):
    """Priority mode on an instance with two queues: the backend's nodes carry the queues whose
    ``requires`` they meet, so a ``-q batch -N1`` job is the core's partition ``batch`` of one
    node, expected to start. Before, the nodes carried no queue: every queued job read
    "partition 'batch' does not exist here (partitions: none)", infeasible, released at the
    lowest priority."""
    inst = two_queue_fluxion(instances, tmp_path, plugin, "lonodex")
    job = inst.submit("-q", "batch", "-N1", "-t", "10m", "sleep", "300")
    nodes = FluxBackend(uri=inst.uri).read_state().nodes
    assert [(n.name, n.partitions) for n in nodes] == [("node0", ("batch",)), ("node1", ("gpu",))]
    daemon = flagging_daemon(inst, tmp_path, skip_limit=2)
    assert daemon.run_cycle().ok
    assert daemon.last[2].of("infeasible") == []
    assert [d.job_id for d in daemon.last[2].among(("start",))] == [job]
    inst.run("queue", "start", "--all")
    wait_for(lambda: started(inst, job), timeout=60)
    assert allocated(inst, job) == [("0", "0-3")]
