"""rush's jobtap priority plugin (plugins/flux/rush-priority.c) on REAL Flux instances.

Built once per session with plugins/flux/build.sh; every instance loads it by configuration
in place of ``.priority-default`` and schedules with flux-core's ``sched-simple``. The
priorities are the ones ``flux jobs`` shows and sched-simple obeys; hold and expedite keep
Flux's meaning; the values survive a plugin reload and a broker restart; hostile requests
are refused whole with a message.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rush.errors import ConfigError, RJMSError
from rush.rjms.flux import PRIORITY_MAX, FluxBackend
from tests.flux import instance, plugin_build
from tests.flux.instance import FluxInstance
from tests.flux.plugin_build import (
    CORES,
    priorities,
    query,
    site_factors,
    start,
    start_order,
    urgencies,
    wait_for,
)

SET, GET = "job-manager.rush-priority.set", "job-manager.rush-priority.get"


@pytest.fixture(scope="session")
def plugin(tmp_path_factory) -> Path:
    return plugin_build.plugin_or_skip(tmp_path_factory)


@pytest.fixture
def flux(tmp_path, plugin):
    inst = start(tmp_path / "flux", plugin)
    yield inst
    inst.stop()


def full_node_jobs(inst: FluxInstance, n: int, *extra: str) -> list[int]:
    """``n`` jobs that each take the whole node, so they run one at a time."""
    return [inst.submit(f"-n{CORES}", "-t", "5m", *extra, "sleep", "0.2") for _ in range(n)]


def rpc(inst: FluxInstance, topic: str, payload: object) -> dict:
    with_handle = inst.handle()
    return with_handle.rpc(topic, payload).get()


def rpc_error(inst: FluxInstance, topic: str, payload: object) -> OSError:
    with pytest.raises(OSError) as info:
        rpc(inst, topic, payload)
    return info.value


# -- priorities -----------------------------------------------------------------------------
def test_values_visible_in_flux_jobs_and_obeyed_by_sched_simple(flux):
    flux.run("queue", "stop")  # nothing starts until every value is set
    jobs = full_node_jobs(flux, 3)
    backend = FluxBackend(uri=flux.uri, priority_lever="plugin")
    values = {jobs[0]: 100, jobs[1]: 3 * 2**29, jobs[2]: 2**20}  # rush's range: no compression
    results = backend.set_priorities(list(values.items()))
    assert [r.ok for r in results] == [True, True, True]
    wait_for(lambda: all(priorities(flux)[j] == v for j, v in values.items()))
    assert backend.plugin_priorities(jobs) == values
    # read_state reports the real Flux priority as the job's site factor.

    def applied():
        state = backend.read_state()
        return state if site_factors(state) == values else None

    state = wait_for(applied)
    assert all(not j.held for j in state.jobs)
    assert query(flux)["stored"] == 3
    flux.run("queue", "start")
    assert start_order(flux, jobs) == sorted(jobs, key=values.__getitem__, reverse=True)
    # Values are freed when the jobs leave the queue.
    assert query(flux)["stored"] == 0 and backend.plugin_priorities(jobs) == dict.fromkeys(jobs)


def test_without_values_jobs_keep_submit_order(flux):
    flux.run("queue", "stop")
    jobs = full_node_jobs(flux, 3)
    wait_for(lambda: all(priorities(flux).get(j) == 1 for j in jobs))  # the documented default
    flux.run("queue", "start")
    assert start_order(flux, jobs) == jobs


def test_hold_and_expedite_keep_flux_meaning(flux):
    flux.run("queue", "stop")
    held, fast, plain = full_node_jobs(flux, 3)
    backend = FluxBackend(uri=flux.uri)  # auto: the plugin answers
    assert backend.lever() == "plugin"
    assert all(r.ok for r in backend.set_priorities([(held, 500), (fast, 10), (plain, 300)]))
    assert backend.hold(held).ok
    wait_for(lambda: priorities(flux)[held] == 0 and urgencies(flux)[held] == 0)
    # A new value while held is stored, not applied: the job stays held.
    assert backend.set_priority(held, 700).ok
    assert backend.plugin_priorities([held]) == {held: 700}
    time.sleep(0.3)  # the thing tested: the held job's priority does not move
    assert priorities(flux)[held] == 0
    assert {j.job_id: j.held for j in backend.read_state().jobs}[held]
    # Release: back to the urgency it had (16) and to the stored value.
    assert backend.release(held).ok
    wait_for(lambda: priorities(flux)[held] == 700 and urgencies(flux)[held] == 16)
    flux.run("job", "urgency", str(fast), "31")  # a user's expedite beats every rush value
    wait_for(lambda: priorities(flux)[fast] == PRIORITY_MAX)
    flux.run("queue", "start")
    assert start_order(flux, [held, fast, plain]) == [fast, held, plain]


def test_batches_larger_than_the_plugin_limit_are_split(tmp_path, plugin):
    inst = start(tmp_path / "flux", plugin, conf="max_batch = 2")
    try:
        inst.run("queue", "stop")
        jobs = full_node_jobs(inst, 5)
        backend = FluxBackend(uri=inst.uri, priority_lever="plugin")
        assert backend.lever() == "plugin" and backend._plugin_batch == 2
        values = [(j, 10 + k) for k, j in enumerate(jobs)]
        assert all(r.ok for r in backend.set_priorities(values))
        assert backend.plugin_priorities(jobs) == dict(values)
        err = rpc_error(inst, SET, {"priorities": [[j, 5] for j in jobs[:3]]})
        assert err.errno == errno.EINVAL and "max_batch = 2" in err.strerror
        assert query(inst)["updates"] == 5
    finally:
        inst.stop()


def test_the_gate_keeps_jobs_from_the_scheduler_until_rush_ranks_them(tmp_path, plugin):
    """gate = true: a job without a rush value has priority 0, so the job-manager sends it to no
    scheduler (the queue is started here) until rush's value arrives; expedite passes."""
    inst = start(tmp_path / "flux", plugin, conf="gate = true")
    try:
        assert query(inst)["gate"] is True
        jobs = full_node_jobs(inst, 3)
        wait_for(lambda: all(priorities(inst).get(j) == 0 for j in jobs))
        assert {j["id"]: j["state"] for j in inst.jobs()} == dict.fromkeys(jobs, "SCHED")
        fast = inst.submit(f"-n{CORES}", "-t", "5m", "--urgency=31", "sleep", "0.2")
        inst.wait_job(fast)  # expedited: Flux's maximum priority without a rush value
        backend = FluxBackend(uri=inst.uri, priority_lever="plugin")
        values = dict(zip(jobs, (30, 90, 60), strict=True))
        assert all(r.ok for r in backend.set_priorities(list(values.items())))
        assert start_order(inst, jobs) == [jobs[1], jobs[2], jobs[0]]
    finally:
        inst.stop()


# -- reload and restart ---------------------------------------------------------------------
def test_values_survive_a_plugin_reload(flux, plugin):
    flux.run("queue", "stop")
    jobs = full_node_jobs(flux, 3)
    backend = FluxBackend(uri=flux.uri, priority_lever="plugin")
    values = dict(zip(jobs, (40, 90, 60), strict=True))
    backend.set_priorities(list(values.items()))
    wait_for(lambda: all(priorities(flux)[j] == v for j, v in values.items()))
    flux.run("jobtap", "remove", "rush-priority.so")
    assert rpc_error(flux, GET, {"ids": []}).errno == errno.ENOSYS
    flux.run("jobtap", "load", str(plugin))
    # The reloaded plugin adopts the priorities the jobs have: nothing moves, nothing to resend.
    assert backend.plugin_priorities(jobs) == values
    assert query(flux)["stored"] == 3 and query(flux)["updates"] == 0
    time.sleep(0.3)  # the thing tested: nothing moves after the reload
    assert {j: priorities(flux)[j] for j in jobs} == values
    flux.run("queue", "start")
    assert start_order(flux, jobs) == [jobs[1], jobs[2], jobs[0]]


def test_values_survive_a_broker_restart(tmp_path, plugin):
    statedir = tmp_path / "state"
    statedir.mkdir()
    first = start(tmp_path / "a", plugin, statedir=statedir)
    try:
        first.run("queue", "stop")
        jobs = full_node_jobs(first, 3)
        values = dict(zip(jobs, (7, 2**29, 5000), strict=True))
        FluxBackend(uri=first.uri, priority_lever="plugin").set_priorities(list(values.items()))
        wait_for(lambda: all(priorities(first)[j] == v for j, v in values.items()))
    finally:
        first.stop()
    second = start(tmp_path / "b", plugin, statedir=statedir)
    try:
        backend = FluxBackend(uri=second.uri, priority_lever="plugin")
        assert wait_for(lambda: {j: priorities(second).get(j) for j in jobs} == values)
        assert backend.plugin_priorities(jobs) == values
        second.run("queue", "start")  # a restarted instance's queue is stopped as it was
        assert start_order(second, jobs) == [jobs[1], jobs[2], jobs[0]]
    finally:
        second.stop()


# -- hostile requests -----------------------------------------------------------------------
def test_hostile_payloads_are_refused_whole(flux):
    flux.run("queue", "stop")
    [job] = full_node_jobs(flux, 1)
    eproto = [
        {},
        {"priorities": 3},
        {"priorities": {"1": 2}},
        {"priorities": [[job, 5]], "extra": 1},
        {"priorities": [[job]]},
        {"priorities": [[job, 5, 6]]},
        {"priorities": [[job, 0]]},  # 0 is Flux's hold, not a value
        {"priorities": [[job, PRIORITY_MAX]]},  # the maximum is expedite
        {"priorities": [[job, 2**40]]},
        {"priorities": [[job, -1]]},
        {"priorities": [[job, True]]},
        {"priorities": [[job, 5.5]]},
        {"priorities": [[job, "5"]]},
        {"priorities": [[0, 5]]},
        {"priorities": [[-job, 5]]},
        {"priorities": [[str(job), 5]]},
        {"priorities": [[job, 9], [job, None]]},  # a bad last entry: the first is not applied
        {"priorities": [[[[[[[job]]]]]]]},
    ]
    for payload in eproto:
        err = rpc_error(flux, SET, payload)
        assert err.errno == errno.EPROTO and "rush-priority" in err.strerror, payload
    assert rpc_error(flux, SET, "not json").errno == errno.EPROTO
    assert rpc_error(flux, GET, {"ids": [job, -3]}).errno == errno.EPROTO
    err = rpc_error(flux, SET, {"priorities": [[job, 5]] * 4097})
    assert err.errno == errno.EINVAL and "split it" in err.strerror
    assert rpc_error(flux, GET, {"ids": [job] * 4097}).errno == errno.EINVAL
    assert priorities(flux)[job] == 1 and query(flux)["updates"] == 0
    # Unknown, inactive and running ids are ignored and counted; the rest applies.
    [done] = full_node_jobs(flux, 1)
    flux.run("cancel", str(done))
    flux.wait_job(done)
    answer = rpc(flux, SET, {"priorities": [[job, 9], [123456789, 4], [done, 4]]})
    assert answer == {"set": 1, "unknown": 2, "not_pending": 0, "ignored": [123456789, done]}
    flux.run("queue", "start")
    flux.wait_job(job)
    [running] = [flux.submit("-n1", "sleep", "30")]
    wait_for(lambda: any(int(j["id"]) == running and j["state"] == "RUN" for j in flux.jobs()))
    answer = rpc(flux, SET, {"priorities": [[running, 4]]})
    assert answer["not_pending"] == 1 and answer["ignored"] == [running]
    results = FluxBackend(uri=flux.uri).set_priorities([(running, 4), (123456789, 5)])
    assert [r.ok for r in results] == [False, False] and "no longer pending" in results[0].answer
    flux.run("cancel", str(running))


GUEST = """
import json, sys, flux
try:
    flux.Flux(sys.argv[1]).rpc(sys.argv[2], json.loads(sys.argv[3])).get()
    print("allowed")
except OSError as exc:
    print(exc.errno)
"""


def test_only_the_instance_owner_may_set(flux):
    flux.run("queue", "stop")
    [job] = full_node_jobs(flux, 1)
    # Flux's testing hooks make this connection a guest (FLUX_ROLE_USER) of another uid.
    env = dict(os.environ, FLUX_HANDLE_ROLEMASK="0x2", FLUX_HANDLE_USERID="4242")
    for topic, payload in ((SET, {"priorities": [[job, 99]]}), (GET, {"ids": [job]})):
        out = subprocess.run(
            [sys.executable, "-c", GUEST, flux.uri, topic, json.dumps(payload)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.stdout.strip() == str(errno.EPERM), out.stderr
    assert priorities(flux)[job] == 1


def test_bad_plugin_configuration_is_refused_at_load(flux, plugin):
    for conf in ("default=0", "max_batch=0", "max_batch=1000000", 'default="high"', "max_btach=2"):
        out = flux.run("jobtap", "load", str(plugin), conf, check=False)
        assert out.returncode != 0, conf
    log = flux.run("dmesg").stdout
    assert "default must be in 1..4294967294" in log and "known keys: default, max_batch" in log
    assert "max_btach" in log  # a misspelt key is named, not ignored


# -- the backend's lever --------------------------------------------------------------------
def test_lever_choice(start_flux):
    inst = start_flux(size=1, cores=CORES)  # Flux's own .priority-default, no rush plugin
    inst.run("queue", "stop")
    [job] = full_node_jobs(inst, 1)
    auto = FluxBackend(uri=inst.uri)
    assert auto.set_priority(job, 3 * 2**29).ok and auto.lever() == "urgency"
    wait_for(lambda: urgencies(inst)[job] == 30)  # compressed into Flux's urgency levels
    assert wait_for(lambda: site_factors(auto.read_state()) == {job: 30})  # priority = urgency
    forced = FluxBackend(uri=inst.uri, priority_lever="plugin")
    [result] = forced.set_priorities([(job, 5)])
    assert not result.ok and "flux jobtap load" in result.answer and "urgency" in result.answer
    with pytest.raises(ConfigError) as info:
        FluxBackend(uri=inst.uri, priority_lever="site-factor")
    assert info.value.where == "rjms.options.priority_lever" and "urgency" in info.value.fix


def test_a_stopped_broker_is_an_rjms_error(tmp_path, plugin):
    inst = start(tmp_path / "flux", plugin)
    backend = FluxBackend(uri=inst.uri, priority_lever="plugin")
    assert backend.read_state().jobs == ()
    inst.stop()
    with pytest.raises(RJMSError) as info:
        backend.read_state()
    assert "flux ping" in info.value.fix
    with pytest.raises(RJMSError):
        backend.set_priorities([(123, 4)])


def test_deploy_configuration_loads_the_plugin(tmp_path, plugin):
    deploy = instance.ROOT / "deploy" / "flux" / "jobtap-rush.toml"
    text = deploy.read_text()
    assert "/usr/local/lib/rush/rush-priority.so" in text
    inst = FluxInstance(
        tmp_path / "flux",
        size=1,
        cores=CORES,
        config=text.replace("/usr/local/lib/rush/rush-priority.so", str(plugin)),
    ).start()
    try:
        loaded = inst.run("jobtap", "list", "-a").stdout.split()
        assert "rush-priority.so" in loaded and ".priority-default" not in loaded
        assert query(inst)["default"] == 1 and query(inst)["max_batch"] == 4096
        assert FluxBackend(uri=inst.uri).lever() == "plugin"
    finally:
        inst.stop()
