"""A broker lost under a running job, on a Flux instance of several brokers (one fake node
each, ``flux start --test-size=4``), with rush as the scheduler module.

What one fake node cannot show: Flux raises a node-failure exception on the job that ran on
the lost broker and frees it; rush reads the node as down (its pool's ``copy_down``), the read
is an RJMS event for the skip counting (a node changed state), and every later start goes to
the nodes that are still up. A job that needs the lost node stays queued (the node may come
back), never denied; the module keeps running and no job is started twice.
"""

from __future__ import annotations

import platform
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests import polling
from tests.flux.journal_lock import journal_held, module_waits_on_the_journal
from tests.flux.module_config import MODULE, allocated_cores, decisions, write_config


def test_a_lost_broker_fails_its_job_and_rush_schedules_around_it(start_flux: Any, tmp_path: Path) -> None:
    flux = start_flux(size=4, cores=4)
    flux.use_scheduler(str(MODULE), f"config={write_config(tmp_path, interval=1)}")
    victim = flux.submit("-N2", "-n2", "--exclusive", "-t", "5m", "sleep", "300")
    flux.run("job", "wait-event", "-t", "60", str(victim), "start", timeout=70)
    assert flux.run("jobs", "-no", "{nodelist}", str(victim)).stdout.strip() == "node[0-1]"

    # Rank 1 goes away (rank 0 is the leader; rank 1 has no children in a 4-broker tree).
    flux.run("overlay", "disconnect", "1")
    flux.wait_job(victim, timeout=60)
    assert flux.run("jobs", "-no", "{result}", str(victim)).stdout.strip() == "FAILED"
    eventlog = flux.run("job", "eventlog", str(victim)).stdout
    assert "node failure on node1" in eventlog
    down = lambda: flux.run("resource", "list", "-s", "down", "-no", "{nodelist}").stdout  # noqa: E731
    polling.wait_for(lambda: "node1" in down(), 60, 0.5)

    after = [flux.submit("-N2", "-n2", "--exclusive", "-t", "1m", "hostname") for _ in range(3)]
    whole = flux.submit("-N4", "-n4", "--exclusive", "-t", "1m", "hostname")  # needs node1 too
    for job_id in after:
        flux.wait_job(job_id, timeout=60)
        assert flux.run("jobs", "-no", "{result} {nodelist}", str(job_id)).stdout.split() == [
            "COMPLETED",
            "node[0,2]",
        ]
    # The 4-node job waits for the lost node: queued, not started, not denied.
    assert flux.run("jobs", "-no", "{state}", str(whole)).stdout.strip() == "SCHED"
    starts = decisions(tmp_path, "start")
    assert {d["job_id"] for d in starts} >= {victim, *after} and whole not in {d["job_id"] for d in starts}
    assert all(n == 1 for n in Counter(d["job_id"] for d in starts).values())  # nothing started twice
    assert all(d["status"] == "done" for d in starts)
    assert not decisions(tmp_path, "infeasible")
    # The module is still Flux's scheduler and answers.
    listing = flux.module("list").stdout
    assert any(line.split()[:1] == ["sched-rush"] for line in listing.splitlines())
    flux.run("cancel", str(whole))
    flux.wait_job(whole, timeout=60)


def test_a_broker_lost_mid_pass_fails_the_job_placed_on_it_and_the_module_goes_on(
    start_flux: Any, tmp_path: Path
) -> None:
    """Issue 30, bad input: a broker lost while a pass runs. The pass that places a 4-node job is
    held inside the module (the test holds the journal's lock, tests/flux/journal_lock.py)
    while rank 1 is disconnected, so the pass allocates on the node list it read before the
    loss: Flux fails the job (its shell cannot start on the lost broker). The start is journaled
    with the job named, the job is allocated once and never again, the module keeps running,
    reads the node as down and schedules around it, and its pool ends with nothing allocated."""
    if platform.machine() != "x86_64":
        pytest.skip("reads the module thread's system call number (x86-64's)")
    flux = start_flux(size=4, cores=4)
    flux.use_scheduler(str(MODULE), f"config={write_config(tmp_path, interval=3600)}")
    journal = tmp_path / "journal.sqlite"
    polling.wait_for(journal.exists, 60, 0.1)
    with journal_held(journal):
        victim = flux.submit("-N4", "-n4", "--exclusive", "-t", "5m", "sleep", "300")
        polling.wait_for(lambda: module_waits_on_the_journal(flux), 20, 0.02)  # in the pass
        flux.run("overlay", "disconnect", "1")
        lost = lambda: flux.run("resource", "status", "-s", "offline", "-no", "{nodelist}").stdout  # noqa: E731
        polling.wait_for(lambda: "node1" in lost(), 20, 0.1)
    flux.wait_job(victim, timeout=60)
    assert flux.run("jobs", "-no", "{result}", str(victim)).stdout.strip() != "COMPLETED"
    eventlog = flux.run("job", "eventlog", str(victim)).stdout.splitlines()
    assert [line.split()[1] for line in eventlog].count("alloc") == 1
    starts = [d for d in decisions(tmp_path, "start") if d["job_id"] == victim]
    assert [d["status"] for d in starts] == ["done"]  # journaled, the job named, once
    assert "rank[0-3]" in starts[0]["answer"]  # the premise: placed on the lost broker too
    down = lambda: flux.run("resource", "list", "-s", "down", "-no", "{nodelist}").stdout  # noqa: E731
    polling.wait_for(lambda: "node1" in down(), 60, 0.5)
    after = flux.submit("-N2", "-n2", "--exclusive", "-t", "1m", "hostname")
    flux.wait_job(after, timeout=60)
    assert flux.run("jobs", "-no", "{result} {nodelist}", str(after)).stdout.split() == [
        "COMPLETED",
        "node[0,2]",
    ]
    assert all(n == 1 for n in Counter(d["job_id"] for d in decisions(tmp_path, "start")).values())
    assert any(line.split()[:1] == ["sched-rush"] for line in flux.module("list").stdout.splitlines())
    assert allocated_cores(flux) == 0
