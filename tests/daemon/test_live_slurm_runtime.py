"""The daemon with a runtime predictor (``policy.runtime_prediction = "easy++"``) against the
REAL Slurm of the ``slurm_cluster`` fixture (22.05 and 25.11).

The user's finished jobs (as the daemon saw them end) make the prediction shorter than the
limit; the start estimate of a job queued behind a running one follows the prediction, where
Slurm's own (``squeue --start``) follows the limit; a restarted daemon keeps the history.
Expected values come from what the daemon recorded (the runtimes in the journal's
``runtime_history``, the running job's start, the pass time) through the core's rules.
"""

from __future__ import annotations

import pytest

from rush.core.runtime_predictions import CORRECTION_STEPWISE, running_estimate
from rush.daemon.service import Daemon
from rush.planner.config import RushConfig, parse_config
from rush.rjms.base import get_backend
from tests import polling

LIMIT_MINUTES = 60
LIMIT = LIMIT_MINUTES * 60.0


def wait_for(predicate, timeout: float = 45.0, step: float = 0.5):
    return polling.wait_for(predicate, timeout, step)


def state_of(cluster, job_id: int) -> str:
    found = get_backend("slurm", **cluster.options()).job(job_id)
    return found.state if found else ""


def config(cluster, tmp_path, policy: dict) -> RushConfig:
    return parse_config(
        {
            "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": False},
            "policy": {"threshold": "none", **policy},
            "rjms": {"backend": "slurm", "options": cluster.options(timeout=8)},
        }
    )


def history(daemon: Daemon) -> list[float]:
    return [r[0] for r in daemon.journal.db.execute("SELECT runtime FROM runtime_history ORDER BY end")]


def cycle(daemon: Daemon):
    report = daemon.run_cycle()
    assert report.ok, report.error
    return daemon.last[1], daemon.last[2]


def test_estimate_follows_the_users_history_and_a_restart_keeps_it(slurm, tmp_path):
    settings = config(slurm, tmp_path, {"policy": "FCFS", "runtime_prediction": "easy++"})
    daemon = Daemon(settings)
    for seconds in (4, 6):  # the daemon sees each one running, then gone: two runtimes
        slurm.submit("-n", "1", "-t", str(LIMIT_MINUTES), "--wrap", f"sleep {seconds}")

    def learned():
        cycle(daemon)
        return len(history(daemon)) == 2

    wait_for(learned, timeout=60)
    predicted = sum(history(daemon)) / 2  # EASY++: the mean of the user's last two runtimes
    assert 0 < predicted < LIMIT

    blocker = slurm.submit("-n", str(slurm.cpus), "-t", str(LIMIT_MINUTES), "--wrap", "sleep 300")
    wait_for(lambda: state_of(slurm, blocker) == "RUNNING")
    waiting = slurm.submit("-n", str(slurm.cpus), "-t", str(LIMIT_MINUTES), "--wrap", "sleep 1")
    built, decided = cycle(daemon)
    running = {r.job_id: r for r in built.snapshot.running}[blocker]
    pending = {p.job_id: p for p in built.snapshot.pending}[waiting]
    assert running.estimate == pytest.approx(predicted) and pending.estimate == pytest.approx(predicted)
    assert built.outputs[waiting]["runtime_source"] == "easy++"
    expected = running.start + running_estimate(
        CORRECTION_STEPWISE, predicted, decided.now - running.start, LIMIT
    )
    assert decided.estimated_start[waiting] == pytest.approx(expected)
    assert daemon.journal.queue()[waiting].estimated_start == pytest.approx(expected)
    # Slurm's own estimate plans the running job to its limit.
    out = slurm.run(slurm.tool("squeue"), "-h", "-j", str(waiting), "--start", "-o", "%S").stdout.strip()
    assert out  # Slurm's backfill gives a start (or N/A before it ran): rush's is far earlier
    assert decided.estimated_start[waiting] < running.start + LIMIT / 2

    # A restarted daemon replays the history from the journal: the same prediction.
    daemon.journal.db.close()
    again = Daemon(settings)
    assert any("replayed from the journal" in e["message"] for e in again.journal.events("model"))
    built, decided = cycle(again)
    assert {p.job_id: p for p in built.snapshot.pending}[waiting].estimate == pytest.approx(predicted)
    assert built.outputs[waiting]["runtime_source"] == "easy++"
    slurm.cancel_all()
