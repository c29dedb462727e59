"""RUSH on Fluxion without a fork: rush's daemon in priority mode beside Fluxion (flux-sched
0.54, ``sched-fluxion-resource`` + ``sched-fluxion-qmanager``) on REAL Flux instances.

The paper put RUSH inside Fluxion's qmanager (a subclass of ``queue_policy_fcfs_t``, Nichols
et al., IPDPS'22, Section V-B). Here Fluxion is unchanged: rush orders the queue through its
jobtap priority plugin and holds a flagged job with urgency 0, as the Slurm daemon holds.
The plugin's ``gate = true`` keeps every job from Fluxion until rush has ranked it (priority
0 until rush's value arrives), so a job the model flags is held before Fluxion could start
it. Checked, for Fluxion's ``fcfs`` and ``easy`` queue policies:

* rush's order is the order Fluxion starts jobs in;
* a network job is held while the real noise job (collectors/noise.py) runs and starts when
  the noise stops, or at its skip limit while the noise goes on; a compute job is not held
  (the learned model and the live feature store of tests/flux/test_rush_live.py, from
  tests/flux/conftest.py);
* flux-accounting's ``mf_priority.so`` + rush's plugin (``combine = "add"``): Fluxion
  allocates by fair-share first and rush's order among one association's jobs;
* bad input: a hold Flux refuses (the job started in between) is journaled with the job
  named, the daemon goes on, nothing is started twice.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from rush.daemon.service import Daemon
from rush.planner.config import parse_config
from rush.planner.plan import Planner
from rush.rjms.flux import FluxBackend
from tests.flux import fluxion, plugin_build
from tests.flux.accounting import Accounting, mf_priority_or_skip, submit_other, submit_root
from tests.flux.accounting import priorities as every_users_priorities
from tests.flux.instance import FluxInstance
from tests.flux.live_rush import COMPUTE, NETWORK, start_noise, started, state
from tests.flux.plugin_build import CORES, jobtap_config, priorities, start_order, urgencies, wait_for
from tests.live_rush_common import NOISY, WINDOW, window_mean

pytestmark = pytest.mark.flux
QUEUE_POLICIES = ("fcfs", "easy")


def on_fluxion(
    instances: list,
    workdir: Path,
    plugin: Path,
    queue_policy: str,
    cores: int = CORES,
    match: str = "lonodex",
) -> FluxInstance:
    """A one-node instance: rush's plugin (gated) in place of .priority-default, Fluxion
    scheduling (``match``: lonodex gives every job whole nodes; lonode packs jobs on a node)."""
    inst = FluxInstance(workdir, size=1, cores=cores, config=jobtap_config(plugin, "gate = true"))
    instances.append(inst)
    inst.start()
    fluxion.use_fluxion(inst, queue_policy, match)
    return inst


def daemon_for(inst: FluxInstance, tmp_path: Path, policy: dict, variation: dict | None = None) -> Daemon:
    raw: dict[str, Any] = {
        "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": False},
        "policy": {"threshold": "none", "wait_quantum": 0, **policy},
        "rjms": {"backend": "flux", "options": {"uri": inst.uri, "priority_lever": "plugin"}},
    }
    if variation:
        raw["variation"] = variation
    return Daemon(parse_config(raw))


def cycle_until(daemon: Daemon, predicate: Any, timeout: float = 120.0, before: Any = None) -> Any:
    """Daemon cycles (as ``rush daemon`` runs them, one per poll) until ``predicate`` holds;
    ``before()`` runs ahead of each cycle."""

    def step():
        if before is not None:
            before()
        assert daemon.run_cycle().ok
        return predicate()

    return plugin_build.polling.wait_for(step, timeout, 0.5)


# -- order ----------------------------------------------------------------------------------
@pytest.mark.parametrize("queue_policy", QUEUE_POLICIES)
def test_fluxion_starts_jobs_in_rushs_order(instances, tmp_path, plugin, queue_policy):
    inst = on_fluxion(instances, tmp_path / "flux", plugin, queue_policy)
    # Whole-node jobs run one at a time; SPF's order is not their submit order.
    limits = ("10m", "2m", "7m", "1m", "4m")
    jobs = [inst.submit(f"-n{CORES}", "-t", t, "sleep", "0.2") for t in limits]
    # The gate: no job reaches Fluxion before rush has ranked it (priority 0, nothing runs).
    wait_for(lambda: all(priorities(inst).get(j) == 0 for j in jobs))
    assert all(state(inst, j) == "SCHED" for j in jobs)
    daemon = daemon_for(inst, tmp_path, {"policy": "SPF"})
    report = daemon.run_cycle()
    assert report.ok and report.applied == {"priority": len(jobs)}
    rush_order = daemon.last[2].order
    assert rush_order == [jobs[3], jobs[1], jobs[4], jobs[2], jobs[0]]
    assert start_order(inst, jobs) == rush_order
    assert all(inst.run("jobs", "-no", "{result}", str(j)).stdout.strip() == "COMPLETED" for j in jobs)


@pytest.mark.parametrize("queue_policy", QUEUE_POLICIES)
def test_a_user_expedite_passes_the_gate_and_a_user_hold_stays(instances, tmp_path, plugin, queue_policy):
    inst = on_fluxion(instances, tmp_path / "flux", plugin, queue_policy)
    fast = inst.submit(f"-n{CORES}", "-t", "1m", "--urgency=31", "sleep", "0.2")
    held = inst.submit(f"-n{CORES}", "-t", "1m", "--urgency=0", "sleep", "0.2")
    inst.wait_job(fast)  # expedite: Flux's maximum priority, no rush value needed
    daemon = daemon_for(inst, tmp_path, {"policy": "FCFS"})
    assert daemon.run_cycle().ok
    assert urgencies(inst)[held] == 0 and priorities(inst)[held] == 0 and state(inst, held) == "SCHED"
    assert not daemon.journal.decisions(held, "hold")  # the user's hold, not rush's: left alone


# -- RUSH: the noise job, the learned model, skip-with-limit through holds -------------------
def rush_daemon(inst: FluxInstance, tmp_path: Path, store: Path, model: Path, skip_limit: int) -> Daemon:
    variation = {"enabled": True, "predictor": "learned", "store": str(store), "model": str(model)}
    return daemon_for(inst, tmp_path, {"policy": "FCFS", "skip_limit": skip_limit}, variation)


def held_by_rush(daemon: Daemon, inst: FluxInstance, job_id: int) -> bool:
    return urgencies(inst).get(job_id) == 0 and daemon.journal.job(job_id).held_by_rush


def arrival(inst: FluxInstance) -> int:
    """A short job no model predicts (no workload type): an RJMS event for the next cycle (a
    skip counts on the passes such events trigger, as Fluxion's loop runs on them)."""
    return inst.submit("-n1", "-t", "1m", "true")


@pytest.mark.parametrize("queue_policy", QUEUE_POLICIES)
def test_network_job_held_while_the_noise_runs_on_fluxion(
    instances, tmp_path, plugin, network_model, live_features, queue_policy
):
    inst = on_fluxion(instances, tmp_path / "flux", plugin, queue_policy, cores=16, match="lonode")
    noise_log = tmp_path / "noise.jsonl"
    noise = start_noise(inst, noise_log, "--urgency=31")  # expedited past the gate
    network = inst.submit("-n2", "-t", "5m", NETWORK, "sleep", "1")
    compute = inst.submit("-n2", "-t", "5m", COMPUTE, "sleep", "1")
    daemon = rush_daemon(inst, tmp_path, live_features, network_model, skip_limit=10_000)
    # The network job is held (urgency 0: Fluxion never sees it) pass after pass; the compute
    # job is ranked and Fluxion starts it.
    cycle_until(daemon, lambda: held_by_rush(daemon, inst, network) and started(inst, compute))
    for _ in range(3):  # and stays held, cycle after cycle, while the noise runs
        assert daemon.run_cycle().ok
        assert held_by_rush(daemon, inst, network)
    assert state(inst, network) == "SCHED" and priorities(inst)[network] == 0
    assert daemon.journal.decisions(compute, "hold") == []
    for row in daemon.journal.decisions(network):
        if row["action"] in ("hold", "skip"):
            assert row["status"] == "done" and "variability" in row["reason"]
    # The noise stops; once the window is quiet the model says "none", rush releases the job
    # and Fluxion starts it, far below its skip limit.
    inst.run("cancel", str(noise))
    wait_for(lambda: '"event": "end"' in noise_log.read_text(), timeout=60)
    cycle_until(daemon, lambda: started(inst, network), timeout=WINDOW + 90)
    [release] = daemon.journal.decisions(network, "release")
    assert release["status"] == "done" and "limit" not in release["reason"], release["reason"]
    assert daemon.journal.job(network).skips < 10_000
    inst.wait_job(network)
    assert inst.run("jobs", "-no", "{result}", str(network)).stdout.strip() == "COMPLETED"
    assert len(daemon.journal.decisions(network, "hold")) == 1  # held once, counted after


@pytest.mark.parametrize("queue_policy", QUEUE_POLICIES)
def test_network_job_starts_at_its_skip_limit_on_fluxion(
    instances, tmp_path, plugin, network_model, live_features, queue_policy
):
    inst = on_fluxion(instances, tmp_path / "flux", plugin, queue_policy, cores=16, match="lonode")
    noise_log = tmp_path / "noise.jsonl"
    start_noise(inst, noise_log, "--urgency=31")
    network = inst.submit("-n2", "-t", "5m", NETWORK, "sleep", "1")
    daemon = rush_daemon(inst, tmp_path, live_features, network_model, skip_limit=3)
    cycle_until(daemon, lambda: started(inst, network), before=lambda: arrival(inst))
    [release] = daemon.journal.decisions(network, "release")
    assert "skip limit reached (3 of 3)" in release["reason"], release["reason"]
    assert daemon.journal.job(network).skips == 3
    # Started while the noise still runs: the limit, not the model, let it go.
    assert '"event": "end"' not in noise_log.read_text()
    assert window_mean(tmp_path / "features.sqlite") > NOISY
    inst.wait_job(network)


# -- fair-share: flux-accounting's mf_priority.so + rush (combine = "add") under Fluxion ----
def alloc_time(inst: FluxInstance, job_id: int) -> float:
    """When Fluxion allocated the job (its eventlog's ``alloc``), also for a job that failed to
    launch after (userid OTHER's: no IMP here)."""
    out = inst.run("job", "wait-event", "-v", "-t", "60", str(job_id), "alloc", timeout=70).stdout
    [line] = [line for line in out.splitlines() if line.split()[1:2] == ["alloc"]]  # -v: every event until it
    return float(line.split()[0])


def test_fair_share_then_rush_under_fluxion(tmp_path, tmp_path_factory):
    mf_priority_or_skip()
    plugin = plugin_build.plugin_or_skip(tmp_path_factory)
    if fluxion.unavailable():
        pytest.skip(fluxion.unavailable())
    inst = FluxInstance(tmp_path / "flux", size=1, cores=CORES).start()
    acct = Accounting(inst)
    try:
        acct.start((str(plugin), "combine=add"))
        fluxion.use_fluxion(inst, "easy")
        inst.run("queue", "stop")
        root_long, root_short, other = (
            submit_root(inst, "10m"),
            submit_root(inst, "1m"),
            submit_other(inst, "10m"),
        )
        jobs = [root_long, root_short, other]
        wait_for(lambda: all(every_users_priorities(inst).get(j, 0) > 0 for j in jobs))
        config = parse_config(
            {
                "daemon": {"journal": str(tmp_path / "journal.sqlite"), "dry_run": False},
                "policy": {"policy": "SPF", "threshold": "none"},
                "site": {"priority_weight": 1000},
                "rjms": {"backend": "flux", "options": {"uri": inst.uri, "priority_lever": "plugin"}},
            }
        )
        daemon = Daemon(config)
        assert daemon.run_cycle().applied == {"priority": 3}
        wait_for(lambda: (p := every_users_priorities(inst))[other] > p[root_short] > p[root_long] > 50_000)
        inst.run("queue", "start")
        # Fluxion allocates by the composed priority: fair-share (OTHER's 1.0 > root's 0.5)
        # first, then rush's SPF between root's two jobs.
        times = {j: alloc_time(inst, j) for j in jobs}
        assert sorted(jobs, key=times.__getitem__) == [other, root_short, root_long], (jobs, times)
    finally:
        inst.cancel_all()
        acct.stop()
        inst.stop()


# -- bad input --------------------------------------------------------------------------------
class UserExpeditesFirst(FluxBackend):
    """The real backend, but the job's user expedites it just before rush's hold arrives (a
    race that a live system has between a daemon's read and its action), so Fluxion starts it
    and Flux refuses the hold for real."""

    def __init__(self, inst: FluxInstance, **options: Any) -> None:
        super().__init__(uri=inst.uri, **options)
        self.inst = inst

    def hold(self, job_id: int):
        self.inst.run("job", "urgency", str(job_id), "31")
        wait_for(lambda: started(self.inst, job_id))
        return super().hold(job_id)


def test_a_hold_flux_refuses_is_journaled_and_nothing_starts_twice(instances, tmp_path, plugin):
    inst = on_fluxion(instances, tmp_path / "flux", plugin, "easy")
    store = tmp_path / "busy.sqlite"  # the network counter high: the threshold predictor flags network jobs
    with FeatureStore(store) as fs:
        fs.insert([Sample(time.time() - 30, "node0", "sysfs_ib", "ib_xmit_bytes_per_s", 9e9)])
    job = inst.submit(f"-n{CORES}", "-t", "1m", NETWORK, "sleep", "1")
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": False},
            "policy": {"policy": "FCFS", "threshold": "none", "skip_limit": 5},
            "variation": {"enabled": True, "threshold": 1e9, "store": str(store), "workload_type": "network"},
            "rjms": {"backend": "flux", "options": {"uri": inst.uri, "priority_lever": "plugin"}},
        }
    )
    planner = Planner(config, backend=UserExpeditesFirst(inst, priority_lever="plugin"))
    report = planner.run_cycle()
    assert report.ok  # the cycle completes; the refused hold is journaled, not raised
    [hold] = planner.journal.decisions(job, "hold")
    assert hold["status"] == "failed" and hold["job_id"] == job, hold
    assert not planner.journal.job(job).held_by_rush
    inst.wait_job(job)
    assert planner.run_cycle().ok  # and the next cycle goes on: nothing planned for the ended job
    assert len(planner.journal.decisions(job, "hold")) == 1
    eventlog = inst.run("job", "eventlog", str(job)).stdout.split("\n")
    assert sum(1 for line in eventlog if line.split()[1:2] == ["start"]) == 1
    assert inst.run("jobs", "-no", "{result}", str(job)).stdout.strip() == "COMPLETED"
