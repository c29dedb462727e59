"""rush as Flux's scheduler (rush/flux_module/scheduler.py) on a live Flux instance.

The module replaces sched-simple; every pass goes through the daemon loop and
rush.core.schedule(), and the module allocates the core's starts. Each test reads the
evidence from Flux itself (``flux jobs``) and from rush's journal.
"""

from __future__ import annotations

import json
import platform
import re
import sqlite3
import time
from pathlib import Path

import numpy as np
import pytest

from rush.collect.base import Sample
from rush.collect.store import FeatureStore
from rush.core.config import CoreConfig
from rush.simulator.engine import simulate
from rush.workload.model import Workload
from tests.flux.journal_lock import journal_held, module_waits_on_the_journal
from tests.flux.module_config import MODULE, ROOT, allocated_cores, decisions, write_config
from tests.polling import wait_for


def load_rush(flux, config: Path, *args: str) -> None:
    flux.use_scheduler(str(MODULE), f"config={config}", *args)


def t_run(flux, job_id: int) -> float:
    return float(flux.run("jobs", "-no", "{t_run}", str(job_id)).stdout.strip())


def wait_all(flux, jobs: list[int], timeout: float = 90) -> None:
    for job_id in jobs:
        flux.wait_job(job_id, timeout=timeout)


@pytest.fixture
def rush_flux(start_flux):
    """A fresh 1-node, 16-core instance per test (the scheduler module is per instance)."""
    return start_flux(size=1, cores=16)


def test_serial_queue_starts_in_the_simulators_order(rush_flux, tmp_path):
    flux = rush_flux
    load_rush(flux, write_config(tmp_path, {"policy": "SPF"}))
    # Start-up's objects are out of the collector's reach (rush.planner.collector).
    assert re.search(r"collector settled: [1-9]\d* objects frozen", flux.run("dmesg").stdout)
    blocker = flux.submit("-n16", "-t", "1m", "sleep", "60")
    flux.run("job", "wait-event", "-t", "30", str(blocker), "start")
    limits = [50, 10, 40, 20, 30, 25, 45, 15]  # seconds, all distinct: SPF has no ties
    jobs = [flux.submit("-n16", "-t", f"{s}s", "sleep", "0.3") for s in limits]
    flux.run("cancel", str(blocker))  # every job is queued when the machine frees up
    wait_all(flux, jobs)
    real = sorted(jobs, key=lambda j: t_run(flux, j))
    # The simulator on the same queue: everything pending when the blocker ends.
    n = len(jobs) + 1
    workload = Workload(
        job_id=np.arange(n, dtype=np.int64),
        submit=np.zeros(n),
        runtime=np.array([3.0] + [0.3] * len(jobs)),
        procs=np.full(n, 16, dtype=np.int64),
        requested_time=np.array([60.0] + [float(s) for s in limits]),
        user=np.full(n, -1, dtype=np.int64),
        machine_procs=16,
    )
    sim = simulate(workload, CoreConfig.from_names("SPF", "easy"))
    sim_order = [jobs[k - 1] for k in np.argsort(sim.start, kind="stable") if k > 0]
    assert real == sim_order
    starts = decisions(tmp_path, "start")
    assert [d["job_id"] for d in starts] == [blocker, *sim_order]
    assert all(d["status"] == "done" and "priority order" in d["reason"] for d in starts)


def test_easy_backfill_keeps_the_reservation(rush_flux, tmp_path):
    flux = rush_flux
    load_rush(flux, write_config(tmp_path))
    running = flux.submit("-n12", "-t", "1m", "sleep", "60")
    flux.run("job", "wait-event", "-t", "30", str(running), "start")
    head = flux.submit("-n16", "-t", "1m", "sleep", "0.2")
    short = flux.submit("-n4", "-t", "20s", "sleep", "0.2")  # ends before the shadow time
    long = flux.submit("-n4", "-t", "5m", "sleep", "0.2")  # would delay the head: waits
    flux.wait_job(short)
    time.sleep(1)  # a pass or two with the long job still waiting
    flux.run("cancel", str(running))
    wait_all(flux, [head, long])
    assert t_run(flux, short) < t_run(flux, head) <= t_run(flux, long)
    [backfill] = decisions(tmp_path, "backfill")
    assert backfill["job_id"] == short and backfill["status"] == "done"
    assert "shadow time" in backfill["reason"]
    reserves = [d for d in decisions(tmp_path, "reserve") if d["job_id"] == head]
    assert reserves and all(d["status"] == "advice" for d in reserves)
    annotation = flux.run("jobs", "-no", "{annotations.sched.rush}", str(short)).stdout
    assert "backfill" in annotation


def test_skip_with_limit_keeps_a_flagged_job_queued_then_starts_it(rush_flux, tmp_path):
    flux = rush_flux
    store = tmp_path / "features.sqlite"
    with FeatureStore(store) as fs:
        fs.insert([Sample(time.time() - 30, "n1", "sysfs_ib", "ib_xmit_bytes_per_s", 9e9)])
    variation = (
        f'[variation]\nenabled = true\nthreshold = 1e9\nstore = "{store}"\nworkload_type = "network"\n'
        "window = 3600\n"
    )
    load_rush(flux, write_config(tmp_path, {"skip_limit": 2}, variation, interval=1))
    # Both submitted on a stopped queue, so their alloc requests reach the module back to back:
    # on a loaded host other events could spend the flagged job's skips before the second came.
    flux.run("queue", "stop")
    network = flux.submit("-n2", "-t", "1m", "--setattr=rush.wtype=network", "sleep", "0.2")
    compute = flux.submit("-n2", "-t", "1m", "--setattr=rush.wtype=compute", "sleep", "0.2")
    flux.run("queue", "start")
    wait_all(flux, [network, compute])
    skips = [d for d in decisions(tmp_path, "skip") + decisions(tmp_path, "hold") if d["job_id"] == network]
    assert all("variability" in d["reason"] for d in skips)
    # Flux's events (the two submissions, the compute job's end) count; timer passes do not.
    assert len([d for d in skips if "not counted" not in d["reason"]]) == 2
    [start] = [d for d in decisions(tmp_path, "start") if d["job_id"] == network]
    assert start["status"] == "done" and start["id"] > max(d["id"] for d in skips)
    # The flagged job gives way: it starts in no earlier pass than the compute job. Not by
    # wall clock: every Flux event is a pass and counts a skip, so its two skips may be spent
    # before the second submission reaches the module, and then both start in one pass.
    [other] = [d for d in decisions(tmp_path, "start") if d["job_id"] == compute]
    assert other["status"] == "done" and other["cycle"] <= start["cycle"]
    assert not [d for d in decisions(tmp_path) if d["job_id"] == compute and d["action"] in ("skip", "hold")]


def test_module_reload_hands_running_jobs_back_without_starting_them_again(rush_flux, tmp_path):
    flux = rush_flux
    config = write_config(tmp_path)
    load_rush(flux, config)
    running = flux.submit("-n8", "-t", "1m", "sleep", "4")
    flux.run("job", "wait-event", "-t", "30", str(running), "start")
    # Reload while a job runs: the hello protocol hands it back, it is not started again.
    flux.module("remove", "sched-rush")
    load_rush(flux, config)
    waiting = flux.submit("-n16", "-t", "1m", "sleep", "0.2")
    wait_all(flux, [running, waiting])
    starts = [d["job_id"] for d in decisions(tmp_path, "start")]
    assert sorted(starts) == sorted([running, waiting])
    assert t_run(flux, waiting) >= t_run(flux, running) + 3  # it waited for the 8 running cores


def modprobe_dir(tmp_path: Path, config: Path) -> Path:
    """deploy/flux/modprobe.d/rush.toml with this checkout's module path and the test's config."""
    text = (ROOT / "deploy" / "flux" / "modprobe.d" / "rush.toml").read_text()
    text = text.replace("/opt/rush/lib/python3.11/site-packages/rush/flux_module/sched-rush.py", str(MODULE))
    text = text.replace("config=/etc/rush/rush.toml", f"config={config}")
    assert str(MODULE) in text and str(config) in text
    target = tmp_path / "modprobe"
    (target / "modprobe.d").mkdir(parents=True)
    (target / "modprobe.d" / "rush.toml").write_text(text)
    return target


def test_loaded_by_configuration_and_a_broker_restart_starts_each_job_once(start_flux, tmp_path):
    config = write_config(tmp_path)
    statedir = tmp_path / "state"
    statedir.mkdir()
    options = {
        "size": 1,
        "cores": 16,
        "env": {"FLUX_MODPROBE_PATH_APPEND": str(modprobe_dir(tmp_path, config))},
        "attrs": {"statedir": str(statedir)},
    }
    flux = start_flux(**options)
    listing = flux.module("list").stdout
    assert "sched-rush" in listing and "sched-simple" not in listing
    first = flux.submit("-n16", "-t", "1m", "sleep", "0.2")
    flux.wait_job(first)
    blocker = flux.submit("-n16", "-t", "1m", "sleep", "60")
    flux.run("job", "wait-event", "-t", "30", str(blocker), "start")
    pending = flux.submit("-n4", "-t", "1m", "sleep", "0.2")
    flux.stop()  # the running job ends with the instance; the pending one is kept in statedir
    flux = start_flux(**options)
    flux.wait_job(pending)
    starts = [d["job_id"] for d in decisions(tmp_path, "start")]
    assert starts.count(first) == 1 and starts.count(blocker) == 1 and starts.count(pending) == 1


def test_bad_module_arguments_refuse_to_load(rush_flux, tmp_path):
    flux = rush_flux
    flux.module("remove", "sched-simple")
    for args, words in (
        ([f"config={tmp_path / 'missing.toml'}"], "missing.toml"),
        (["default-limit=-5"], "default-limit"),
        (["no-such-arg=1"], "no-such-arg"),
    ):
        out = flux.module("load", str(MODULE), *args, check=False)
        assert out.returncode != 0
        assert words in out.stderr + flux.log_tail(40)
    bad = tmp_path / "bad.toml"
    bad.write_text("[policy]\npolicy = 'NOPE'\n")
    out = flux.module("load", str(MODULE), f"config={bad}", check=False)
    assert out.returncode != 0 and "NOPE" in out.stderr + flux.log_tail(40)


def test_hostile_jobs_are_denied_or_bounded_and_the_module_keeps_running(rush_flux, tmp_path):
    flux = rush_flux
    load_rush(flux, write_config(tmp_path))
    too_big = flux.run("submit", "-n64", "-t", "1m", "true", check=False)
    tags = [f"--setattr=rush.k{i}={'x' * 5000}" for i in range(100)]
    odd = flux.submit("-n1", "-t", "1m", "--setattr=rush.submit=-1e308", *tags, "true")
    ok = flux.submit("-n1", "-t", "1m", "true")
    wait_all(flux, [odd, ok])
    if too_big.returncode == 0:  # accepted at submit (no feasibility validator): denied by the module
        job_id = int(flux.run("job", "id", "--to=dec", too_big.stdout.strip()).stdout)
        flux.run("job", "wait-event", "-t", "30", str(job_id), "clean")
        assert "exception" in flux.run("job", "eventlog", str(job_id)).stdout
    assert "sched-rush" in flux.module("list").stdout
    assert {d["job_id"] for d in decisions(tmp_path, "start")} >= {odd, ok}


def test_a_job_without_time_limit_gets_the_default_limit_and_can_backfill(rush_flux, tmp_path):
    flux = rush_flux
    load_rush(flux, write_config(tmp_path), "default-limit=20")
    running = flux.submit("-n12", "-t", "1m", "sleep", "60")
    flux.run("job", "wait-event", "-t", "30", str(running), "start")
    head = flux.submit("-n16", "-t", "1m", "sleep", "0.2")
    unlimited = flux.submit("-n4", "sleep", "0.2")  # no -t: 20 s by the module's default-limit
    flux.wait_job(unlimited)
    [backfill] = decisions(tmp_path, "backfill")
    assert backfill["job_id"] == unlimited
    fields = flux.run("jobs", "-no", "{t_run} {expiration}", str(unlimited)).stdout.split()
    assert float(fields[1]) - float(fields[0]) == pytest.approx(20, abs=1)  # enforced by Flux too
    flux.run("cancel", str(running))
    flux.wait_job(head)


def test_every_end_returns_its_cores_to_the_pool_started_here_or_handed_back(rush_flux, tmp_path):
    """The module frees a job's whole allocation without parsing its R again when the R is
    the one it allocated (scheduler.py, _handle_free): the pool must end as empty as
    flux-core's own free leaves it, for jobs it started and for one handed back by hello."""
    flux = rush_flux
    config = write_config(tmp_path)
    load_rush(flux, config)
    handed_back = flux.submit("-n4", "-t", "1m", "sleep", "3")
    flux.run("job", "wait-event", "-t", "30", str(handed_back), "start")
    flux.module("remove", "sched-rush")
    load_rush(flux, config)  # the running job comes back through hello
    started = [flux.submit("-n4", "-t", "1m", "true") for _ in range(6)]
    whole = flux.submit("-n16", "-t", "1m", "true")  # runs only once every other job's cores are back
    wait_all(flux, [handed_back, *started, whole])
    assert allocated_cores(flux) == 0
    assert flux.total_cores() == 16


def nine_jobs_each_started_once_at_most_two_a_pass(flux, tmp_path, *command: str) -> None:
    """Nine one-core jobs released at once under ``start-batch=2``: each is started once (the
    journal's done starts) and no pass starts more than two."""
    flux.run("queue", "stop", "--quiet", check=False)
    flux.run("submit", "--cc=1-9", "--quiet", "-n1", "-t", "1m", *command)
    jobs = [int(j) for j in flux.run("jobs", "-no", "{id.dec}").stdout.split()]
    assert len(jobs) == 9
    flux.run("queue", "start", "--quiet", check=False)
    wait_all(flux, jobs)
    starts = [d for d in decisions(tmp_path, "start") if d["status"] == "done"]
    assert sorted(d["job_id"] for d in starts) == sorted(jobs)  # each once
    per_pass: dict[int, int] = {}
    for d in starts:
        per_pass[d["cycle"]] = per_pass.get(d["cycle"], 0) + 1
    assert max(per_pass.values()) <= 2


def test_a_pass_allocates_a_batch_of_starts_and_the_next_pass_the_rest_each_job_once(rush_flux, tmp_path):
    """``start-batch=N``: a pass allocates at most N of its starts, then lets the reactor answer
    what came meanwhile; the next pass follows at once and decides the rest again. Every job
    starts exactly once, no pass allocates more than N, and the journal says what was left."""
    flux = rush_flux
    load_rush(flux, write_config(tmp_path), "start-batch=2")
    nine_jobs_each_started_once_at_most_two_a_pass(flux, tmp_path, "sleep", "1")
    con = sqlite3.connect(tmp_path / "journal.sqlite")
    left = [m for (m,) in con.execute("SELECT message FROM events WHERE kind = 'start_batch'")]
    con.close()
    assert left and all("left for the next pass" in m for m in left)
    assert allocated_cores(flux) == 0 and flux.total_cores() == 16


def t_estimates_annotated(consumer) -> dict[int, list]:
    """Each job's ``sched.t_estimate`` annotation events read from the job-manager's journal
    (until it has been quiet for a second): what the job-manager was sent, not the module's
    own count."""
    out: dict[int, list] = {}
    while True:
        try:
            event = consumer.poll(timeout=1.0)
        except TimeoutError:
            return out
        if event is None:
            return out
        if event.name == "annotations":
            sched = (event.context.get("annotations") or {}).get("sched") or {}
            if "t_estimate" in sched:
                out.setdefault(int(event.jobid), []).append(sched["t_estimate"])


def test_a_start_left_for_the_next_pass_gets_no_t_estimate_and_a_waiting_job_does(rush_flux, tmp_path):
    """A job the pass decided to start but left for the next pass (``start-batch=2``) is sent
    no ``t_estimate`` (it starts at the next pass, at once: an estimate of "now" would cost the
    job-manager an event to set and one to clear); a job that waits (16 cores behind the
    others) is sent its estimate. Read from the job-manager's journal."""
    from flux.job import JournalConsumer  # type: ignore[import-not-found]

    flux = rush_flux
    load_rush(flux, write_config(tmp_path), "start-batch=2")
    flux.run("queue", "stop", "--quiet", check=False)
    flux.run("submit", "--cc=1-9", "--quiet", "-n1", "-t", "1m", "sleep", "1")
    small = [int(j) for j in flux.run("jobs", "-no", "{id.dec}").stdout.split()]
    big = flux.submit("-n16", "-t", "1m", "true")
    consumer = JournalConsumer(flux.handle(), full=False).start()
    flux.run("queue", "start", "--quiet", check=False)
    wait_all(flux, [*small, big])
    annotated = t_estimates_annotated(consumer)
    consumer.stop()
    con = sqlite3.connect(tmp_path / "journal.sqlite")
    left = con.execute("SELECT count(*) FROM events WHERE kind = 'start_batch'").fetchone()[0]
    con.close()
    assert left >= 1  # the premise: a pass left starts for the next one
    assert len(small) == 9 and not [j for j in small if any(v is not None for v in annotated.get(j, []))]
    assert any(v is not None for v in annotated.get(big, []))
    stats = json.loads(flux.run("module", "stats", "sched-rush").stdout)
    assert stats["t_estimate_annotations"] >= 1


def test_a_bad_start_batch_or_settle_refuses_to_load(rush_flux, tmp_path):
    flux = rush_flux
    flux.module("remove", "sched-simple")
    for value in ("0", "-1", "many", ""):
        out = flux.module(
            "load", str(MODULE), f"config={write_config(tmp_path)}", f"start-batch={value}", check=False
        )
        assert out.returncode != 0
        assert "start-batch" in out.stderr + flux.log_tail(40)
    for value in ("-0.1", "61", "nan", "soon", ""):
        out = flux.module(
            "load", str(MODULE), f"config={write_config(tmp_path)}", f"settle={value}", check=False
        )
        assert out.returncode != 0
        assert "settle=" in out.stderr + flux.log_tail(40)
    for value in ("-1", "many", "", "1e3", "1000001"):
        out = flux.module(
            "load", str(MODULE), f"config={write_config(tmp_path)}", f"idle-queue={value}", check=False
        )
        assert out.returncode != 0
        assert "idle-queue=" in out.stderr + flux.log_tail(40)


def test_idle_queue_zero_turns_the_idle_first_pass_off(start_flux, tmp_path):
    """``idle-queue=0``: an idle module settles as a busy one (the site's switch for rule I,
    pass_settle.py), so no pass runs at once for idleness; the jobs still run."""
    flux = start_flux(size=1, config="[fake-resources]\nnnodes = 4\ncores-per-node = 1\n")
    load_rush(flux, write_config(tmp_path), "idle-queue=0")
    simulated = "--setattr=system.exec.test.run_duration=0.01s"
    flux.run("submit", "--cc=1-3", "--quiet", "-N1", "-t", "1m", simulated, "true", timeout=120)
    flux.run("queue", "drain", "--timeout=120", timeout=130)
    jobs = flux.jobs("id", "result", states="all")
    assert len(jobs) == 3 and {job["result"] for job in jobs} == {"COMPLETED"}
    stats = json.loads(flux.run("module", "stats", "sched-rush").stdout)
    assert stats["settled_passes"] >= 1
    assert stats["passes_run_at_once_idle"] == 0


def test_a_pass_of_several_commit_chunks_answers_every_job_once_without_waiting(start_flux, tmp_path):
    """A pass that starts more jobs than one KVS commit holds (alloc_answers.CHUNK) sends a
    commit per chunk and answers each when it is done, without waiting for it (at the pass's
    steps, the next pass's start or the commit's continuation). 200 one-node jobs wait behind a
    job that holds all 200 fake nodes until every one has reached the module, so that one pass
    starts them all: each runs once (a job answered before its R is in the KVS fails in
    job-exec), and the pool holds nothing at the end."""
    from rush.flux_module.alloc_answers import CHUNK

    nodes = 200
    flux = start_flux(size=1, config=f"[fake-resources]\nnnodes = {nodes}\ncores-per-node = 1\n")
    load_rush(flux, write_config(tmp_path))
    simulated = "--setattr=system.exec.test.run_duration=0.01s"  # flux-core's test exec: no shell
    blocker = flux.submit(f"-N{nodes}", "-t", "1m", "--setattr=system.exec.test.run_duration=600s", "true")
    flux.run("job", "wait-event", "-t", "60", str(blocker), "start")
    flux.run("submit", f"--cc=1-{nodes}", "--quiet", "-N1", "-t", "1m", simulated, "true", timeout=300)
    journal = tmp_path / "journal.sqlite"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # every job queued in the module: a pass has seen them all
        con = sqlite3.connect(journal)
        seen = con.execute("SELECT max(pending) FROM cycles").fetchone()[0] or 0
        con.close()
        if seen >= nodes:
            break
        time.sleep(0.2)
    assert seen >= nodes, f"only {seen} of {nodes} jobs reached the module"
    flux.run("cancel", str(blocker))
    flux.run("queue", "drain", "--timeout=300", timeout=310)
    jobs = flux.jobs("id", "result", states="all")
    results = [job["result"] for job in jobs if int(job["id"]) != blocker]
    assert len(results) == nodes and set(results) == {"COMPLETED"}
    starts = [d for d in decisions(tmp_path, "start") if d["status"] == "done" and d["job_id"] != blocker]
    assert sorted(d["job_id"] for d in starts) == sorted(
        int(job["id"]) for job in jobs if int(job["id"]) != blocker
    )
    per_pass: dict[int, int] = {}
    for d in starts:
        per_pass[d["cycle"]] = per_pass.get(d["cycle"], 0) + 1
    assert max(per_pass.values()) > CHUNK  # the premise: one pass, several commits
    assert allocated_cores(flux) == 0


def test_a_due_pass_reads_the_messages_queued_for_it_first_and_every_job_is_answered_once(
    start_flux, tmp_path
):
    """A pass that became due settles first (pass_settle.py): while a message is waiting for
    the module it is put off, one reactor turn per message, within the settle bound
    (``settle=60`` here, so the bound never cuts it short on a loaded host). 200 one-node jobs
    are released at once on 200 fake nodes (``start-batch=100``: at least two passes start
    them, and the second is due while the first's commits are open): the job-manager's alloc
    requests queue up, so a due pass was put off for them at least once, and none ran at its
    bound with a message still waiting (with ``settle=0`` passes run with messages waiting:
    settle_cut_short >= 1), except the first: the module was idle (no job running, a short
    queue), so that pass ran at once on what had arrived. Every job runs exactly once and the
    pool is empty at the end."""
    nodes = 200
    flux = start_flux(size=1, config=f"[fake-resources]\nnnodes = {nodes}\ncores-per-node = 1\n")
    load_rush(flux, write_config(tmp_path), "start-batch=100", "settle=60")
    flux.run("queue", "stop", "--quiet", check=False)
    simulated = "--setattr=system.exec.test.run_duration=0.01s"  # flux-core's test exec: no shell
    flux.run("submit", f"--cc=1-{nodes}", "--quiet", "-N1", "-t", "1m", simulated, "true", timeout=300)
    flux.run("queue", "start", "--quiet", check=False)
    flux.run("queue", "drain", "--timeout=300", timeout=310)
    jobs = flux.jobs("id", "result", states="all")
    assert len(jobs) == nodes and {job["result"] for job in jobs} == {"COMPLETED"}
    starts = [d for d in decisions(tmp_path, "start") if d["status"] == "done"]
    assert sorted(d["job_id"] for d in starts) == sorted(int(job["id"]) for job in jobs)  # each once
    per_pass: dict[int, int] = {}
    for d in starts:
        per_pass[d["cycle"]] = per_pass.get(d["cycle"], 0) + 1
    assert len(per_pass) >= 2 and max(per_pass.values()) <= 100
    stats = json.loads(flux.run("module", "stats", "sched-rush").stdout)
    assert stats["settled_passes"] >= len(per_pass)
    assert stats["passes_after_reading_a_burst"] >= 1  # the premise: messages were queued
    assert stats["passes_run_at_once_idle"] >= 1  # the burst's first pass, on an idle module
    assert stats["settle_cut_short"] == 0
    assert stats["settle_off"] == ""  # flux-core 0.88: the module's check found its pass timer
    # Both read around the same pass; the thread's CPU clock and the monotonic one are read a
    # few microseconds apart, so the CPU time may exceed the wall time by that much, no more.
    assert stats["last_pass_seconds"] > 0 and stats["last_pass_cpu_seconds"] > 0
    assert stats["last_pass_cpu_seconds"] <= stats["last_pass_seconds"] + 1e-3
    assert allocated_cores(flux) == 0


def eventlog_names(flux, job_id: int) -> list[str]:
    out = flux.run("job", "eventlog", "-f", "json", str(job_id)).stdout
    return [json.loads(line)["name"] for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize("settle", ["60", "0"])
def test_a_job_cancelled_between_two_batches_of_a_pass_is_never_started(rush_flux, tmp_path, settle):
    """``start-batch=2``: a pass allocates 2 of its 6 starts and returns to the reactor; two of
    the 4 it left are cancelled before the next batch. They never run (no ``alloc`` event,
    CANCELED), every other job is allocated and runs exactly once, and the pool ends empty.
    With ``settle=`` above 0 the next batch reads both cancels before it runs, so rush never
    allocates them. With ``settle=0`` it runs after the module's reactor read one message
    (one per turn): rush may allocate the other cancelled job (its start journaled ``done``),
    and Flux's job-manager, for which the job is no longer pending, frees it at once unrun.

    Deterministic: the test holds the journal's writer lock, so the pass that frees the
    machine (a blocker's end) waits inside the module on its first journal write (SQLite's busy
    timeout is 30 s); the cancels are sent once the module's thread is seen asleep there, so
    they reach the module during that pass, after its queue was fixed; then the lock is
    released. No periodic pass (cycle_interval 3600 s) runs in between."""
    flux = rush_flux
    if platform.machine() != "x86_64":
        pytest.skip("reads the module thread's system call number (x86-64's)")
    load_rush(flux, write_config(tmp_path, interval=3600), "start-batch=2", f"settle={settle}")
    blocker = flux.submit("-n16", "-t", "10m", "sleep", "600")
    flux.run("job", "wait-event", "-t", "60", str(blocker), "start")
    jobs = [flux.submit("-n1", "-t", "1m", "true") for _ in range(6)]
    journal = tmp_path / "journal.sqlite"

    def module_saw_all() -> bool:
        con = sqlite3.connect(journal)
        try:
            return (con.execute("SELECT max(pending) FROM cycles").fetchone()[0] or 0) >= len(jobs)
        finally:
            con.close()

    wait_for(module_saw_all, timeout=60, step=0.1)
    cancelled = [jobs[2], jobs[4]]  # the pass's 3rd and 5th starts, left by its first batch
    with journal_held(journal):  # the module's next journal write waits for this
        flux.run("cancel", str(blocker))
        wait_for(lambda: module_waits_on_the_journal(flux), timeout=20, step=0.02)
        flux.run("cancel", *map(str, cancelled))  # returns once Flux sent sched.cancel
    started = [j for j in jobs if j not in cancelled]
    wait_all(flux, [blocker, *jobs])
    for job_id in cancelled:
        assert "alloc" not in eventlog_names(flux, job_id), job_id
    result = {int(j["id"]): j["result"] for j in flux.jobs("id", "result")}
    assert [result[j] for j in cancelled] == ["CANCELED", "CANCELED"]
    assert [result[j] for j in started] == ["COMPLETED"] * len(started)
    for job_id in started:
        assert eventlog_names(flux, job_id).count("alloc") == 1, job_id
    done = [d for d in decisions(tmp_path, "start") if d["status"] == "done" and d["job_id"] != blocker]
    if settle != "0":  # the next batch read both cancels first: neither was allocated
        assert sorted(d["job_id"] for d in done) == sorted(started)
    else:  # it may run after reading one: rush allocates the other, Flux frees it unrun
        assert set(started) <= {d["job_id"] for d in done} <= set(jobs)
    assert len(done) == len({d["job_id"] for d in done})  # none allocated twice
    # The premise: the pass that freed the machine started the first two and left four, the
    # cancelled two among them (the only jobs queued).
    first = min(d["cycle"] for d in done)
    assert [d["job_id"] for d in done if d["cycle"] == first] == jobs[:2]
    con = sqlite3.connect(journal)
    left = [
        m
        for (m,) in con.execute(
            "SELECT message FROM events WHERE kind = 'start_batch' AND cycle = ?", (first,)
        )
    ]
    con.close()
    assert left and left[0].startswith("4 start(s) of this pass left"), left
    assert allocated_cores(flux) == 0 and flux.total_cores() == 16


# The module on a flux-core whose Scheduler keeps its pass timer under other names than 0.88's
# private _on_sched_timer/_sched_pending/_sched_timer (a later release might): flux-core's own
# Scheduler subclassed as such a release would have it, put in place of flux.scheduler.Scheduler
# before rush's module is imported.
LATER_FLUX_MODULE = """
import sys
import time

import flux.scheduler


class LaterScheduler(flux.scheduler.Scheduler):
    _on_sched_timer = None  # renamed _on_pass_timer

    def __init__(self, h, *args):
        super().__init__(h, *args)
        del self._sched_pending, self._sched_timer  # renamed _timer_armed, _pass_timer
        self._timer_armed = False
        self._pass_timer = h.timer_watcher_create(0.0, self._on_pass_timer)

    def start_schedule(self):
        if not self._timer_armed:
            self._timer_armed = True
            self._pass_timer.reset(after=self._sched_delay)

    def _on_pass_timer(self, *_):
        self._timer_armed = False
        began = time.monotonic()
        self.schedule()
        self._sched_passes += 1
        self._update_sched_ewma(time.monotonic() - began)
        self._request_forecast()


flux.scheduler.Scheduler = LaterScheduler
sys.modules.pop("rush.flux_module.scheduler", None)
from rush.flux_module.scheduler import RushScheduler  # noqa: E402


def mod_main(h, *args):
    RushScheduler(h, *args).run()
"""


def test_without_flux_cores_0_88_pass_timer_the_module_runs_every_pass_at_once_and_says_so(
    rush_flux, tmp_path
):
    """The settle rule overrides flux-core 0.88's private pass timer. On a Scheduler without it
    the module loads anyway (it is the instance's only scheduler), logs why settling is off and
    the fix, reports it in ``flux module stats``, and schedules as with ``settle=0``: with
    ``start-batch=2`` every next batch runs, every job starts once, the pool ends empty."""
    flux = rush_flux
    module = tmp_path / "later" / "sched-rush.py"
    module.parent.mkdir()
    module.write_text(LATER_FLUX_MODULE)
    flux.use_scheduler(
        str(module), f"config={write_config(tmp_path, interval=3600)}", "start-batch=2", "settle=5"
    )
    stats = json.loads(flux.run("module", "stats", "sched-rush").stdout)
    assert (
        stats["settle_off"].startswith("flux-core 0.88")
        and "Scheduler._sched_timer.reset()" in stats["settle_off"]
    )
    assert stats["settle_bound"] == 0
    version_and_fix = flux.run("dmesg").stdout
    assert "settles only on flux-core 0.88" in version_and_fix and "run flux-core 0.88" in version_and_fix
    nine_jobs_each_started_once_at_most_two_a_pass(flux, tmp_path, "true")
    stats = json.loads(flux.run("module", "stats", "sched-rush").stdout)
    assert stats["settled_passes"] == 0 and stats["last_pass_seconds"] > 0
    assert allocated_cores(flux) == 0 and flux.total_cores() == 16
