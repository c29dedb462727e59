"""The pyslurm backend against the real Slurm 25.11 of the ``slurm_cluster`` fixture
(slurmctld, slurmd, munge built from ../shared/vendor), beside the command backend.

pyslurm 25.11 builds only against a Slurm 25.11 (``.ci/vendor-pyslurm.sh``), so these tests
run on the 25.11 cluster only and are skipped, with the reason, where pyslurm or that Slurm
is absent. Two tests replace the import instead (monkeypatch): pyslurm missing, and a pyslurm
that claims another Slurm release than slurmctld's, since neither can be installed beside
the real one here.
"""

from __future__ import annotations

import importlib.util
import math
import sys
import time

import pytest

from rush.daemon.service import Daemon
from rush.errors import BackendUnavailableError, ConfigError, RJMSError
from rush.planner.config import parse_config
from rush.planner.plan import make_backend
from rush.rjms import slurm_pyslurm
from rush.rjms.base import RJMSBackend, RJMSJob, backend_names, get_backend
from tests import polling

HAS_PYSLURM = importlib.util.find_spec("pyslurm") is not None
needs_pyslurm = pytest.mark.skipif(
    not HAS_PYSLURM,
    reason="pyslurm is not installed: .ci/vendor-pyslurm.sh .venv/bin/python builds it against Slurm 25.11",
)
# pyslurm 25.11 talks to a 25.11 slurmctld only: the session cluster of that install.
on_25_11 = pytest.mark.parametrize("slurm_cluster", ["25.11"], indirect=True)


def pyslurm_backend(cluster, **options) -> RJMSBackend:
    return get_backend("pyslurm", **cluster.options(**options))


def commands_backend(cluster, **options) -> RJMSBackend:
    return get_backend("slurm", **cluster.options(**options))


def wait_for(predicate, timeout=60.0, step=0.3):
    return polling.wait_for(predicate, timeout, step)


def state_of(b: RJMSBackend, job_id: int) -> str:
    found = b.job(job_id)  # type: ignore[attr-defined]
    return found.state if found else ""


def job(b: RJMSBackend, job_id: int) -> RJMSJob:
    found = b.job(job_id)  # type: ignore[attr-defined]
    assert found is not None, job_id
    return found


# -- without a cluster ----------------------------------------------------------------------
def test_registered_and_missing_pyslurm_is_a_clear_error(monkeypatch):
    assert "pyslurm" in backend_names()
    # As if pyslurm were not installed (None in sys.modules stops the import).
    monkeypatch.setitem(sys.modules, "pyslurm", None)
    with pytest.raises(BackendUnavailableError) as err:
        get_backend("pyslurm")
    assert "needs pyslurm, which is not installed" in str(err.value)
    assert err.value.where == "rjms backend 'pyslurm'"
    assert "SLURM_INCLUDE_DIR=PREFIX/include" in err.value.fix and "pip install 'pyslurm==" in err.value.fix


def test_bad_options_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="not a readable file") as err:
        get_backend("pyslurm", slurm_conf=str(tmp_path / "nosuch.conf"))
    assert err.value.where == "rjms.options.slurm_conf"
    with pytest.raises(ConfigError, match="invalid slurm_conf"):
        get_backend("pyslurm", slurm_conf=5)
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    with pytest.raises(ConfigError, match="timeout"):
        get_backend("pyslurm", slurm_conf=str(conf), timeout=0)
    # The daemon's configuration names the backend; unknown options are a ConfigError too.
    raw = {"rjms": {"backend": "pyslurm", "options": {"slurm_conf": str(conf), "rest_url": "http://x"}}}
    with pytest.raises(ConfigError, match="does not accept these options"):
        make_backend(parse_config(raw))


@needs_pyslurm
def test_unusable_slurm_conf_does_not_end_rush(tmp_path):
    """libslurm exit()s on a configuration it cannot read; the backend finds out in a child."""
    for name, text in {"garbage": "\x00\x01 NodeName=[[[\n", "empty": "\n"}.items():
        conf = tmp_path / f"{name}.conf"
        conf.write_text(text)
        with pytest.raises(ConfigError, match="libslurm cannot use this configuration") as err:
            get_backend("pyslurm", slurm_conf=str(conf))
        assert str(conf) in err.value.where
    assert slurm_pyslurm.major_minor("25.11.2") == "25.11" and slurm_pyslurm.major_minor("x") == ""


# -- against Slurm 25.11 ----------------------------------------------------------------------
@needs_pyslurm
@on_25_11
def test_version_mismatch_names_both_versions(slurm, monkeypatch):
    b = pyslurm_backend(slurm)
    assert b.versions.startswith("pyslurm 25.11.") and "slurmctld 25.11." in b.versions
    # A pyslurm built for another release (only one can be installed here).
    monkeypatch.setattr(b.pyslurm, "__version__", "24.11.3")
    with pytest.raises(BackendUnavailableError) as err:
        pyslurm_backend(slurm)
    message = str(err.value)
    assert "pyslurm 24.11.3 is built for Slurm 24.11, but slurmctld runs Slurm 25.11." in message
    assert "pip install 'pyslurm==25.11.*'" in err.value.fix


@needs_pyslurm
@on_25_11
def test_read_state_agrees_with_the_command_backend(slurm):
    py, cli = pyslurm_backend(slurm), commands_backend(slurm)
    blocker = slurm.submit("-n", "60", "-t", "5", "--comment=rush:idempotent", "--wrap", "sleep 120")
    waiting = slurm.submit("-n", "8", "-t", "7", "-J", "waiter", "--wrap", "sleep 10")
    unlimited = slurm.submit("-n", "1", "-t", "UNLIMITED", "--hold", "--wrap", "true")
    done = slurm.submit("-n", "1", "-t", "1", "--wrap", "true")
    wait_for(lambda: state_of(cli, blocker) == "RUNNING" and state_of(cli, done) == "COMPLETED")
    slurm.run(slurm.tool("scontrol"), "update", f"JobId={waiting}", "SiteFactor=777")
    # The reason a job waits settles after a scheduler pass (Priority, then Resources).
    wait_for(lambda: (j := job(cli, waiting)).site_factor == 777 and j.reason == "Resources")
    state, expected = py.read_state(), cli.read_state()
    assert state.jobs == expected.jobs and {j.job_id for j in state.jobs} == {blocker, waiting, unlimited}
    assert (state.total_procs, state.free_procs, state.partitions) == (
        slurm.cpus,
        slurm.cpus - 60,
        ("debug",),
    )
    assert (expected.total_procs, expected.free_procs, expected.partitions) == (
        state.total_procs,
        state.free_procs,
        state.partitions,
    )
    jobs = {j.job_id: j for j in state.jobs}
    assert jobs[blocker].tags == {"idempotent": "1", "app": "wrap"} and jobs[blocker].start is not None
    assert jobs[waiting].site_factor == 777 and jobs[waiting].requested_time == 7 * 60
    assert jobs[unlimited].held and jobs[unlimited].requested_time == math.inf
    assert py.read_state(partitions=["nosuch"]).total_procs == 0
    # Finished jobs are read explicitly, as by the commands.
    assert job(py, done) == job(cli, done) and job(py, done).state == "COMPLETED"
    assert py.job(999999) is None
    # A drained node offers no CPUs, whichever way it is read.
    slurm.run(slurm.tool("scontrol"), "update", f"NodeName={slurm.node}", "State=DRAIN", "Reason=rush-test")
    try:
        drained = py.read_state()
        assert drained.free_procs == 0 and drained.total_procs == slurm.cpus
        assert cli.read_state().free_procs == 0
    finally:
        slurm.run(slurm.tool("scontrol"), "update", f"NodeName={slurm.node}", "State=RESUME")


@needs_pyslurm
@on_25_11
def test_site_factor_hold_release(slurm):
    b = pyslurm_backend(slurm)
    blocker = slurm.submit("-n", str(slurm.cpus), "-t", "5", "--wrap", "sleep 120")
    waiting = slurm.submit("-n", "4", "-t", "5", "--wrap", "sleep 10")
    wait_for(lambda: state_of(b, blocker) == "RUNNING")
    assert int(slurm.scontrol_job(waiting)["Priority"]) == 1
    assert b.set_priority(waiting, 4321).ok
    # pyslurm adds NICE_OFFSET itself: Slurm sees 4321, not 4321 - 2**31.
    assert slurm.run(slurm.tool("sprio"), "-h", "-j", str(waiting), "-o", "%S").stdout.strip() == "4321"
    assert int(slurm.scontrol_job(waiting)["Priority"]) == 4321 and job(b, waiting).site_factor == 4321
    assert b.set_priority(waiting, -5).ok  # below the others: priority/multifactor floors at 1
    assert slurm.run(slurm.tool("sprio"), "-h", "-j", str(waiting), "-o", "%S").stdout.strip() == "-5"
    assert b.set_priority(waiting, 4321).ok
    held = b.hold(waiting)
    assert held.ok and job(b, waiting).held and job(b, waiting).reason == "JobHeldAdmin"
    assert slurm.scontrol_job(waiting)["Reason"] == "JobHeldAdmin"
    assert b.release(waiting).ok and not job(b, waiting).held
    wait_for(lambda: job(b, waiting).site_factor == 4321, timeout=10)
    refused = b.set_priority(999999, 5)
    assert not refused.ok and "Invalid job id" in refused.answer and refused.attempted
    zero = b.set_priority(waiting, 0)
    assert not zero.ok and not zero.attempted and "SiteFactor=0" in zero.answer
    assert not b.hold(999999).ok and not b.release(999999).ok


@needs_pyslurm
@on_25_11
def test_requeue_of_a_running_job(slurm):
    b = pyslurm_backend(slurm, jobcomp_file=str(slurm.jobcomp))
    running = slurm.submit("-n", "2", "-t", "5", "--comment=rush:idempotent,wtype=io", "--wrap", "sleep 15")
    wait_for(lambda: state_of(b, running) == "RUNNING")
    tags = {**job(b, running).tags, "class": "large", "requeues": "1"}
    result = b.requeue(running, tags)
    assert result.ok and result.answer.startswith("requeue issued"), result.answer
    issued = job(b, running)
    assert issued.restarts == 1 and issued.tags["class"] == "large"
    assert slurm.scontrol_job(running)["Restarts"] == "1"
    if issued.state == "COMPLETING":
        assert b.finish_requeue(issued) is None
    pending = wait_for(lambda: (j := job(b, running)) and j.state != "COMPLETING" and j)
    finished = b.finish_requeue(pending)
    assert finished is not None and finished.ok, finished
    assert job(b, running).tags == {
        "idempotent": "1",
        "app": "wrap",
        "wtype": "io",
        "class": "large",
        "requeues": "1",
    }
    # Begin time now + 5 s instead of Slurm's requeue delay: it runs again and completes.
    wait_for(lambda: state_of(b, running) == "COMPLETED", timeout=120)
    [record] = b.accounting([running])
    assert record["state"] == "COMPLETED" and record["restarts"] == 1 and record["source"] == "pyslurm"
    assert record["exit_code"] == "0:0"
    assert commands_backend(slurm).accounting([running])[0] | {"source": "pyslurm"} == record
    # A pending job is not requeued, and no tags are written.
    blocker = slurm.submit("-n", str(slurm.cpus), "-t", "5", "--wrap", "sleep 120")
    waiting = slurm.submit("-n", "2", "-t", "5", "--wrap", "sleep 5")
    wait_for(lambda: state_of(b, blocker) == "RUNNING")
    refused = b.requeue(waiting, {"class": "large"})
    assert not refused.ok and refused.answer and job(b, waiting).tags == {}


@needs_pyslurm
@on_25_11
def test_submit_cancel_and_accounting(slurm):
    b = pyslurm_backend(slurm, jobcomp_file=str(slurm.jobcomp))
    begin = time.time() + 2
    job_id = b.submit(
        name="rush-acct",
        procs=3,
        time_limit=90,
        command=["sh", "-c", "sleep 1; echo 'a;b'"],
        comment="rush:wtype=io",
        begin=begin,
    )
    submitted = job(b, job_id)
    assert submitted.name == "rush-acct" and submitted.procs == 3 and submitted.requested_time == 120
    assert submitted.tags == {"wtype": "io", "app": "rush-acct"}  # the Lua plugin saw the comment
    record = wait_for(lambda: next(iter(b.accounting([job_id])), None), timeout=60)
    assert record["state"] == "COMPLETED" and record["procs"] == 3 and record["exit_code"] == "0:0"
    assert record["end"] >= record["start"] >= begin - 1 and record["start"] >= record["submit"]
    partitioned = b.submit(name="in-debug", procs=1, time_limit=60, command=["true"], partition="debug")
    assert job(b, partitioned).partition == "debug"  # pyslurm names it "partitions"
    victim = b.submit(name="victim", procs=1, time_limit=60, command=["sleep", "60"])
    wait_for(lambda: state_of(b, victim) in ("PENDING", "RUNNING"))
    assert b.cancel(victim).ok
    wait_for(lambda: state_of(b, victim) == "CANCELLED")
    unknown = b.cancel(999999)
    assert not unknown.ok and "Invalid job id" in unknown.answer
    failing = b.submit(name="fails", procs=1, time_limit=60, command=["sh", "-c", "exit 3"])
    first = wait_for(lambda: next(iter(b.accounting([failing])), None), timeout=60)
    assert first["state"] == "FAILED" and first["exit_code"] == "3:0"
    # slurmctld's own record can still be completing when the end is first seen: either backend
    # then answers from the jobcomp file (without restarts). Compare the two settled records.
    commands = commands_backend(slurm)

    def settled(backend: RJMSBackend) -> dict:
        return wait_for(
            lambda: r if (r := backend.accounting([failing])[0])["source"] != "jobcomp" else None, timeout=30
        )

    failed = settled(b)
    assert failed["source"] == "pyslurm" and failed["state"] == "FAILED" and failed["exit_code"] == "3:0"
    assert failed == settled(commands) | {"source": "pyslurm"}


@needs_pyslurm
@on_25_11
def test_arguments_are_validated_before_slurm_sees_them(slurm):
    b = pyslurm_backend(slurm)
    for bad in (0, -3, "12; rm -rf /", True, 1.5, 2**70):
        for act in (
            b.hold,
            b.release,
            b.cancel,
            b.job,
            lambda j: b.accounting([j]),
            lambda j: b.set_priority(j, 5),
            lambda j: b.requeue(j, {"class": "large"}),
        ):
            with pytest.raises(RJMSError, match="invalid job id"):
                act(bad)
    for value in (2**31, -(2**31), 2**40, True, 1.5, "7"):
        with pytest.raises(RJMSError, match="invalid site factor"):
            b.set_priority(5, value)
    for name in ("x\nEOF", "a;b", "it's"):
        with pytest.raises(RJMSError, match="unsafe"):
            b.submit(name=name, procs=1, time_limit=60, command=["true"])
    for kwargs, message in (
        ({"procs": 0}, "invalid procs"),
        ({"time_limit": math.inf}, "invalid time limit"),
        ({"time_limit": float("nan")}, "invalid time limit"),
        ({"command": ["echo", "a\nb"]}, "invalid command"),
        ({"command": []}, "invalid command"),
        ({"begin": -1}, "invalid begin"),
    ):
        args = {"name": "x", "procs": 1, "time_limit": 60, "command": ["true"], **kwargs}
        with pytest.raises(RJMSError, match=message):
            b.submit(**args)
    with pytest.raises(RJMSError, match="invalid rush tag"):
        b.requeue(5, {"class": "large; scancel"})
    assert all(j["name"] != "x" for j in slurm.squeue_json())  # nothing was submitted


@needs_pyslurm
@on_25_11
def test_two_configurations_in_one_process(slurm, tmp_path):
    """libslurm's configuration is process-wide: each backend re-initialises it with its own."""
    copy = tmp_path / "slurm.conf"
    copy.write_text(slurm.conf.read_text())
    first, second = pyslurm_backend(slurm), get_backend("pyslurm", slurm_conf=str(copy))
    for b in (first, second, first, second):
        assert b.read_state().total_procs == slurm.cpus
    # A configuration naming a controller that is not there: the read fails, rush goes on.
    dead = tmp_path / "dead" / "slurm.conf"
    dead.parent.mkdir()
    text = slurm.conf.read_text().replace(f"SlurmctldPort={slurm.ctld_port}", "SlurmctldPort=9")
    dead.write_text(text.replace("MessageTimeout=5", "MessageTimeout=2"))
    unreachable = get_backend("pyslurm", slurm_conf=str(dead))
    assert unreachable.versions == ""  # checked on first contact
    with pytest.raises(RJMSError, match="Jobs.load failed|Config.load failed"):
        unreachable.read_state()
    assert first.read_state().total_procs == slurm.cpus


@needs_pyslurm
@on_25_11
def test_daemon_cycle_through_pyslurm(slurm, tmp_path):
    """``rjms.backend = "pyslurm"``: the daemon sets site factors through it."""
    blocker = slurm.submit("-n", str(slurm.cpus), "-t", "10", "--wrap", "sleep 300")
    long_job = slurm.submit("-n", "4", "-t", "30", "--wrap", "sleep 5")
    short_job = slurm.submit("-n", "4", "-t", "5", "--wrap", "sleep 5")
    raw = {
        "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": False},
        "policy": {"policy": "SPF", "threshold": "none"},
        "rjms": {"backend": "pyslurm", "options": slurm.options(timeout=8)},
    }
    daemon = Daemon(parse_config(raw))
    assert daemon.backend.name == "pyslurm"
    wait_for(lambda: state_of(daemon.backend, blocker) == "RUNNING")
    report = daemon.run_cycle()
    assert report.ok and report.applied == {"priority": 2}, report
    cli = commands_backend(slurm)
    assert job(cli, short_job).site_factor > job(cli, long_job).site_factor > 0
    assert job(cli, short_job).site_factor == daemon.journal.job(short_job).last_site_factor
    assert daemon.run_cycle().applied == {}
