"""The rush daemon in priority mode against REAL Flux instances: rush sets priorities through
its jobtap plugin, flux-core's sched-simple schedules.

SPF order obeyed on a full one-node instance (not submit order), skip-with-limit through
urgency 0 and back, dry-run changing nothing, and a plugin reload and a broker restart with
no duplicated action in the daemon's journal.

Nothing starts before the daemon has acted: ``flux queue stop`` keeps every job pending
(and the node free, so the core would start them now) until the test starts the queue.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from rush.daemon.service import Daemon
from rush.planner.config import RushConfig, parse_config
from rush.planner.journal import Journal
from tests.flux import plugin_build
from tests.flux.instance import FluxInstance
from tests.flux.plugin_build import (
    CORES,
    priorities,
    query,
    start,
    start_order,
    urgencies,
    wait_for,
)


@pytest.fixture(scope="session")
def plugin(tmp_path_factory) -> Path:
    return plugin_build.plugin_or_skip(tmp_path_factory)


@pytest.fixture
def flux(tmp_path, plugin):
    inst = start(tmp_path / "flux", plugin)
    inst.run("queue", "stop")
    yield inst
    inst.stop()


def config(inst: FluxInstance, tmp_path: Path, dry_run: bool = False, **sections) -> RushConfig:
    raw = {
        "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": dry_run},
        "policy": {"policy": "SPF", "threshold": "none", **sections.pop("policy", {})},
        "rjms": {"backend": "flux", "options": {"uri": inst.uri, "priority_lever": "plugin"}},
    }
    raw.update(sections)
    return parse_config(raw)


def busy_network(tmp_path: Path, skip_limit: int) -> dict:
    """A variation predictor that flags network jobs: the feature store's network counter is high."""
    store = tmp_path / "features.sqlite"
    with FeatureStore(store) as fs:
        fs.insert([Sample(time.time() - 30, h, "sysfs_ib", "ib_xmit_bytes_per_s", 9e9) for h in ("n1", "n2")])
    return {
        "policy": {"skip_limit": skip_limit},
        "variation": {"enabled": True, "threshold": 1e9, "store": str(store), "workload_type": "network"},
    }


def submit(inst: FluxInstance, limit: str, *extra: str, procs: int = CORES) -> int:
    return inst.submit(f"-n{procs}", "-t", limit, *extra, "sleep", "0.2")


NETWORK = "--setattr=rush.wtype=network"


def actions(journal: Journal, action: str) -> list[int]:
    return [d["job_id"] for d in journal.decisions(action=action)]


def applied_priorities(daemon: Daemon, jobs: list[int]) -> dict[int, int | None]:
    return {j: daemon.journal.job(j).last_site_factor for j in jobs}


# -- priorities -----------------------------------------------------------------------------
def test_spf_priorities_visible_and_obeyed(flux, tmp_path):
    long_job, short_job, mid_job = (submit(flux, t) for t in ("10m", "1m", "5m"))
    jobs = [long_job, short_job, mid_job]
    daemon = Daemon(config(flux, tmp_path))
    report = daemon.run_cycle()
    assert report.ok and report.applied == {"priority": 3}
    values = applied_priorities(daemon, jobs)
    assert values[short_job] > values[mid_job] > values[long_job] > 1
    # The values themselves, as flux jobs shows them: rush's values, not urgency levels.
    wait_for(lambda: {j: priorities(flux)[j] for j in jobs} == values)
    assert {j: urgencies(flux)[j] for j in jobs} == dict.fromkeys(jobs, 16)
    decision = daemon.journal.decisions(short_job, "priority")[0]
    assert decision["status"] == "done" and "SPF" in decision["reason"]
    # Unchanged values are not sent again; read_state sees them applied.
    assert daemon.run_cycle().applied == {}
    assert query(flux)["updates"] == 3
    assert {j.job_id: j.site_factor for j in daemon.backend.read_state().jobs} == values
    flux.run("queue", "start")
    assert start_order(flux, jobs) == [short_job, mid_job, long_job]


# -- skip-with-limit ------------------------------------------------------------------------
def test_skip_holds_through_urgency_0_then_releases_at_the_limit(flux, tmp_path):
    sections = busy_network(tmp_path, skip_limit=2)
    network = submit(flux, "30s", NETWORK, procs=2)
    user_held = submit(flux, "5m", "--urgency=0", procs=2)
    daemon = Daemon(config(flux, tmp_path, **sections))
    assert daemon.run_cycle().ok
    wait_for(lambda: urgencies(flux)[network] == 0 and priorities(flux)[network] == 0)
    assert daemon.journal.job(network).skips == 1 and daemon.journal.job(network).held_by_rush
    hold = daemon.journal.decisions(network, "hold")[0]
    assert hold["status"] == "done" and hold["model_outputs"]["variable"] is True
    # The value rush computed while holding is stored by the plugin, not applied.
    value = daemon.journal.job(network).last_site_factor
    assert value and daemon.backend.plugin_priorities([network]) == {network: value}
    # The same queue, but nothing with a limit runs: no event can come, so this cycle counts.
    assert daemon.run_cycle().ok
    assert urgencies(flux)[network] == 0 and daemon.journal.job(network).skips == 2
    assert daemon.run_cycle().ok  # limit reached: released although the network is still busy
    release = daemon.journal.decisions(network, "release")[0]
    assert release["status"] == "done" and "limit reached (2 of 2)" in release["reason"]
    wait_for(lambda: urgencies(flux)[network] == 16 and priorities(flux)[network] == value)
    assert not daemon.journal.job(network).held_by_rush
    flux.run("queue", "start")
    flux.wait_job(network)
    # Held by its user, not by rush: left out, never released.
    assert urgencies(flux)[user_held] == 0 and not daemon.journal.decisions(user_held)
    assert len(daemon.journal.decisions(network, "hold")) == 1


# -- dry-run --------------------------------------------------------------------------------
def test_dry_run_changes_nothing(flux, tmp_path):
    sections = busy_network(tmp_path, skip_limit=3)
    jobs = [submit(flux, "30s", NETWORK, procs=2), submit(flux, "1m"), submit(flux, "9m")]
    before = ({j: priorities(flux)[j] for j in jobs}, {j: urgencies(flux)[j] for j in jobs})
    assert before == (dict.fromkeys(jobs, 1), dict.fromkeys(jobs, 16))
    daemon = Daemon(config(flux, tmp_path, dry_run=True, **sections))
    for _ in range(2):
        report = daemon.run_cycle()
        assert report.ok and report.applied == {} and report.decisions["priority"] == 3
    time.sleep(0.5)  # the thing tested: nothing changes (no condition to poll for)
    assert ({j: priorities(flux)[j] for j in jobs}, {j: urgencies(flux)[j] for j in jobs}) == before
    assert query(flux)["updates"] == 0 and query(flux)["stored"] == 0
    decisions = daemon.journal.decisions()
    assert {d["mode"] for d in decisions} == {"dry-run"}
    assert {d["status"] for d in decisions if d["action"] != "start"} <= {"dry-run", "advice"}
    assert sorted(actions(daemon.journal, "priority")) == sorted(jobs)  # once each, in memory after
    assert actions(daemon.journal, "hold") == [jobs[0]] and actions(daemon.journal, "skip") == [jobs[0]]
    assert daemon.journal.jobs() == {}


# -- reload and restart ---------------------------------------------------------------------
def test_plugin_reload_duplicates_no_action(flux, tmp_path, plugin):
    sections = busy_network(tmp_path, skip_limit=5)
    network = submit(flux, "30s", NETWORK, procs=2)
    jobs = [submit(flux, "1m"), submit(flux, "9m")]
    daemon = Daemon(config(flux, tmp_path, **sections))
    assert daemon.run_cycle().applied == {"hold": 1, "priority": 3}
    values = applied_priorities(daemon, jobs)
    wait_for(lambda: {j: priorities(flux)[j] for j in jobs} == values)
    flux.run("jobtap", "remove", "rush-priority.so")
    flux.run("jobtap", "load", str(plugin))
    report = daemon.run_cycle()
    assert report.ok and report.applied == {}  # nothing resent: the plugin kept every value
    assert {j: priorities(flux)[j] for j in jobs} == values and urgencies(flux)[network] == 0
    assert actions(daemon.journal, "hold") == [network] and actions(daemon.journal, "skip") == [network]
    assert sorted(actions(daemon.journal, "priority")) == sorted([network, *jobs])
    assert query(flux)["updates"] == 0


def test_broker_restart_duplicates_no_action(tmp_path, plugin):
    statedir = tmp_path / "state"
    statedir.mkdir()
    sections = busy_network(tmp_path, skip_limit=5)
    first = start(tmp_path / "a", plugin, statedir=statedir)
    try:
        first.run("queue", "stop")
        network = submit(first, "30s", NETWORK, procs=2)
        jobs = [submit(first, "1m"), submit(first, "9m")]
        daemon = Daemon(config(first, tmp_path, **sections))
        assert daemon.run_cycle().applied == {"hold": 1, "priority": 3}
        values = applied_priorities(daemon, jobs)
        wait_for(lambda: {j: priorities(first)[j] for j in jobs} == values)
    finally:
        first.stop()
    second = start(tmp_path / "b", plugin, statedir=statedir)
    try:
        # The queue stays stopped across the restart, so every job is still pending.
        pending = {int(j["id"]) for j in second.jobs() if j["state"] in ("SCHED", "PRIORITY", "DEPEND")}
        assert pending == {network, *jobs}
        restarted = Daemon(config(second, tmp_path, **sections))  # the same journal
        report = restarted.run_cycle()
        assert report.ok and report.applied == {}
        assert {j: priorities(second)[j] for j in jobs} == values and urgencies(second)[network] == 0
        journal = restarted.journal
        assert actions(journal, "hold") == [network] and actions(journal, "skip") == [network]
        assert journal.job(network).skips == 2
        assert sorted(actions(journal, "priority")) == sorted([network, *jobs])
        second.run("queue", "start")
        assert start_order(second, jobs) == jobs  # 1 min before 9 min
    finally:
        second.stop()
