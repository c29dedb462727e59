"""The daemon against the REAL Slurm of the ``slurm_cluster`` fixture (slurmctld, slurmd, munge),
on every install the fixture runs (22.05, 25.11).

Site factors visible in squeue, skip (hold) then release at the limit, a false-small job
requeued once and finished as large, an opted-out job never touched, dry-run changing
nothing, kill -9 in the middle of a cycle, slurmctld stopped and started again, and the
``rush daemon`` process itself with its metrics endpoint and SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import requests

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from rush.daemon.service import Daemon
from rush.jit_cache import configure_numba_cache
from rush.planner.config import RushConfig, parse_config
from rush.planner.journal import Journal
from rush.rjms.base import RJMSJob, get_backend
from tests import polling


def wait_for(predicate, timeout: float = 45.0, step: float = 0.5):
    return polling.wait_for(predicate, timeout, step)


def job(cluster, job_id: int) -> RJMSJob | None:
    return get_backend("slurm", **cluster.options()).job(job_id)


def state_of(cluster, job_id: int) -> str:
    found = job(cluster, job_id)
    return found.state if found else ""


def config(cluster, tmp_path: Path, policy: dict | None = None, **sections) -> RushConfig:
    raw = {
        "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": False},
        "policy": {"policy": "SPF", "threshold": "none", **(policy or {})},
        "rjms": {"backend": "slurm", "options": cluster.options(timeout=8)},
    }
    raw.update(sections)
    return parse_config(raw)


def fill_machine(cluster) -> int:
    blocker = cluster.submit("-n", str(cluster.cpus), "-t", "10", "--wrap", "sleep 300")
    wait_for(lambda: state_of(cluster, blocker) == "RUNNING")
    return blocker


def squeue_priorities(cluster) -> dict[int, int]:
    out = cluster.run(cluster.tool("squeue"), "-h", "-t", "PD", "-o", "%i %Q").stdout
    return {int(a): int(b) for a, b in (line.split() for line in out.splitlines())}


FALSE_SMALL = {"kill_false_small": True, "divider": 3, "use_classes": True}
# The rule classifier: a job asking for at most 2 minutes is predicted small.
SMALL_RULE = {"small_below": 120}


def false_small_job(cluster, idempotent: bool, seconds: int = 10) -> int:
    comment = "--comment=rush:idempotent,wtype=compute" if idempotent else "--comment=rush:wtype=compute"
    return cluster.submit("-n", "2", "-t", "1", comment, "--wrap", f"sleep {seconds}")


def wait_past_divider(cluster, job_id: int) -> None:
    """Until the job has run past FALSE_SMALL's divider by the start time Slurm records (what
    the daemon compares with its clock), with 0.5 s to spare."""
    past = FALSE_SMALL["divider"] + 0.5

    def past_divider() -> bool:
        found = job(cluster, job_id)
        return bool(found and found.state == "RUNNING" and found.start and time.time() - found.start > past)

    wait_for(past_divider, step=0.2)


def kills(journal: Journal, job_id: int) -> list[tuple[str, str]]:
    return [(d["status"], d["answer"]) for d in journal.decisions(job_id, "kill")]


# -- priorities -----------------------------------------------------------------------------
def test_site_factors_visible_in_squeue_and_set_only_when_changed(slurm, tmp_path):
    fill_machine(slurm)
    long_job = slurm.submit("-n", "4", "-t", "30", "--wrap", "sleep 5")
    short_job = slurm.submit("-n", "4", "-t", "5", "--wrap", "sleep 5")
    daemon = Daemon(config(slurm, tmp_path))
    report = daemon.run_cycle()
    assert report.ok and report.applied == {"priority": 2}
    # SPF: the shorter request ranks first and gets the larger site factor, which Slurm
    # adds to the job's priority (every other factor weighs 0 in the test cluster).
    assert job(slurm, short_job).site_factor > job(slurm, long_job).site_factor > 0
    assert job(slurm, short_job).site_factor == daemon.journal.job(short_job).last_site_factor
    priorities = squeue_priorities(slurm)
    assert priorities[short_job] > priorities[long_job]
    assert slurm.scontrol_job(short_job)["Priority"] == str(priorities[short_job])
    decision = daemon.journal.decisions(short_job, "priority")[0]
    assert decision["status"] == "done" and "SPF" in decision["reason"]
    # Unchanged ranks: nothing is sent to Slurm again.
    assert daemon.run_cycle().applied == {}
    assert len(daemon.journal.decisions(short_job, "priority")) == 1
    # A new, even shorter job goes on top; the others keep theirs: one update.
    before = [job(slurm, j).site_factor for j in (short_job, long_job)]
    shortest = slurm.submit("-n", "4", "-t", "2", "--wrap", "sleep 5")
    assert daemon.run_cycle().applied == {"priority": 1}
    factors = [job(slurm, j).site_factor for j in (shortest, short_job, long_job)]
    assert factors[0] > factors[1] > factors[2] and factors[1:] == before


def test_dry_run_changes_nothing(slurm, tmp_path):
    fill_machine(slurm)
    pending = slurm.submit(
        "-n", "4", "-t", "5", "--comment=rush:idempotent,wtype=network", "--wrap", "sleep 5"
    )
    before = job(slurm, pending)
    cfg = config(slurm, tmp_path)
    cfg.daemon.dry_run = True
    daemon = Daemon(cfg)
    for _ in range(2):
        report = daemon.run_cycle()
        assert report.ok and report.applied == {} and report.decisions["priority"] == 1
    after = job(slurm, pending)
    assert (after.site_factor, after.held, after.tags, after.restarts) == (
        before.site_factor,
        before.held,
        before.tags,
        before.restarts,
    )
    decisions = daemon.journal.decisions()
    assert {d["mode"] for d in decisions} == {"dry-run"}
    # The would-be priority is journaled once: dry-run remembers it in memory, not in the journal.
    assert [d["status"] for d in decisions if d["action"] == "priority"] == ["dry-run"]
    assert daemon.journal.jobs() == {}


# -- skips ----------------------------------------------------------------------------------
def busy_network(tmp_path: Path, skip_limit: int) -> dict:
    store = tmp_path / "features.sqlite"
    with FeatureStore(store) as fs:
        fs.insert([Sample(time.time() - 30, h, "sysfs_ib", "ib_xmit_bytes_per_s", 9e9) for h in ("n1", "n2")])
    return {
        "policy": {"skip_limit": skip_limit},
        "variation": {"enabled": True, "threshold": 1e9, "store": str(store), "workload_type": "network"},
    }


# The core skips a flagged job only when it would start it now, so the machine has room;
# a begin time in the future keeps Slurm from starting the job before rush holds it.
LATER = "--begin=now+600"


def test_skip_holds_then_releases_at_the_limit(slurm, tmp_path):
    sections = busy_network(tmp_path, skip_limit=2)
    cfg = config(slurm, tmp_path, policy=sections.pop("policy"), **sections)
    network = slurm.submit("-n", "2", "-t", "5", "--comment=rush:wtype=network", LATER, "--wrap", "sleep 2")
    compute = slurm.submit(
        "-n", "2", "-t", "5", "--comment=rush:wtype=compute", "--hold", "--wrap", "sleep 2"
    )
    daemon = Daemon(cfg)
    daemon.run_cycle()
    held = job(slurm, network)
    assert held.held and daemon.journal.job(network).skips == 1
    hold = daemon.journal.decisions(network, "hold")[0]
    assert hold["status"] == "done" and hold["model_outputs"]["variable"] is True
    assert hold["model_outputs"]["variation_last_mean"] == 9e9 and "variability" in hold["reason"]
    # The same queue: a periodic cycle, but nothing with a limit runs, so no event can come and
    # it counts (rush.core.skip_with_limit; tests/campaign/test_live_hold.py has the other case).
    daemon.run_cycle()
    assert job(slurm, network).held and daemon.journal.job(network).skips == 2
    daemon.run_cycle()  # limit reached: released although the network is still busy
    assert not job(slurm, network).held and not daemon.journal.job(network).held_by_rush
    release = daemon.journal.decisions(network, "release")[0]
    assert release["status"] == "done" and "limit reached (2 of 2)" in release["reason"]
    slurm.run(slurm.tool("scontrol"), "update", f"JobId={network}", "StartTime=now")
    wait_for(lambda: state_of(slurm, network) in ("RUNNING", "COMPLETED"))
    # The compute job was held by its user, not by rush: rush never releases it.
    assert job(slurm, compute).held and not daemon.journal.decisions(compute)


# -- false-small kills ----------------------------------------------------------------------
def test_opted_in_false_small_job_requeued_once_and_finishes_as_large(slurm, tmp_path):
    victim = false_small_job(slurm, idempotent=True)
    daemon = Daemon(config(slurm, tmp_path, FALSE_SMALL, models=SMALL_RULE))
    wait_past_divider(slurm, victim)
    report = daemon.run_cycle()
    assert report.applied.get("kill") == 1
    # Asynchronous: the cycle issued the requeue and returned; the intent stays open.
    [(status, answer)] = kills(daemon.journal, victim)
    assert status == "intent" and answer.startswith("requeue issued")
    issued = time.monotonic()
    requeued = wait_for(lambda: (j := job(slurm, victim)) and j.restarts == 1 and j)
    assert requeued.tags["class"] == "large" and requeued.tags["requeues"] == "1"
    assert requeued.tags["idempotent"] == "1" and requeued.tags["wtype"] == "compute"
    wait_for(lambda: state_of(slurm, victim) != "COMPLETING", step=0.1)
    completing = time.monotonic() - issued
    kill = daemon.journal.decisions(victim, "kill")[0]
    assert "divider" in kill["reason"] and kill["model_outputs"]["class_source"] == "rule"
    # The next cycle confirms it from the restart count and brings the begin time back.
    assert daemon.run_cycle().ok
    [(status, answer)] = kills(daemon.journal, victim)
    assert status == "done" and "restart count 0 -> 1" in answer and "begin in 5 s" in answer
    print(
        f"requeue cycle {report.seconds:.2f} s; the old run was completing for ~{completing:.2f} s after it"
    )
    # It runs again as large, past the divider, and is never killed a second time.
    deadline = time.time() + 90
    while time.time() < deadline and state_of(slurm, victim) != "COMPLETED":
        daemon.run_cycle()
        time.sleep(1)
    assert state_of(slurm, victim) == "COMPLETED" and job(slurm, victim).restarts == 1
    assert len(kills(daemon.journal, victim)) == 1


def test_opted_out_job_is_never_touched(slurm, tmp_path):
    keep = false_small_job(slurm, idempotent=False, seconds=8)
    daemon = Daemon(config(slurm, tmp_path, FALSE_SMALL, models=SMALL_RULE))
    wait_past_divider(slurm, keep)
    for _ in range(3):
        assert daemon.run_cycle().ok
    assert job(slurm, keep).restarts == 0 and job(slurm, keep).tags.get("class") is None
    assert daemon.journal.decisions(keep) == []
    wait_for(lambda: state_of(slurm, keep) == "COMPLETED")


# -- outages and crashes --------------------------------------------------------------------
def test_no_action_while_slurmctld_is_down_then_resume(slurm, tmp_path):
    fill_machine(slurm)
    pending = slurm.submit("-n", "4", "-t", "5", "--wrap", "sleep 5")
    daemon = Daemon(config(slurm, tmp_path))
    slurm.stop_slurmctld()
    try:
        reports = [daemon.run_cycle() for _ in range(2)]
        assert [r.outcome for r in reports] == ["rjms_error", "rjms_error"]
        assert daemon.journal.decisions() == [] and daemon.journal.open_intents() == []
        assert daemon.failures == 2 and daemon.next_delay() == 2 * daemon.config.daemon.cycle_interval
        assert daemon.metrics.registry.get_sample_value("rush_rjms_errors_total") == 2
    finally:
        slurm.start_slurmctld()
    report = wait_for(lambda: (r := daemon.run_cycle()).ok and r, timeout=90, step=1)
    assert report.applied == {"priority": 1} and daemon.failures == 0
    assert job(slurm, pending).site_factor == daemon.journal.job(pending).last_site_factor > 0


CRASHING = textwrap.dedent(
    """
    import os, signal, sys
    from rush.planner.config import RushConfig
    from rush.daemon.service import Daemon
    cfg = RushConfig.model_validate_json(sys.argv[1])
    daemon = Daemon(cfg)
    where, method = sys.argv[2], sys.argv[3]
    real = getattr(daemon.backend, method)

    def crash(*args, **kwargs):
        if where == "after":  # Slurm did it, the journal never heard back
            real(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(daemon.backend, method, crash)
    daemon.run_cycle()
    """
)


def crash_in(cfg: RushConfig, where: str, method: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CRASHING, cfg.model_dump_json(), where, method],
        timeout=180,
        capture_output=True,
    )
    assert out.returncode == -signal.SIGKILL, out.stderr.decode()[-2000:]


def test_kill_9_before_the_requeue_reaches_slurm(slurm, tmp_path):
    # Long enough to be still running after the crashed daemon's start-up on a loaded host.
    victim = false_small_job(slurm, idempotent=True, seconds=40)
    cfg = config(slurm, tmp_path, FALSE_SMALL, models=SMALL_RULE)
    wait_past_divider(slurm, victim)
    crash_in(cfg, "before", "requeue")
    assert kills(Journal(cfg.daemon.journal), victim) == [("intent", "")]
    assert job(slurm, victim).restarts == 0
    # A fresh daemon sees that Slurm never requeued it, and the core decides again: one requeue.
    daemon = Daemon(cfg)
    daemon.run_cycle()
    wait_for(lambda: job(slurm, victim).restarts == 1)
    for _ in range(2):
        daemon.run_cycle()
    history = kills(daemon.journal, victim)
    assert [s for s, _ in history] == ["failed", "done"] and "not requeued" in history[0][1]
    assert job(slurm, victim).restarts == 1


def test_kill_9_after_the_requeue_before_the_journal_heard(slurm, tmp_path):
    # Long enough to be still running after the crashed daemon's start-up on a loaded host
    # (with 10 s it once ended first, at load 20, and the crashing daemon had nothing to kill).
    victim = false_small_job(slurm, idempotent=True, seconds=40)
    cfg = config(slurm, tmp_path, FALSE_SMALL, models=SMALL_RULE)
    wait_past_divider(slurm, victim)
    crash_in(cfg, "after", "requeue")
    assert kills(Journal(cfg.daemon.journal), victim) == [("intent", "")]
    wait_for(lambda: job(slurm, victim).restarts == 1)
    daemon = Daemon(cfg)
    deadline = time.time() + 240
    while time.time() < deadline and state_of(slurm, victim) != "COMPLETED":
        assert daemon.run_cycle().ok
        time.sleep(1)
    # Reconciled from the restart count: done, never issued a second time.
    [(status, answer)] = kills(daemon.journal, victim)
    assert status == "done" and "restart count 0 -> 1" in answer
    assert state_of(slurm, victim) == "COMPLETED", slurm.log_tail("slurmctld", 30) + slurm.log_tail(
        "slurmd", 20
    )
    assert job(slurm, victim).restarts == 1


def test_kill_9_mid_cycle_keeps_skip_counts(slurm, tmp_path):
    sections = busy_network(tmp_path, skip_limit=3)
    cfg = config(slurm, tmp_path, policy=sections.pop("policy"), **sections)
    network = slurm.submit("-n", "2", "-t", "5", "--comment=rush:wtype=network", LATER, "--wrap", "sleep 2")
    Daemon(cfg).run_cycle()  # cycle 1: hold, skip 1
    assert job(slurm, network).held and Journal(cfg.daemon.journal).job(network).skips == 1
    # Cycle 2 dies while setting a new job's site factor, after the skip was counted.
    slurm.submit("-n", "2", "-t", "5", LATER, "--wrap", "sleep 2")
    crash_in(cfg, "before", "set_priority")
    assert Journal(cfg.daemon.journal).job(network).skips == 2
    daemon = Daemon(cfg)
    daemon.run_cycle()  # cycle 3: the third skip, the priority intent reconciled
    assert daemon.journal.job(network).skips == 3 and job(slurm, network).held
    assert daemon.journal.open_intents() == []
    daemon.run_cycle()  # cycle 4: the limit is reached, released
    assert not job(slurm, network).held and not daemon.journal.job(network).held_by_rush
    assert [d["value"] for d in daemon.journal.decisions(network, "skip")] == [2.0, 3.0]


# -- the daemon process ---------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_rush_daemon_process_applies_serves_metrics_and_stops_on_sigterm(slurm, tmp_path):
    fill_machine(slurm)
    pending = slurm.submit("-n", "4", "-t", "5", "--wrap", "sleep 5")
    port = free_port()
    path = tmp_path / "rush.toml"
    path.write_text(
        f'[daemon]\ncycle_interval = 1\njournal = "{tmp_path / "journal.sqlite"}"\n'
        f'metrics_address = "127.0.0.1:{port}"\n'
        f'[policy]\npolicy = "FCFS"\n[rjms]\nbackend = "slurm"\n[rjms.options]\nslurm_conf = "{slurm.conf}"\n'
        f'bin_dir = "{slurm.bin}"\n'
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "rush", "daemon", "--config", str(path), "--apply"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: job(slurm, pending).site_factor > 0, timeout=60)

        def scraped() -> str:
            try:
                text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
            except requests.ConnectionError:
                return ""
            return text if 'rush_decisions_total{kind="priority",outcome="done"} 1.0' in text else ""

        text = wait_for(scraped, timeout=30)
        assert "rush_queue_length 1.0" in text and "rush_dry_run 0.0" in text
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, output
    assert "applying decisions" in output and "rush daemon stopped" in output


# -- rush daemon --once: the validation command never acts without --apply ------------------
def test_once_never_acts_unless_apply_is_given(slurm, tmp_path):
    fill_machine(slurm)
    pending = slurm.submit("-n", "4", "-t", "5", "--wrap", "sleep 5")
    path = tmp_path / "rush.toml"
    path.write_text(
        f'[daemon]\ndry_run = false\njournal = "{tmp_path / "journal.sqlite"}"\n'
        f'[policy]\npolicy = "FCFS"\n[rjms]\nbackend = "slurm"\n[rjms.options]\nslurm_conf = "{slurm.conf}"\n'
        f'bin_dir = "{slurm.bin}"\n'
    )

    def once(*extra: str) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-m", "rush", "daemon", "--config", str(path), "--once", *extra]
        return subprocess.run(argv, capture_output=True, text=True, timeout=300)

    out = once()
    assert out.returncode == 0, out.stderr
    assert "(dry-run): ok" in out.stdout and "applied {}" in out.stdout
    assert job(slurm, pending).site_factor == 0  # the config's dry_run = false did not apply
    out = once("--apply")
    assert out.returncode == 0 and "(apply): ok" in out.stdout, out.stdout + out.stderr
    assert job(slurm, pending).site_factor > 0


# -- a host with slurmrestd and no Slurm commands --------------------------------------------
REST_ONLY_CYCLES = textwrap.dedent(
    """
    import json, shutil, sys
    from rush.planner.config import RushConfig
    from rush.daemon.service import Daemon
    assert shutil.which("scontrol") is None and shutil.which("squeue") is None
    daemon = Daemon(RushConfig.model_validate_json(sys.argv[1]))
    reports = [daemon.run_cycle() for _ in range(int(sys.argv[2]))]
    print(json.dumps([{"ok": r.ok, "error": r.error, "applied": r.applied} for r in reports]))
    """
)


def rest_only_cycles(cfg: RushConfig, cycles: int) -> list[dict]:
    """Daemon cycles in a process whose PATH holds only Python: no scontrol/squeue/sbatch."""
    # The kernel cache this run warmed goes along: with HOME=/nonexistent the child would
    # otherwise compile every kernel the daemon calls (minutes on a loaded fresh machine, past
    # the timeout) and, as root, write a cache under /nonexistent.
    env = {
        "PATH": str(Path(sys.executable).parent),
        "HOME": "/nonexistent",
        "NUMBA_CACHE_DIR": configure_numba_cache(dict(os.environ)),
    }
    out = subprocess.run(
        [sys.executable, "-c", REST_ONLY_CYCLES, cfg.model_dump_json(), str(cycles)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_rest_only_host_holds_releases_sets_priority_and_refuses_requeue(slurm, tmp_path):
    no_commands = tmp_path / "empty-bin"
    no_commands.mkdir()
    sections = busy_network(tmp_path, skip_limit=1)
    policy = {**sections.pop("policy"), **FALSE_SMALL}
    cfg = config(slurm, tmp_path, policy=policy, models=SMALL_RULE, **sections)
    cfg.rjms.options = {**slurm.rest_options(), "bin_dir": str(no_commands), "timeout": 8}
    network = slurm.submit("-n", "2", "-t", "5", "--comment=rush:wtype=network", LATER, "--wrap", "sleep 2")
    plain = slurm.submit("-n", "2", "-t", "5", "--comment=rush:wtype=compute", LATER, "--wrap", "sleep 2")
    [first] = rest_only_cycles(cfg, 1)
    assert first["ok"] and first["applied"]["hold"] == 1 and first["applied"]["priority"] >= 1, first
    journal = Journal(cfg.daemon.journal)
    # Held through slurmrestd (POST job/N {"hold": true}).
    assert job(slurm, network).held and journal.job(network).held_by_rush
    # Priority through the job's nice (SiteFactor cannot be read back without sprio): Slurm shows it.
    factor = journal.job(plain).last_site_factor
    assert factor and int(slurm.scontrol_job(plain)["Nice"]) == -factor
    assert squeue_priorities(slurm)[plain] == factor  # every other factor weighs 0 here
    [second] = rest_only_cycles(cfg, 1)  # skip limit 1 reached: released through slurmrestd
    assert second["ok"] and second["applied"].get("release") == 1, second
    assert not job(slurm, network).held and not Journal(cfg.daemon.journal).job(network).held_by_rush
    # A false-small kill needs scontrol (no OpenAPI version has a requeue): journaled, nothing killed.
    victim = false_small_job(slurm, idempotent=True, seconds=20)
    wait_past_divider(slurm, victim)
    [third] = rest_only_cycles(cfg, 1)
    assert third["ok"], third
    [(status, answer)] = kills(Journal(cfg.daemon.journal), victim)
    assert status == "failed" and "needs scontrol" in answer and "no requeue endpoint" in answer
    assert job(slurm, victim).restarts == 0 and state_of(slurm, victim) == "RUNNING"
    assert Journal(cfg.daemon.journal).job(victim).requeues == 0
