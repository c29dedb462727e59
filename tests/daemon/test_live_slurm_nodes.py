"""The daemon on the multi-node Slurm 25.11 (``slurm_nodes``, tests/conftest.py; layout in
tests/slurm/cluster.py: n1 .. n8 of 4 CPUs, ``batch`` = n[1-6] default, ``gpu`` = n[5-8] with
2 GPUs each, leaf switches n[1-4] and n[5-8], n4 drained), dry-run and acting.

On Slurm rush does not place jobs: Slurm does. The core's start decisions name nodes all the
same (advice in the journal, the evidence for skip and hold decisions), and these tests check
that the advice is right for multi-node, exclusive and GPU jobs, that a job that can only run
once the drained node returns blocks nobody, that a request its partition can never satisfy is
journaled as infeasible while the daemon goes on, and that skip-with-limit holds a flagged
job only when it fits now in its own partition.

Jobs rush should see pending carry a begin time in the future (Slurm would otherwise start
them before the daemon's cycle reads them); a test that wants Slurm to start one moves its
begin time to now.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from rush.core.priority_values import LOWEST_VALUE
from rush.daemon.service import Daemon
from rush.planner.config import RushConfig, parse_config
from rush.rjms.base import RJMSJob, get_backend
from tests import polling
from tests.slurm.cluster import MULTI_NODE

pytestmark = pytest.mark.slurm

BATCH = {"n1", "n2", "n3", "n4", "n5", "n6"}
GPU = {"n5", "n6", "n7", "n8"}
LATER = "--begin=now+600"
SLEEP = "sleep 300"


def wait_for(predicate, timeout: float = 60.0, step: float = 0.3):
    return polling.wait_for(predicate, timeout, step)


def job(cluster, job_id: int) -> RJMSJob | None:
    return get_backend("slurm", **cluster.options()).job(job_id)


def running_on(cluster, job_id: int) -> set[str] | None:
    """The nodes Slurm runs the job on, once it runs (else None: a poll)."""
    found = job(cluster, job_id)
    if found is None or found.state != "RUNNING" or not found.allocation:
        return None
    return {name for name, _, _ in found.allocation}


def config(cluster, tmp_path: Path, dry_run: bool, policy: dict | None = None, **sections) -> RushConfig:
    raw = {
        "daemon": {
            "journal": str(tmp_path / f"journal-{dry_run}.sqlite"),
            "cycle_interval": 1,
            "dry_run": dry_run,
        },
        "policy": {"policy": "FCFS", "threshold": "none", **(policy or {})},
        "rjms": {"backend": "slurm", "options": cluster.options(timeout=8)},
    }
    raw.update(sections)
    return parse_config(raw)


def advised(daemon: Daemon, job_id: int) -> list[tuple[str, tuple[str, ...], str]]:
    """The core's advice for the job as journaled: (action, the nodes a start names, reason)."""
    found = []
    for row in daemon.journal.decisions(job_id):
        if row["status"] != "advice":
            continue
        _, on, names = row["reason"].rpartition("; on ")
        nodes = tuple(names.split(",")) if on and row["action"] in ("start", "backfill") else ()
        found.append((row["action"], nodes, row["reason"]))
    return found


def started_on(daemon: Daemon, job_id: int) -> tuple[str, ...]:
    """The nodes of the job's one start/backfill advice (fails if it has none)."""
    starts = [
        (action, nodes) for action, nodes, _ in advised(daemon, job_id) if action in ("start", "backfill")
    ]
    assert starts, f"job {job_id}: no start advice, only {advised(daemon, job_id)}"
    return starts[-1][1]


# -- (a) start advice names the right nodes ---------------------------------------------------
@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "acting"])
def test_start_advice_names_nodes_of_the_partition_never_the_drained_one(nodes_cluster, tmp_path, dry_run):
    """First fit with one GPU node's GPUs in use: a 3-node job, a whole-node job, a 2-GPU job
    and a job of two 1-GPU nodes that no longer fits. Each start names as many nodes as asked,
    in its partition, never n4; the exclusive job's node is nobody else's; the GPU job avoids
    the node whose GPUs are taken; the head's reservation names gpu nodes."""
    cluster = nodes_cluster
    gpus_used = cluster.submit("-p", "gpu", "-w", "n5", "-n", "1", "--gres=gpu:2", "-t", "5", "--wrap", SLEEP)
    assert wait_for(lambda: running_on(cluster, gpus_used)) == {"n5"}
    three = cluster.submit("-p", "batch", "-N", "3", "-n", "3", "-t", "5", LATER, "--wrap", SLEEP)
    whole = cluster.submit("-p", "batch", "-N", "1", "--exclusive", "-t", "5", LATER, "--wrap", SLEEP)
    two_gpus = cluster.submit("-p", "gpu", "-N", "1", "--gres=gpu:2", "-t", "5", LATER, "--wrap", SLEEP)
    blocked = cluster.submit(
        "-p", "gpu", "-N", "2", "-n", "2", "--gres=gpu:1", "-t", "5", LATER, "--wrap", SLEEP
    )

    daemon = Daemon(config(cluster, tmp_path, dry_run))
    report = daemon.run_cycle()
    assert report.ok, report.error
    assert report.decisions.get("start", 0) + report.decisions.get("backfill", 0) == 3, report.decisions

    placed = {j: started_on(daemon, j) for j in (three, whole, two_gpus)}
    # First fit: the lowest usable batch nodes; the lowest whole batch node (n5 holds a job);
    # the lowest gpu node with 2 GPUs free that the exclusive job did not take.
    assert placed == {three: ("n1", "n2", "n3"), whole: ("n6",), two_gpus: ("n7",)}, advised(daemon, three)
    assert all("n4" not in nodes for nodes in placed.values())
    assert set(placed[three]) | set(placed[whole]) <= BATCH and set(placed[two_gpus]) <= GPU
    # The start reasons in the journal carry the nodes.
    [row] = [r for r in daemon.journal.decisions(three) if r["action"] == "start"]
    assert row["reason"].endswith("; on n1,n2,n3") and row["mode"] == ("dry-run" if dry_run else "apply")
    # Two gpu nodes with a GPU free each: only n8 now; the head waits for one, reserved on gpu nodes.
    [(action, _, reason)] = advised(daemon, blocked)
    assert action == "reserve" and "shadow time" in reason, reason
    reserved = set(reason.split(" on ", 1)[1].split(", ")[0].split(","))
    assert reserved <= GPU and len(reserved) == 2, reason
    # Slurm was told nothing about placement, and dry-run nothing at all; acting set site
    # factors, which Slurm's priority (read into RJMSJob.priority) is made of here (every other
    # factor weighs 0; sprio lists no job whose begin time is ahead, so site_factor reads 0).
    for j in (three, whole, two_gpus, blocked):
        found = job(cluster, j)
        assert found.state == "PENDING" and not found.held
        if dry_run:
            assert found.priority <= 1 and daemon.journal.jobs() == {}
        else:
            assert found.priority == daemon.journal.job(j).last_site_factor > 1


# -- (b) a job that can only run once the drained node returns blocks nobody ----------------
def test_job_needing_the_drained_node_waits_without_blocking_a_long_job(nodes_cluster, tmp_path):
    """n1-n3 busy for 5 minutes, n4 drained: a whole-node job on all six batch nodes cannot run
    until n4 returns, so the core gives it no reservation (a reservation at the busy jobs' end
    would cover n5 and n6) and the long job behind it is advised to start on n5 and n6, where
    Slurm, acting alone on placement, starts it."""
    cluster = nodes_cluster
    busy = cluster.submit("-p", "batch", "-w", "n[1-3]", "-N", "3", "--exclusive", "-t", "5", "--wrap", SLEEP)
    assert wait_for(lambda: running_on(cluster, busy)) == {"n1", "n2", "n3"}
    all_six = cluster.submit("-p", "batch", "-N", "6", "--exclusive", "-t", "5", "--wrap", SLEEP)
    long_job = cluster.submit("-p", "batch", "-N", "2", "-n", "2", "-t", "60", LATER, "--wrap", "sleep 2")
    for dry_run in (True, False):
        daemon = Daemon(config(cluster, tmp_path, dry_run))
        report = daemon.run_cycle()
        assert report.ok, report.error
        [(action, nodes, reason)] = advised(daemon, all_six)
        assert action == "reserve" and "no reservation" in reason and nodes == (), reason
        [row] = [r for r in daemon.journal.decisions(all_six) if r["action"] == "reserve"]
        assert row["value"] == float("inf")
        assert started_on(daemon, long_job) == ("n5", "n6")
    assert not job(cluster, all_six).held and not job(cluster, long_job).held
    cluster.run(cluster.tool("scontrol"), "update", f"JobId={long_job}", "StartTime=now")
    assert wait_for(lambda: running_on(cluster, long_job)) == {"n5", "n6"}
    assert job(cluster, all_six).state == "PENDING"


# -- (c) a request its partition can never satisfy -------------------------------------------
def test_infeasible_request_is_journaled_and_the_daemon_goes_on(nodes_cluster, tmp_path):
    """Nine nodes in the four-node gpu partition: Slurm keeps it pending; rush journals it as
    infeasible with the reason and the fix, never holds it, releases it to Slurm at the lowest
    priority (once), and schedules the job behind it."""
    cluster = nodes_cluster
    nine = cluster.submit("-p", "gpu", "-N", "9", "-t", "5", "--wrap", SLEEP)
    behind = cluster.submit("-p", "gpu", "-N", "1", "--gres=gpu:1", "-t", "5", LATER, "--wrap", SLEEP)
    assert job(cluster, nine).state == "PENDING"
    for dry_run in (True, False):
        daemon = Daemon(config(cluster, tmp_path, dry_run))
        for cycle in (1, 2):
            report = daemon.run_cycle()
            assert report.ok and report.decisions.get("infeasible") == 1, (report.error, report.decisions)
            infeasible = [r for r in daemon.journal.decisions(nine) if r["action"] == "infeasible"]
            assert len(infeasible) == cycle and {r["status"] for r in infeasible} == {"advice"}
            assert f"job {nine} asks for 9 nodes" in infeasible[0]["reason"]
            assert "partition 'gpu' has 4 such nodes" in infeasible[0]["reason"], infeasible[0]["reason"]
        # Left out of the pass: no hold, no start or reservation for it; released to Slurm at
        # the lowest priority once (SiteFactor 1), so that Slurm decides.
        assert {r["action"] for r in daemon.journal.decisions(nine)} == {"infeasible", "priority"}
        [released] = daemon.journal.decisions(nine, "priority")
        assert released["value"] == LOWEST_VALUE, released
        assert released["reason"].startswith(f"rush reads it as infeasible: job {nine} asks for 9 nodes")
        assert released["reason"].endswith("; released to the RJMS at the lowest priority")
        assert started_on(daemon, behind) == ("n5",)
    assert job(cluster, nine).state == "PENDING" and not job(cluster, nine).held


# -- (d) skip-with-limit uses node fits per partition ----------------------------------------
def busy_network(tmp_path: Path) -> dict:
    """The rule predictor flags network jobs: every node's InfiniBand counter far above 1e9."""
    store = tmp_path / "features.sqlite"
    with FeatureStore(store) as fs:
        fs.insert(
            [
                Sample(time.time() - 30, node, "sysfs_ib", "ib_xmit_bytes_per_s", 9e9)
                for node in MULTI_NODE.nodes
            ]
        )
    return {"enabled": True, "threshold": 1e9, "store": str(store), "workload_type": "network"}


def test_skip_holds_a_flagged_job_only_when_it_fits_in_its_partition(nodes_cluster, tmp_path):
    """The gpu partition full, batch with three free nodes: a flagged gpu job does not fit now
    (the cluster's free core count says it would), so it is not held but reserved; a flagged
    batch job fits now, so it is skipped and held, then released at the limit."""
    cluster = nodes_cluster
    network = "--comment=rush:wtype=network"
    full = cluster.submit("-p", "gpu", "-N", "4", "--exclusive", "-t", "10", "--wrap", SLEEP)
    assert wait_for(lambda: running_on(cluster, full)) == GPU
    gpu_job = cluster.submit(
        "-p", "gpu", "-N", "1", "--gres=gpu:1", "-t", "5", network, LATER, "--wrap", SLEEP
    )
    batch_job = cluster.submit(
        "-p", "batch", "-N", "2", "-n", "2", "-t", "5", network, LATER, "--wrap", SLEEP
    )
    variation = busy_network(tmp_path)

    dry = Daemon(config(cluster, tmp_path, True, {"skip_limit": 2}, variation=variation))
    report = dry.run_cycle()
    assert report.ok and report.decisions.get("skip") == 1, (report.error, report.decisions)
    [hold] = dry.journal.decisions(batch_job, "hold")  # the would-be hold, journaled only
    assert hold["status"] == "dry-run" and hold["model_outputs"]["variable"] is True
    assert "would start now" in hold["reason"] and not dry.journal.decisions(gpu_job, "hold")
    assert not job(cluster, batch_job).held

    daemon = Daemon(config(cluster, tmp_path, False, {"skip_limit": 2}, variation=variation))
    for cycle in (1, 2):
        if cycle == 2:  # an arrival: only a cycle that reads an RJMS event counts a skip
            cluster.submit("-n", "1", "-t", "1", "--hold", "--wrap", "true")
        report = daemon.run_cycle()
        assert report.ok, report.error
        assert job(cluster, batch_job).held and daemon.journal.job(batch_job).skips == cycle
        # Flagged too, but its partition is full: ordered and reserved, never held or skipped.
        flagged = daemon.journal.decisions(gpu_job)
        assert not job(cluster, gpu_job).held and not [r for r in flagged if r["action"] in ("skip", "hold")]
        reserve = [r for r in flagged if r["action"] == "reserve"][-1]
        assert reserve["model_outputs"]["variable"] is True and "shadow time" in reserve["reason"]
    hold = daemon.journal.decisions(batch_job, "hold")[0]
    assert hold["status"] == "done" and "variability" in hold["reason"]
    report = daemon.run_cycle()  # the limit reached: released, and advised to start on batch nodes
    assert report.ok and not job(cluster, batch_job).held
    assert daemon.journal.decisions(batch_job, "release")[0]["status"] == "done"
    assert set(started_on(daemon, batch_job)) <= BATCH - {"n4", "n5", "n6"}


# -- the RJMS policy: Slurm's own priority orders the pass -----------------------------------
def test_rjms_policy_follows_slurms_priority_and_an_admin_change(nodes_cluster, tmp_path):
    """Three jobs each needing every usable batch node: only the first in order can start. With
    policy RJMS the start advice goes to the job Slurm ranks highest (an admin's
    ``scontrol update Priority=``), and to another once the admin raises that one (dry-run: the
    priorities are Slurm's alone)."""
    cluster = nodes_cluster
    jobs = [
        cluster.submit("-p", "batch", "-N", "5", "--exclusive", "-t", "5", LATER, "--wrap", SLEEP)
        for _ in range(3)
    ]
    scontrol = cluster.tool("scontrol")
    cluster.run(scontrol, "update", f"JobId={jobs[1]}", "Priority=5000")
    daemon = Daemon(config(cluster, tmp_path, True, {"policy": "RJMS"}))

    def first_started() -> tuple[int, float]:
        report = daemon.run_cycle()
        assert report.ok, report.error
        (started,) = daemon.last[2].job_ids("start")
        return started, job(cluster, started).priority

    assert first_started() == (jobs[1], 5000.0)
    assert started_on(daemon, jobs[1]) == ("n1", "n2", "n3", "n5", "n6")
    cluster.run(scontrol, "update", f"JobId={jobs[2]}", "Priority=9000")
    assert first_started() == (jobs[2], 9000.0)
    # Under FCFS the same queue starts the first submitted job.
    fcfs = Daemon(config(cluster, tmp_path / "fcfs", True))
    assert fcfs.run_cycle().ok and fcfs.last[2].job_ids("start") == [jobs[0]]
