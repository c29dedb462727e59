"""Speculative reservations carried out live (issue 12, part 4): rush/planner/speculative.py.

Offline: the ``[speculative]`` section's hostile values, the opt-in tags' hostile values, the
rounding of a strategy to what the RJMS holds, the job_submit plugin's new keys (real Lua).
Live, on the REAL test Slurm of the ``slurm`` fixture (22.05 and 25.11): an opted-in job with
history gets t1 (Slurm keeps whole minutes, so t1 = 1 min), is killed by Slurm at t1
(TIMEOUT, 60 to 90 s: slurmctld checks limits every 30 s), is requeued with t2 and completes;
a new Speculator on the same journal (a daemon restart) mid-sequence never requeues twice;
a job without enough history is left untouched.

The live job sleeps 200 s on its first run and 3 s once requeued (``SLURM_RESTART_COUNT``):
a second run longer than t1 would add a minute or more to a test that already waits for
Slurm's minute-granular limit.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from rush.errors import ConfigError, RJMSError
from rush.models.speculative.job_sequence import round_up
from rush.planner.config import parse_config
from rush.planner.journal import Journal
from rush.planner.speculative import (
    SpeculativeSection,
    Speculator,
    ended_as,
    opt_in,
    speculator_for,
)
from rush.rjms.base import RJMSJob, get_backend
from tests import polling
from tests.slurm.lua_plugin import LUA, run_plugin

# -- configuration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ({"enabled": "true"}, "enabled"),
        ({"estimator": "oracle"}, "estimator"),
        ({"samples": 0}, "samples"),
        ({"samples": 10**9}, "samples"),
        ({"samples": 2.5}, "samples"),
        ({"min_samples": 30, "samples": 20}, "min_samples"),
        ({"alpha": -1}, "alpha"),
        ({"alpha": float("nan")}, "alpha"),
        ({"alpha": float("inf")}, "alpha"),
        ({"alpha": 0, "beta": 0, "gamma": 0}, "all 0"),
        ({"gamma": "1"}, "gamma"),
        ({"walltime_cap": 3}, "walltime_cap"),
    ],
)
def test_hostile_section_values_are_refused_naming_the_key(raw, where):
    with pytest.raises(ValidationError) as err:
        SpeculativeSection(**raw)
    assert where in str(err.value)


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"enabled": 1}, "speculative.enabled"),
        ({"estimator": "upper-bound"}, "speculative.estimator"),
        ({"samples": -3}, "speculative.samples"),
        ({"beta": 1e300}, "speculative.beta"),
        ({"typo": 1}, "speculative.typo"),
    ],
)
def test_daemon_config_names_the_speculative_key(section, key):
    with pytest.raises(ConfigError) as err:
        parse_config({"speculative": section})
    assert key in str(err.value.where) + str(err.value)


def test_cli_exits_2_on_a_hostile_speculative_section(tmp_path: Path):
    path = tmp_path / "rush.toml"
    path.write_text("[speculative]\nenabled = true\nmin_samples = 50\nsamples = 10\n")
    out = subprocess.run(
        [sys.executable, "-m", "rush", "daemon", "--config", str(path), "--once"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "min_samples" in out.stderr and "fix:" in out.stderr and "Traceback" not in out.stderr


def test_enabled_section_gives_the_daemon_a_speculator_off_by_default(tmp_path: Path):
    on = parse_config({"speculative": {"enabled": True}, "daemon": {"journal": str(tmp_path / "j.sqlite")}})
    backend = get_backend("slurm")
    journal = Journal(tmp_path / "j.sqlite")
    assert speculator_for(on, backend, journal, dry_run=False) is not None
    assert speculator_for(parse_config({}), backend, journal, dry_run=False) is None


def test_defaults_are_off_and_sane():
    section = SpeculativeSection()
    assert section.enabled is False and section.estimator == "discrete"
    assert 1 <= section.min_samples <= section.samples


# -- opt-in tags ----------------------------------------------------------------------------
def job_with(tags: dict[str, str], name: str = "lmp", user: str = "alice") -> RJMSJob:
    return RJMSJob(1, "PENDING", 0.0, 1, 600.0, user=user, name=name, tags=tags)


@pytest.mark.parametrize(
    ("tags", "name", "user", "opted", "says"),
    [
        ({}, "lmp", "alice", False, ""),
        ({"speculative": "1"}, "lmp", "alice", True, "alice/lmp"),
        ({"speculative": "1", "app": "gromacs-2024"}, "lmp", "alice", True, "alice/gromacs-2024"),
        ({"speculative": "0"}, "lmp", "alice", False, "not a flag"),
        ({"speculative": "x" * 10_000}, "lmp", "alice", False, "not a flag"),
        ({"speculative": "1", "app": "a/../b"}, "lmp", "alice", False, "app"),
        ({"speculative": "1", "app": "a" * 129}, "lmp", "alice", False, "app"),
        ({"speculative": "1"}, "", "alice", False, "app"),
        ({"speculative": "1"}, "bad name;rm", "alice", False, "app"),
        ({"speculative": "1"}, "lmp", "al/ice", False, "user"),
        ({"speculative": "1"}, "lmp", "\x00" * 100, False, "user"),
    ],
)
def test_hostile_tag_values_are_refused_not_guessed(tags, name, user, opted, says):
    got, why = opt_in(job_with(tags, name, user))
    assert got is opted and says in why and len(why) < 200


# -- rounding -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("sequence", "granularity", "walltime", "held"),
    [
        ((40.0, 95.0, 180.0), 60.0, 180.0, (60.0, 120.0, 180.0)),
        ((40.0, 50.0, 180.0), 60.0, 180.0, (60.0, 180.0)),  # both round to 1 min: once
        ((3.2, 4.0, 60.0), 1.0, 60.0, (4.0, 60.0)),
        ((3.2,), 1.0, 60.0, (4.0, 60.0)),  # always ends at the walltime
        ((100.0, 200.0), 60.0, 150.0, (120.0, 150.0)),  # never above the walltime
        ((), 60.0, 120.0, (120.0,)),
    ],
)
def test_round_up_holds_each_reservation_and_ends_at_the_walltime(sequence, granularity, walltime, held):
    assert round_up(sequence, granularity, walltime) == held


def test_flux_results_are_named():
    assert ended_as({"state": "8"}) == "TIMEOUT" and ended_as({"state": "1"}) == "COMPLETED"
    assert ended_as({"state": "TIMEOUT"}) == "TIMEOUT" and ended_as({}) == ""


def test_backend_limits_refuse_hostile_values():
    backend = get_backend("slurm")
    for bad in (0, -5, float("nan"), float("inf"), True, "60", 2**41):
        with pytest.raises(RJMSError):
            backend.set_time_limit(5, bad)
        with pytest.raises(RJMSError):
            backend.requeue_with_limit(5, {"attempt": "1"}, bad)
    with pytest.raises(RJMSError):
        backend.requeue_with_limit(5, {"attempt": "1;class=large"}, 60)
    with pytest.raises(RJMSError):
        backend.set_time_limit(-1, 60)


# -- the job_submit plugin's keys (real Lua) ------------------------------------------------
lua = pytest.mark.skipif(LUA is None, reason="no Lua interpreter (apt install lua5.3)")


@lua
@pytest.mark.parametrize(
    ("comment", "rc", "expected"),
    [
        (b"rush:speculative", 0, "rush:speculative=1;app=job"),
        (b"rush:speculative,app=sim", 0, "rush:speculative=1;app=sim"),
        (b"rush:idempotent,speculative=yes", 0, "rush:idempotent=1;speculative=1;app=job"),
        (b"rush:speculative=maybe", -1, "speculative takes no value"),
        (b"rush:speculative,speculative", -1, "given twice"),
        (b"rush:attempt=3", -1, "unknown key 'attempt'"),  # the daemon's key, not the user's
    ],
)
def test_plugin_reads_the_speculative_flag(tmp_path: Path, comment: bytes, rc: int, expected: str):
    got = run_plugin(tmp_path, comment)
    assert got.rc == rc
    assert got.admin == expected if rc == 0 else expected in got.user[0]


@lua
def test_plugin_keeps_the_daemons_attempt_on_a_user_edit(tmp_path: Path):
    got = run_plugin(tmp_path, b"rush:speculative", old_admin=b"rush:speculative=1;app=job;attempt=1")
    assert got.rc == 0 and got.admin == "rush:speculative=1;app=job;attempt=1"


# -- live Slurm -----------------------------------------------------------------------------
SCRIPT = 'if [ "${SLURM_RESTART_COUNT:-0}" -gt 0 ]; then sleep 3; else sleep 200; fi'
# Samples of ~45 s: the discrete strategy's t1 is one of them, held by Slurm as 1 minute.
SAMPLES = (40.0, 45.0, 50.0, 42.0, 48.0)


def wait_for(predicate, timeout: float = 60.0, step: float = 1.0):
    return polling.wait_for(predicate, timeout, step)


def speculator(cluster, path: Path) -> Speculator:
    backend = get_backend("slurm", **cluster.options(timeout=8))
    return Speculator(SpeculativeSection(enabled=True, min_samples=5), backend, Journal(path))


def decisions(spec: Speculator, job_id: int) -> list[tuple[str, str]]:
    return [(d["action"], d["status"]) for d in spec.journal.decisions(job_id) if d["action"] != "advice"]


def test_opted_in_job_killed_at_t1_requeued_with_t2_once_and_completes(slurm, tmp_path):
    path = tmp_path / "journal.sqlite"
    spec = speculator(slurm, path)
    for i, runtime in enumerate(SAMPLES):
        spec.add_sample("root/specapp", 1000 + i, runtime, 1000.0 + i)
    # Held, so that the daemon sees it pending (on a busy cluster it would wait anyway).
    job_id = slurm.submit(
        "-H", "-n", "1", "-t", "3", "--job-name=specapp", "--comment=rush:speculative", "--wrap", SCRIPT
    )
    cycle = 1
    spec.cycle(cycle, spec.backend.read_state())
    [first] = spec.journal.decisions(job_id, "speculate")
    assert first["status"] == "done" and first["value"] == 60.0, first
    assert first["model_outputs"]["samples"] == 5 and first["model_outputs"]["sequence"] == [60.0, 180.0]
    assert slurm.scontrol_job(job_id)["TimeLimit"] == "00:01:00"
    slurm.run(slurm.tool("scontrol"), "release", str(job_id))
    # Slurm kills it at t1 (TIMEOUT); the next cycle requeues it with t2.
    while not spec.journal.decisions(job_id, "speculative_requeue"):
        cycle += 1
        spec.cycle(cycle, spec.backend.read_state())
        assert time.time() < first["time"] + 150, "no requeue after the kill at t1"
        time.sleep(1)
    [requeue] = spec.journal.decisions(job_id, "speculative_requeue")
    assert requeue["status"] == "issued" and "killed at t1 = 60 s" in requeue["reason"], requeue
    assert requeue["model_outputs"]["result"] == "TIMEOUT"
    fields = slurm.scontrol_job(job_id)
    assert fields["Restarts"] == "1" and fields["TimeLimit"] == "00:03:00", fields
    assert "attempt=1" in fields["AdminComment"] and "speculative=1" in fields["AdminComment"]
    # A daemon restart mid-sequence: a new Speculator on the same journal confirms, never re-issues.
    spec.journal.close()
    spec = speculator(slurm, path)
    while (state := slurm.scontrol_job(job_id)["JobState"]) != "COMPLETED":
        # The requeued run must start and finish: a launch refused by slurmd ("Job credential
        # revoked", when the begin time was set to the second of the old run's kill) ends FAILED.
        assert state in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"), f"requeued run ended {state}"
        cycle += 1
        spec.cycle(cycle, spec.backend.read_state())
        # Slurm's main scheduler starts a requeued job on its next pass: up to sched_interval (60 s).
        assert time.time() < requeue["time"] + 300, "the requeued run did not complete"
        time.sleep(1)
    cycle += 1
    spec.cycle(cycle, spec.backend.read_state())
    [requeue] = spec.journal.decisions(job_id, "speculative_requeue")
    assert requeue["status"] == "done" and "restart count 0 -> 1" in requeue["answer"], requeue
    [end] = spec.journal.decisions(job_id, "speculative_end")
    assert "completed" in end["reason"] and "attempt 2" in end["reason"]
    assert decisions(spec, job_id) == [
        ("speculate", "done"),
        ("speculative_requeue", "done"),
        ("speculative_end", "done"),
    ]
    assert slurm.scontrol_job(job_id)["Restarts"] == "1"
    # The completed run is a sample of the application (the killed one is not).
    assert len(spec.history("root/specapp")) == 6 and spec.jobs() == {}


def test_not_enough_history_leaves_the_job_untouched(slurm, tmp_path):
    spec = speculator(slurm, tmp_path / "journal.sqlite")
    spec.add_sample("root/newapp", 1, 30.0, 1.0)
    job_id = slurm.submit(
        "-H", "-n", "1", "-t", "3", "--job-name=newapp", "--comment=rush:speculative", "--wrap", "sleep 2"
    )
    other = slurm.submit("-H", "-n", "1", "-t", "3", "--job-name=newapp", "--wrap", "true")  # not opted in
    for cycle in (1, 2):
        spec.cycle(cycle, spec.backend.read_state())
    [d] = spec.journal.decisions(job_id, "speculate")
    assert d["status"] == "skipped" and "1 sample(s) < min_samples 5" in d["reason"]
    assert slurm.scontrol_job(job_id)["TimeLimit"] == "00:03:00"
    assert spec.journal.decisions(other) == [] and slurm.scontrol_job(other)["TimeLimit"] == "00:03:00"
    # Its completion is observed: one more sample.
    slurm.run(slurm.tool("scontrol"), "release", str(job_id))
    wait_for(lambda: slurm.scontrol_job(job_id)["JobState"] == "COMPLETED")
    spec.cycle(3, spec.backend.read_state())
    assert len(spec.history("root/newapp")) == 2
