"""The daemon against the real Slurm: priorities, skips, false-small requeues, dry-run,
an outage of slurmctld, and a kill -9 in the middle of a cycle."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from rush.daemon.config import RushConfig
from rush.daemon.journal import Journal
from rush.daemon.service import Daemon
from tests.slurm.test_backend import backend, job, wait_for


def config(cluster, tmp_path, **policy) -> RushConfig:
    return RushConfig.model_validate(
        {
            "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": False},
            "policy": {"policy": "SPF", **policy},
            "rjms": {"backend": "slurm", "options": {"slurm_conf": str(cluster.conf)}},
        }
    )


def fill_machine(cluster) -> int:
    return cluster.submit("-n", str(cluster.cpus), "-t", "10", "--wrap", "sleep 300")


def test_site_factors_follow_the_core_order(slurm, tmp_path):
    b = backend(slurm)
    blocker = fill_machine(slurm)
    wait_for(lambda: job(b, blocker).state == "RUNNING")
    long_job = slurm.submit("-n", "4", "-t", "30", "--wrap", "sleep 5")
    short_job = slurm.submit("-n", "4", "-t", "5", "--wrap", "sleep 5")
    report = Daemon(config(slurm, tmp_path)).run_cycle()
    assert report.ok and report.applied["priority"] == 2
    # SPF: the shorter request ranks first and gets the larger site factor.
    assert job(b, short_job).site_factor == 2 and job(b, long_job).site_factor == 1
    journal = Journal(tmp_path / "journal.sqlite")
    reasons = [d["reason"] for d in journal.decisions(short_job) if d["action"] == "priority"]
    assert reasons and "rank 1 of 2" in reasons[0] and "SPF" in reasons[0]


def test_dry_run_changes_nothing(slurm, tmp_path):
    b = backend(slurm)
    blocker = fill_machine(slurm)
    wait_for(lambda: job(b, blocker).state == "RUNNING")
    pending = slurm.submit(
        "-n", "4", "-t", "5", "--comment=rush:idempotent,wtype=network", "--wrap", "sleep 5"
    )
    before = job(b, pending)
    cfg = config(slurm, tmp_path)
    cfg.daemon.dry_run = True
    report = Daemon(cfg).run_cycle()
    assert report.ok and report.applied == {} and report.decisions["priority"] == 1
    after = job(b, pending)
    assert (after.site_factor, after.held, after.tags) == (before.site_factor, before.held, before.tags)
    assert {d["mode"] for d in Journal(tmp_path / "journal.sqlite").decisions()} == {"dry-run"}


def test_skip_then_release_after_the_limit(slurm, tmp_path):
    b = backend(slurm)
    store = tmp_path / "features.sqlite"
    with FeatureStore(store) as fs:  # the network is busy now, on every node
        fs.insert([Sample(time.time() - 30, h, "sysfs_ib", "ib_xmit_bytes_per_s", 9e9) for h in ("n1", "n2")])
    cfg = config(slurm, tmp_path, skip_limit=2)
    cfg.variation = cfg.variation.model_copy(update={"enabled": True, "threshold": 1e9, "store": store})
    network = slurm.submit("-n", "2", "-t", "5", "--comment=rush:wtype=network", "--wrap", "sleep 2")
    compute = slurm.submit(
        "-n", "2", "-t", "5", "--comment=rush:wtype=compute", "--hold", "--wrap", "sleep 2"
    )
    daemon = Daemon(cfg)
    daemon.run_cycle()
    assert job(b, network).held and daemon.journal.job(network).skips == 1
    daemon.run_cycle()
    assert job(b, network).held and daemon.journal.job(network).skips == 2
    daemon.run_cycle()  # limit reached: released although the network is still busy
    assert not daemon.journal.job(network).held_by_rush
    wait_for(lambda: (j := job(b, network)) is not None and j.state in ("RUNNING", "COMPLETED"))
    # The compute job was held by its user, not by rush: rush never releases it.
    assert job(b, compute).held and not daemon.journal.job(compute).held_by_rush


def false_small_job(cluster, idempotent: bool) -> int:
    comment = "--comment=rush:idempotent" if idempotent else "--comment=rush:wtype=compute"
    job_id = cluster.submit("-n", "2", "-t", "5", comment, "--wrap", "sleep 12")
    tags = "rush:idempotent=1;class=small" if idempotent else "rush:wtype=compute;class=small"
    # The class tag stands in for a model's prediction (an administrator may set it too).
    cluster.run("/usr/bin/scontrol", "update", f"JobId={job_id}", f"AdminComment={tags}")
    return job_id


def test_opted_in_false_small_job_is_requeued_once_and_finishes_as_large(slurm, tmp_path):
    b = backend(slurm)
    victim = false_small_job(slurm, idempotent=True)
    daemon = Daemon(config(slurm, tmp_path, kill_false_small=True, divider=3, use_classes=True))
    wait_for(lambda: job(b, victim).state == "RUNNING")
    time.sleep(4)  # past the divider
    daemon.run_cycle()
    requeued = wait_for(lambda: (j := job(b, victim)) and j.restarts == 1 and j)
    assert requeued.tags["class"] == "large" and requeued.tags["requeues"] == "1"
    kills = [d for d in daemon.journal.decisions(victim) if d["action"] == "kill"]
    assert len(kills) == 1 and kills[0]["status"] == "done" and "divider" in kills[0]["reason"]
    # It runs again as large and is never killed a second time.
    deadline = time.time() + 60
    while time.time() < deadline and job(b, victim).state != "COMPLETED":
        daemon.run_cycle()
        time.sleep(1)
    assert job(b, victim).state == "COMPLETED" and job(b, victim).restarts == 1
    assert len([d for d in daemon.journal.decisions(victim) if d["action"] == "kill"]) == 1


def test_opted_out_job_is_never_touched(slurm, tmp_path):
    b = backend(slurm)
    keep = false_small_job(slurm, idempotent=False)
    daemon = Daemon(config(slurm, tmp_path, kill_false_small=True, divider=3, use_classes=True))
    wait_for(lambda: job(b, keep).state == "RUNNING")
    time.sleep(4)
    for _ in range(3):
        daemon.run_cycle()
    assert job(b, keep).restarts == 0
    assert not [d for d in daemon.journal.decisions(keep) if d["action"] in ("kill", "skip", "release")]


def test_no_action_while_slurmctld_is_down_and_resume(slurm, tmp_path):
    b = backend(slurm)
    blocker = fill_machine(slurm)
    wait_for(lambda: job(b, blocker).state == "RUNNING")
    pending = slurm.submit("-n", "4", "-t", "5", "--wrap", "sleep 5")
    cfg = config(slurm, tmp_path)
    cfg.rjms.options["timeout"] = 5
    daemon = Daemon(cfg)
    slurm.stop_slurmctld()
    try:
        report = daemon.run_cycle()
        assert not report.ok and report.decisions == {}
        assert daemon.journal.decisions() == []  # nothing decided on stale data
    finally:
        slurm.start_slurmctld()
    wait_for(lambda: daemon.run_cycle().ok, timeout=60, step=1)
    assert job(b, pending).site_factor == 1


CRASHING_DAEMON = textwrap.dedent(
    """
    import os, signal, sys
    from rush.daemon.config import RushConfig
    from rush.daemon.service import Daemon
    cfg = RushConfig.model_validate_json(sys.argv[1])
    daemon = Daemon(cfg)
    # Die like kill -9 after the requeue intent is journaled, before Slurm is asked.
    daemon.backend.requeue = lambda job_id, tags: os.kill(os.getpid(), signal.SIGKILL)
    daemon.run_cycle()
    """
)


def test_recovery_after_kill_9_mid_cycle(slurm, tmp_path):
    b = backend(slurm)
    victim = false_small_job(slurm, idempotent=True)
    cfg = config(slurm, tmp_path, kill_false_small=True, divider=3, use_classes=True)
    wait_for(lambda: job(b, victim).state == "RUNNING")
    time.sleep(4)
    out = subprocess.run(
        [sys.executable, "-c", CRASHING_DAEMON, cfg.model_dump_json()], env={**os.environ}, timeout=120
    )
    assert out.returncode == -9
    journal = Journal(tmp_path / "journal.sqlite")
    assert [(d["action"], d["status"]) for d in journal.decisions(victim) if d["action"] == "kill"] == [
        ("kill", "intent")
    ]
    # A fresh daemon reconciles the intent against Slurm (the requeue never happened), the
    # core decides again on fresh data, and the job is requeued exactly once in all.
    daemon = Daemon(cfg)
    for _ in range(3):
        daemon.run_cycle()
    kills = [d for d in daemon.journal.decisions(victim) if d["action"] == "kill"]
    assert "reconciled" in kills[0]["answer"] and kills[0]["status"] != "intent"
    assert sum(1 for d in kills[1:] if d["status"] == "done") == 1
    assert wait_for(lambda: (j := job(b, victim)) and j.restarts == 1 and j)
    for _ in range(2):
        daemon.run_cycle()
    assert job(b, victim).restarts == 1
