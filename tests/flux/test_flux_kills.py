"""False-small kills on a LIVE Flux instance (flux-core 0.88 has no requeue).

The daemon's kill is a cancel followed by a resubmission of the job's original jobspec as
large, with ``system.rush`` attributes ``class=large``, ``requeues``, ``submit`` (the original
submit time), ``requeued_from`` and ``requeue_chain``. These tests show, on a real broker: the
job killed and resubmitted once; a new daemon on the same journal (a restart) neither kills
nor resubmits again; kill -9 after the cancel (no replacement yet) or after the resubmission
(the journal never heard) ends with exactly one replacement; the replacement ordered by its
original submit time; an opted-out job never touched; forged tags not trusted.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rush.core.schedule import schedule
from rush.daemon.service import Daemon
from rush.planner.config import RushConfig, parse_config
from rush.planner.journal import DecisionRow, Journal
from rush.rjms.base import get_backend
from rush.rjms.flux import KILL_NOTE, FluxBackend
from tests import polling
from tests.flux.instance import FluxInstance

# The rule classifier: a job asking for at most 2 minutes is predicted small; the divider is 3 s.
FALSE_SMALL = {"kill_false_small": True, "divider": 3, "use_classes": True}
SMALL_RULE = {"small_below": 120}


def wait_for(predicate, timeout: float = 45.0, step: float = 0.2):
    return polling.wait_for(predicate, timeout, step)


def config(flux: FluxInstance, tmp_path: Path, policy: dict | None = None, **sections) -> RushConfig:
    raw = {
        "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": False},
        "policy": {"policy": "FCFS", "threshold": "none", **FALSE_SMALL, **(policy or {})},
        "rjms": {"backend": "flux", "options": {"uri": flux.uri}},
        "models": SMALL_RULE,
    }
    raw.update(sections)
    return parse_config(raw)


def backend(flux: FluxInstance) -> FluxBackend:
    return get_backend("flux", uri=flux.uri)  # type: ignore[return-value]


def record(flux: FluxInstance, job_id: int) -> dict:
    return backend(flux)._job_record(job_id)


def running(flux: FluxInstance, job_id: int) -> bool:
    return record(flux, job_id).get("state") == 16  # RUN


def false_small_job(flux: FluxInstance, idempotent: bool = True, seconds: int = 8, cores: int = 2) -> int:
    tags = ["--setattr=rush.idempotent=1"] if idempotent else []
    return flux.submit(
        f"-n{cores}", "-t", "60s", *tags, "--setattr=rush.wtype=compute", "sleep", str(seconds)
    )


def replacements(flux: FluxInstance, job_id: int) -> list[tuple[int, dict]]:
    """Every job (any state) whose jobspec says it replaces ``job_id``."""
    found = []
    for j in flux.jobs():
        spec = json.loads(flux.run("job", "info", str(j["id"]), "jobspec").stdout)
        rush = spec["attributes"]["system"].get("rush", {})
        if str(rush.get("requeued_from")) == str(job_id):
            found.append((int(j["id"]), rush))
    return found


def kills(journal: Journal, job_id: int) -> list[tuple[str, str]]:
    return [(d["status"], d["answer"]) for d in journal.decisions(job_id, "kill")]


def past_divider(flux: FluxInstance, job_id: int) -> None:
    """Until the job has run past the divider by the start Flux records (t_run, what the daemon
    compares with its clock: now - start > divider at the next cycle), with 0.5 s to spare."""
    past = FALSE_SMALL["divider"] + 0.5

    def run_past() -> bool:
        found = record(flux, job_id)
        return found.get("state") == 16 and "t_run" in found and time.time() - found["t_run"] > past

    wait_for(run_past)


def test_false_small_job_killed_and_resubmitted_once_as_large(flux, tmp_path):
    victim = false_small_job(flux)
    daemon = Daemon(config(flux, tmp_path))
    past_divider(flux, victim)
    submitted = record(flux, victim)["t_submit"]
    report = daemon.run_cycle()
    assert report.ok and report.applied.get("kill") == 1
    # The intent stays open until a later cycle confirms the replacement.
    [(status, answer)] = kills(daemon.journal, victim)
    assert status == "intent" and "replacement" in answer and "submitted as large" in answer
    assert daemon.journal.job(victim).requeues == 1
    old = wait_for(lambda: (r := record(flux, victim))["state"] == 64 and r)  # INACTIVE
    assert old["exception_type"] == "cancel" and old["exception_note"] == KILL_NOTE
    [(new, tags)] = replacements(flux, victim)
    assert tags["class"] == "large" and tags["requeues"] == "1" and tags["requeued_from"] == str(victim)
    assert tags["requeue_chain"] == str(victim) and float(tags["submit"]) == submitted
    assert str(tags["idempotent"]) == "1" and tags["wtype"] == "compute"  # the user's tags kept
    # The replacement is the same job: same command, limit and cores, the user's environment.
    old_spec = json.loads(flux.run("job", "info", "--original", str(victim), "jobspec").stdout)
    new_spec = json.loads(flux.run("job", "info", "--original", str(new), "jobspec").stdout)
    assert new_spec["tasks"] == old_spec["tasks"] and new_spec["resources"] == old_spec["resources"]
    assert new_spec["attributes"]["system"]["environment"] == old_spec["attributes"]["system"]["environment"]
    # rush reads it with the original submit time.
    read = {j.job_id: j for j in backend(flux).read_state().jobs}
    assert read[new].submit == submitted < record(flux, new)["t_submit"]
    # The next cycle confirms it; the replacement runs past the divider as large, never killed.
    assert daemon.run_cycle().ok
    [(status, answer)] = kills(daemon.journal, victim)
    assert status == "done" and f"replaced by job {new}" in answer
    wait_for(lambda: running(flux, new))
    deadline = time.time() + 60
    while time.time() < deadline and record(flux, new)["state"] != 64:
        assert daemon.run_cycle().ok
        time.sleep(0.5)
    finished = record(flux, new)
    assert finished["state"] == 64 and finished.get("result") == 1, finished  # COMPLETED
    assert daemon.journal.decisions(new, "kill") == [] and len(replacements(flux, victim)) == 1
    assert daemon.journal.open_intents() == []


def test_daemon_restart_neither_kills_nor_resubmits_again(flux, tmp_path):
    victim = false_small_job(flux, seconds=6)
    cfg = config(flux, tmp_path)
    past_divider(flux, victim)
    first = Daemon(cfg)
    assert first.run_cycle().applied.get("kill") == 1
    first.journal.close()  # the daemon stops; its intent is still open
    assert kills(Journal(cfg.daemon.journal), victim)[0][0] == "intent"
    [(new, _)] = replacements(flux, victim)
    second = Daemon(cfg)  # a restart: same journal, fresh memory
    for _ in range(4):
        report = second.run_cycle()
        assert report.ok and "kill" not in report.applied
        time.sleep(0.5)
    assert [s for s, _ in kills(second.journal, victim)] == ["done"]
    assert len(replacements(flux, victim)) == 1 and second.journal.decisions(new, "kill") == []


CRASHING = textwrap.dedent(
    """
    import os, signal, sys
    from rush.planner.config import RushConfig
    from rush.daemon.service import Daemon
    cfg = RushConfig.model_validate_json(sys.argv[1])
    daemon = Daemon(cfg)
    where = sys.argv[2]
    backend = daemon.backend
    if where == "after-cancel":  # the cancel reached Flux, the replacement was never submitted
        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)
        backend._resubmit = die
    else:  # both done, the journal never heard back
        real = backend.requeue
        def die(*args, **kwargs):
            real(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
        backend.requeue = die
    daemon.run_cycle()
    """
)


def crash_in(cfg: RushConfig, where: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CRASHING, cfg.model_dump_json(), where], timeout=180, capture_output=True
    )
    assert out.returncode == -signal.SIGKILL, out.stderr.decode()[-2000:]


def test_kill_9_after_the_cancel_resubmits_exactly_once(flux, tmp_path):
    # Still running after the crashing daemon's start-up on a loaded host (as on Slurm).
    victim = false_small_job(flux, seconds=40)
    cfg = config(flux, tmp_path)
    past_divider(flux, victim)
    crash_in(cfg, "after-cancel")
    assert kills(Journal(cfg.daemon.journal), victim) == [("intent", "")]
    wait_for(lambda: record(flux, victim)["state"] == 64)
    assert replacements(flux, victim) == []
    # The new daemon finds rush's cancel and no replacement: it submits it, once.
    daemon = Daemon(cfg)
    for _ in range(3):
        assert daemon.run_cycle().ok
    [(status, answer)] = kills(daemon.journal, victim)
    assert status == "done" and "cancelled earlier" in answer
    [(_, tags)] = replacements(flux, victim)
    assert tags["class"] == "large" and tags["requeues"] == "1"
    assert float(tags["submit"]) == record(flux, victim)["t_submit"]
    assert daemon.journal.job(victim).requeues == 1


def test_kill_9_after_the_resubmission_is_not_repeated(flux, tmp_path):
    # Still running after the crashing daemon's start-up on a loaded host (as on Slurm).
    victim = false_small_job(flux, seconds=40)
    cfg = config(flux, tmp_path)
    past_divider(flux, victim)
    crash_in(cfg, "after-requeue")
    assert kills(Journal(cfg.daemon.journal), victim) == [("intent", "")]
    [(new, _)] = replacements(flux, victim)
    daemon = Daemon(cfg)
    for _ in range(3):
        assert daemon.run_cycle().ok
    [(status, answer)] = kills(daemon.journal, victim)
    assert status == "done" and f"replaced by job {new}" in answer
    assert len(replacements(flux, victim)) == 1


def test_kill_9_before_the_cancel_lets_the_core_decide_again(flux, tmp_path):
    victim = false_small_job(flux)
    cfg = config(flux, tmp_path)
    past_divider(flux, victim)
    journal = Journal(cfg.daemon.journal)
    # What a crash between the intent's commit and the cancel leaves: an open intent, the job running.
    rec = journal.job(victim)
    rec.requeues = 1
    journal.save_job(rec)
    journal.record(DecisionRow(1, victim, "kill", "killed at the divider", None, {}, "apply"), "intent")
    journal.close()
    daemon = Daemon(cfg)
    report = daemon.run_cycle()
    assert report.ok and report.applied.get("kill") == 1  # rolled back, then decided again
    history = kills(daemon.journal, victim)
    assert [s for s, _ in history] == ["failed", "intent"] and "not cancelled" in history[0][1]
    assert daemon.run_cycle().ok
    assert [s for s, _ in kills(daemon.journal, victim)] == ["failed", "done"]
    assert len(replacements(flux, victim)) == 1 and daemon.journal.job(victim).requeues == 1


def test_replacement_is_ordered_by_its_original_submit_time(flux, tmp_path):
    blocker = flux.submit("-n12", "-t", "10m", "sleep", "300")
    wait_for(lambda: running(flux, blocker))
    victim = false_small_job(flux, cores=4, seconds=30)
    past_divider(flux, victim)
    # Two jobs submitted after the victim wait (the 16 cores are taken). The victim's 4 cores
    # go to the first of them when it is killed; its replacement and the second one wait.
    # Both large (10 min > small_below), like the replacement: the class bands do not decide.
    first, second = (flux.submit("-n4", "-t", "10m", "sleep", "60") for _ in range(2))
    daemon = Daemon(config(flux, tmp_path))
    assert daemon.run_cycle().applied.get("kill") == 1
    [(new, _)] = replacements(flux, victim)
    wait_for(lambda: running(flux, first))
    assert daemon.run_cycle().ok
    read = {j.job_id: j for j in backend(flux).read_state().jobs}
    assert read[new].state == read[second].state == "PENDING"
    assert read[new].submit < read[second].submit < record(flux, new)["t_submit"]
    # The core, on the daemon's own snapshot, puts the replacement first (FCFS on the original
    # submit time), although Flux received it last; rush gives it the higher priority.
    built = daemon.builder.build(backend(flux).read_state(), daemon.journal.jobs())
    decisions = schedule(built.snapshot, daemon.core_config)
    values = {d.job_id: d.value for d in decisions.of("priority")}
    assert values[new] > values[second]
    assert built.outputs[new]["runtime_class"] == "large" and built.outputs[new]["class_source"] == "requeued"
    assert daemon.journal.job(new).last_site_factor > daemon.journal.job(second).last_site_factor
    flux.run("cancel", str(blocker))


def test_opted_out_job_is_never_killed(flux, tmp_path):
    keep = false_small_job(flux, idempotent=False, seconds=6)
    daemon = Daemon(config(flux, tmp_path))
    past_divider(flux, keep)
    for _ in range(3):
        assert daemon.run_cycle().ok
    assert daemon.journal.decisions(keep, "kill") == [] and replacements(flux, keep) == []
    wait_for(lambda: record(flux, keep)["state"] == 64, timeout=30)
    assert record(flux, keep).get("result") == 1  # COMPLETED, not cancelled


def test_forged_rush_tags_are_not_trusted(flux, tmp_path):
    """A user's own ``--setattr=rush.submit=1`` must not move the job ahead (hostile input).

    The test instance's owner is also its only user (root), so the owner check cannot be shown
    with a second user here; what is shown: a submit tag later than the job's own submit, or not
    a number, or NaN/inf, is ignored, and garbage in any rush tag does not break the read.
    """
    ids = {
        value: flux.submit(
            "-n1", "-t", "60s", "--urgency=0", f"--setattr=rush.submit={value}",
            "--setattr=rush.requeued_from=1", "--setattr=rush.requeues=x", "true",
        )
        for value in ("9e99", "nan", "inf", "-5", "abc", "[1,2]")
    }  # fmt: skip
    read = {j.job_id: j for j in backend(flux).read_state().jobs}
    for value, job_id in ids.items():
        assert read[job_id].submit == record(flux, job_id)["t_submit"], value
    daemon = Daemon(config(flux, tmp_path))
    assert daemon.run_cycle().ok


# "empty": with no job queued, only the module's periodic pass checks the running job.
@pytest.mark.parametrize("queue", ["a job waiting", "empty"])
def test_scheduler_module_kills_once_and_a_reload_does_not_repeat_it(start_flux, tmp_path, queue):
    """The same kill when rush is Flux's scheduler (rush/flux_module/sched-rush.py): the module's
    daemon loop decides it and FluxBackend carries it out; reloading the module (a new loop on
    the same journal) neither kills nor resubmits again."""
    instance = start_flux(size=1, cores=16)
    toml = tmp_path / "rush.toml"
    toml.write_text(
        f'[daemon]\ncycle_interval = 1\njournal = "{tmp_path / "journal.sqlite"}"\ndry_run = false\n\n'
        '[policy]\npolicy = "FCFS"\nbackfill = "easy"\nthreshold = "none"\nkill_false_small = true\n'
        'divider = 3\nuse_classes = true\n\n[models]\nsmall_below = 120\n\n[rjms]\nbackend = "flux"\n'
    )
    module = Path(__file__).resolve().parents[2] / "rush" / "flux_module" / "sched-rush.py"
    instance.use_scheduler(str(module), f"config={toml}")
    victim = false_small_job(instance, seconds=8)
    if queue == "a job waiting":  # the whole machine, behind the victim: the queue is never empty
        instance.submit("-n16", "-t", "10m", "sleep", "1")
    [(new, tags)] = wait_for(lambda: replacements(instance, victim), timeout=30)
    assert tags["class"] == "large" and tags["requeues"] == "1"
    old = wait_for(lambda: (r := record(instance, victim))["state"] == 64 and r)
    assert old["exception_note"] == KILL_NOTE
    wait_for(lambda: record(instance, new)["state"] in (16, 32, 64))  # the module started it
    instance.module("remove", "sched-rush")
    instance.module("load", str(module), f"config={toml}")
    wait_for(lambda: record(instance, new)["state"] == 64, timeout=60)
    assert record(instance, new).get("result") == 1  # ran to completion as large
    journal = Journal(tmp_path / "journal.sqlite")
    assert [s for s, _ in kills(journal, victim)] == ["done"] and journal.decisions(new, "kill") == []
    assert len(replacements(instance, victim)) == 1
