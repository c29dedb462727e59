"""The Slurm backend and the job_submit plugin against a real slurmctld/slurmd on localhost."""

from __future__ import annotations

import time

import pytest

from rush.errors import RJMSError
from rush.rjms.base import get_backend
from rush.rjms.slurm import format_tags, parse_tags


def backend(cluster):
    return get_backend("slurm", slurm_conf=str(cluster.conf))


def wait_for(predicate, timeout=30.0, step=0.5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("condition not reached in time")


def job(b, job_id):
    return next((j for j in b.read_state().jobs if j.job_id == job_id), None)


def test_lua_plugin_tags_jobs(slurm):
    assert "job_submit/lua" in slurm.log_tail("slurmctld", 400) or (slurm.dir / "job_submit.lua").exists()
    b = backend(slurm)
    tagged = slurm.submit(
        "-n", "1", "-t", "5", "-J", "lmp", "--comment=rush:idempotent,wtype=network", "--wrap", "sleep 60"
    )
    plain = slurm.submit("-n", "1", "-t", "5", "--wrap", "sleep 60")
    assert job(b, tagged).tags == {"idempotent": "1", "app": "lmp", "wtype": "network"}
    assert job(b, plain).tags == {}


def test_lua_plugin_rejects_malformed_option(slurm):
    out = slurm.run(
        "/usr/bin/sbatch",
        "--parsable",
        "-n",
        "1",
        "--comment=rush:wtype=quantum",
        "--wrap",
        "true",
        check=False,
    )
    assert out.returncode != 0
    assert "wtype must be one of" in out.stderr and "Example: --comment=rush:" in out.stderr


def test_read_state_priority_hold_release(slurm):
    b = backend(slurm)
    blocker = slurm.submit("-n", str(slurm.cpus), "-t", "5", "--wrap", "sleep 120")
    waiting = slurm.submit("-n", "4", "-t", "5", "--wrap", "sleep 10")
    wait_for(lambda: job(b, blocker).state == "RUNNING")
    state = b.read_state()
    assert state.total_procs == slurm.cpus and state.free_procs == 0
    assert b.set_priority(waiting, 4321).ok
    assert job(b, waiting).site_factor == 4321
    sprio = slurm.run("/usr/bin/sprio", "-h", "-o", "%i %S").stdout
    assert f"{waiting} 4321" in " ".join(sprio.split())
    assert b.hold(waiting).ok and job(b, waiting).held
    assert b.release(waiting).ok and not job(b, waiting).held


def test_requeue_updates_tags_and_restarts(slurm):
    b = backend(slurm)
    running = slurm.submit("-n", "2", "-t", "5", "--comment=rush:idempotent", "--wrap", "sleep 30")
    wait_for(lambda: job(b, running).state == "RUNNING")
    result = b.requeue(running, {"idempotent": "1", "class": "large", "requeues": "1"})
    assert result.ok, result.answer
    requeued = wait_for(lambda: (j := job(b, running)) and j.restarts == 1 and j)
    assert requeued.tags["class"] == "large" and requeued.tags["requeues"] == "1"


def test_validation_and_unreachable(slurm, tmp_path):
    b = backend(slurm)
    for bad in (0, -3, "12; rm -rf /", True):
        with pytest.raises(RJMSError, match="invalid job id"):
            b.hold(bad)
    with pytest.raises(RJMSError, match="unsafe"):
        b.submit(name="x\nEOF", procs=1, time_limit=60, command=["true"])
    with pytest.raises(RJMSError):
        format_tags({"class": "large; scancel"})
    assert parse_tags("rush:idempotent=1;wtype=io") == {"idempotent": "1", "wtype": "io"}
    missing = get_backend("slurm", bin_dir=str(tmp_path))
    with pytest.raises(RJMSError, match="not found"):
        missing.read_state()


def test_submit_and_accounting(slurm):
    b = backend(slurm)
    job_id = b.submit(
        name="rush-acct", procs=2, time_limit=60, command=["sleep", "1"], comment="rush-replay:1"
    )
    record = wait_for(lambda: next((r for r in b.accounting([job_id]) if r["state"] == "COMPLETED"), None))
    assert record["end"] >= record["start"] >= record["submit"]
