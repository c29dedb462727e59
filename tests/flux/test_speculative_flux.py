"""Speculative reservations on a LIVE Flux instance (flux-core 0.88 has no requeue).

An opted-in job (``--setattr=rush.speculative=1``) with ~3 s of history gets its duration set
to t1 (``job-manager.update``, as ``flux update ID duration=``), is killed by Flux at t1
(exception ``timeout``), and its jobspec is resubmitted with t2 (tags ``attempt``,
``requeued_from``, its original submit time) until the last reservation, the walltime, lets it
complete. A new Speculator on the same journal (a daemon restart) after a resubmission never
resubmits twice; a job without enough history keeps its duration.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from rush.planner.journal import Journal
from rush.planner.speculative import SpeculativeSection, Speculator
from rush.rjms.base import get_backend
from tests import polling
from tests.flux.instance import FluxInstance

SAMPLES = (3.0, 2.5, 3.5, 2.8, 3.2)


def wait_for(predicate, timeout: float = 5.0, step: float = 0.1):
    return polling.wait_for(predicate, timeout, step)


def speculator(flux: FluxInstance, path: Path) -> Speculator:
    backend = get_backend("flux", uri=flux.uri)
    return Speculator(SpeculativeSection(enabled=True, min_samples=5), backend, Journal(path))


def record(spec: Speculator, job_id: int) -> dict:
    return spec.backend._job_record(job_id)  # type: ignore[attr-defined]


def jobspec(flux: FluxInstance, job_id: int) -> dict:
    return json.loads(flux.run("job", "info", str(job_id), "jobspec").stdout)


def test_opted_in_job_killed_at_each_reservation_resubmitted_once_each_and_completes(flux, tmp_path):
    path = tmp_path / "journal.sqlite"
    spec = speculator(flux, path)
    user = str(record(spec, flux.submit("true"))["userid"])
    app = f"{user}/specapp"
    for i, runtime in enumerate(SAMPLES):
        spec.add_sample(app, 10_000 + i, runtime, 1000.0 + i)
    # urgency 0: held, so that the daemon sees it pending.
    first = flux.submit(
        "-n1", "-t", "60s", "--urgency=0", "--job-name=specapp", "--setattr=rush.speculative=1", "sleep", "8"
    )
    submitted = record(spec, first)["t_submit"]
    spec.cycle(1, spec.backend.read_state())
    [limit] = spec.journal.decisions(first, "speculate")
    sequence = limit["model_outputs"]["sequence"]
    assert limit["status"] == "done" and sequence[-1] == 60.0 and all(t < 8 for t in sequence[:-1]), limit
    # The update is an event of the job's eventlog: read as job-list reports it (what rush reads).
    assert wait_for(lambda: record(spec, first).get("duration") == sequence[0])
    flux.run("job", "urgency", str(first), "16")
    chain, cycle, restarted = [first], 1, False
    deadline = time.time() + 50
    while time.time() < deadline:
        cycle += 1
        spec.cycle(cycle, spec.backend.read_state())
        followed = spec.jobs()
        if followed and max(followed) not in chain:
            chain.append(max(followed))
        if len(chain) == 2 and not restarted:
            # A daemon restart right after the first resubmission was confirmed.
            spec.journal.close()
            spec, restarted = speculator(flux, path), True
        last = record(spec, chain[-1])
        if len(chain) == len(sequence) and last["state"] == 64 and not spec.jobs():
            break
        time.sleep(0.3)
    assert len(chain) == len(sequence), (chain, sequence, spec.journal.decisions())
    # Every attempt but the last was killed at its reservation and resubmitted once.
    for k, job_id in enumerate(chain[:-1]):
        old = record(spec, job_id)
        assert old["exception_type"] == "timeout" and old["result"] == 8
        [requeue] = spec.journal.decisions(job_id, "speculative_requeue")
        assert requeue["status"] == "done" and f"replaced by job {chain[k + 1]}" in requeue["answer"]
        tags = jobspec(flux, chain[k + 1])["attributes"]["system"]
        assert tags["duration"] == sequence[k + 1]
        assert tags["rush"]["attempt"] == str(k + 1) and tags["rush"]["requeued_from"] == str(job_id)
        assert float(tags["rush"]["submit"]) == submitted  # ordered by its original submit time
    final = record(spec, chain[-1])
    assert final["result"] == 1  # COMPLETED under the walltime
    [end] = spec.journal.decisions(chain[-1], "speculative_end")
    assert "completed" in end["reason"] and f"attempt {len(sequence)}" in end["reason"]
    # Exactly one replacement per attempt, across the restart.
    replacing = [
        j["id"]
        for j in flux.jobs()
        if jobspec(flux, int(j["id"]))["attributes"]["system"].get("rush", {}).get("requeued_from")
    ]
    assert len(replacing) == len(sequence) - 1
    assert len(spec.history(app)) == len(SAMPLES) + 1


def test_not_enough_history_keeps_the_duration(flux, tmp_path):
    spec = speculator(flux, tmp_path / "journal.sqlite")
    job_id = flux.submit("-n1", "-t", "60s", "--urgency=0", "--setattr=rush.speculative=1", "true")
    hostile = flux.submit("-n1", "-t", "60s", "--urgency=0", "--setattr=rush.speculative=please", "true")
    forged = flux.submit(
        "-n1", "-t", "60s", "--urgency=0", "--setattr=rush.speculative=1", "--setattr=rush.attempt=0", "true"
    )
    spec.cycle(1, spec.backend.read_state())
    assert spec.journal.decisions(forged) == []  # a forged attempt tag: never a sequence
    [d] = spec.journal.decisions(job_id, "speculate")
    assert d["status"] == "skipped" and "0 sample(s) < min_samples 5" in d["reason"]
    [h] = spec.journal.decisions(hostile, "speculate")
    assert h["status"] == "refused" and "not a flag" in h["reason"]
    spec.cycle(2, spec.backend.read_state())  # journaled once, not every cycle
    assert len(spec.journal.decisions(hostile)) == 1
    for job in (job_id, hostile, forged):
        assert jobspec(flux, job)["attributes"]["system"]["duration"] == 60.0


def test_the_daemon_carries_it_out_when_enabled(flux, tmp_path):
    """``[speculative] enabled = true`` in the daemon's config: the same sequence through
    Daemon.run_cycle, its RJMS actions counted with the core's."""
    from rush.daemon.service import Daemon
    from rush.planner.config import parse_config

    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": False},
            "policy": {"policy": "FCFS", "threshold": "none"},
            "rjms": {"backend": "flux", "options": {"uri": flux.uri}},
            "speculative": {"enabled": True, "min_samples": 3, "samples": 5, "estimator": "mean-doubling"},
        }
    )
    daemon = Daemon(config)
    spec = daemon.speculator
    assert spec is not None
    job_id = flux.submit("-n1", "-t", "30s", "--urgency=0", "--setattr=rush.app=dapp", "--setattr=rush.speculative=1",
                         "sleep", "5")  # fmt: skip
    user = str(record(spec, job_id)["userid"])
    for i, runtime in enumerate((2.0, 2.0, 2.0)):
        spec.add_sample(f"{user}/dapp", 20_000 + i, runtime, 1.0 + i)
    report = daemon.run_cycle()
    assert report.ok and report.applied.get("speculate") == 1, report
    [limit] = daemon.journal.decisions(job_id, "speculate")
    # Mean of the last runs (2 s), doubled at each failure, ending at the walltime.
    assert limit["model_outputs"]["sequence"] == [2.0, 4.0, 8.0, 16.0, 30.0], limit
    flux.run("job", "urgency", str(job_id), "16")
    deadline = time.time() + 40
    while time.time() < deadline and not daemon.journal.decisions(action="speculative_end"):
        assert daemon.run_cycle().ok
        time.sleep(0.3)
    [end] = daemon.journal.decisions(action="speculative_end")
    assert "completed" in end["reason"] and "attempt 3" in end["reason"], end  # killed at 2 s, 4 s
    requeues = daemon.journal.decisions(action="speculative_requeue")
    assert [d["status"] for d in requeues] == ["done", "done"] and [d["value"] for d in requeues] == [
        4.0,
        8.0,
    ]


def test_dry_run_journals_the_limit_and_changes_nothing(flux, tmp_path):
    path = tmp_path / "journal.sqlite"
    job_id = flux.submit(
        "-n1", "-t", "60s", "--urgency=0", "--job-name=dry", "--setattr=rush.speculative=1", "true"
    )
    app = f"{record(speculator(flux, path), job_id)['userid']}/dry"
    seeding = speculator(flux, path)
    for i, runtime in enumerate(SAMPLES):
        seeding.add_sample(app, 30_000 + i, runtime, 1.0 + i)
    spec = Speculator(
        SpeculativeSection(enabled=True, min_samples=5),
        get_backend("flux", uri=flux.uri),
        Journal(path),
        dry_run=True,
    )
    spec.cycle(1, spec.backend.read_state())
    spec.cycle(2, spec.backend.read_state())
    [d] = spec.journal.decisions(job_id, "speculate")
    assert d["status"] == "dry-run" and d["mode"] == "dry-run" and d["value"] < 60.0
    assert record(spec, job_id).get("duration") == 60.0  # untouched
    assert spec.journal.db.execute("SELECT count(*) FROM speculative_jobs").fetchone()[0] == 0
