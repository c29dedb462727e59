"""The trace study and the daemon build the same speculative sequence from the same history.

One application's past runs (completed, failed, timed out at a short walltime, cancelled,
timed out at the full walltime) are given to the study as a trace (``reservation_inputs``) and
to the daemon as jobs it follows until their accounting records say how they ended
(``Speculator.cycle``). A new job of the application then gets a sequence on both sides. The
backend is a recording one (no RJMS involved: the rules are the daemon's, not Slurm's).
"""

from __future__ import annotations

import numpy as np
import pytest

from rush.planner.journal import Journal
from rush.planner.speculative import SpeculativeSection, Speculator
from rush.rjms.base import ActionResult, ClusterState, RJMSJob
from rush.studies.speculative import reservation_inputs
from rush.workload.model import Workload
from tests.queue_backend import Queue

WALLTIME = 1800.0
# (length, walltime, Slurm state, SWF status) of the application's past runs, in end order.
PAST = [
    (300.0, WALLTIME, "COMPLETED", 1),
    (50.0, WALLTIME, "FAILED", 0),
    (600.0, 600.0, "TIMEOUT", 0),  # censored at its own, shorter walltime
    (420.0, WALLTIME, "COMPLETED", 1),
    (200.0, WALLTIME, "CANCELLED", 5),  # censored: someone stopped it
    (610.0, WALLTIME, "COMPLETED", 1),
    (WALLTIME, WALLTIME, "TIMEOUT", 0),  # needed all of the new job's walltime
    (900.0, WALLTIME, "COMPLETED", 1),
    (0.0, WALLTIME, "COMPLETED", 1),  # zero length: not a sample on either side
]


class Recorder(Queue):
    """A queue the test sets; accounting answers from the test's records."""

    name = "recorder"

    def __init__(self) -> None:
        super().__init__(ClusterState(0.0, 64, 64, ()))
        self.records: dict[int, dict] = {}
        self.limits: dict[int, float] = {}

    def set_time_limit(self, job_id, seconds):
        self.limits[job_id] = seconds
        return ActionResult(True, "limit set")

    def accounting(self, job_ids):
        return [self.records[j] for j in job_ids if j in self.records]


def pending(job_id: int, walltime: float, submit: float) -> RJMSJob:
    return RJMSJob(
        job_id, "PENDING", submit, 1, walltime, user="alice", name="sim", tags={"speculative": "1"}
    )


def daemon_sequence(tmp_path, estimator: str) -> list[float]:
    backend = Recorder()
    section = SpeculativeSection(enabled=True, estimator=estimator)
    spec = Speculator(section, backend, Journal(tmp_path / f"{estimator}.sqlite"))
    # The daemon sees the past jobs pending (too little history: watched), then they end.
    jobs = tuple(pending(100 + i, walltime, 10.0 * i) for i, (_, walltime, _, _) in enumerate(PAST))
    backend.state = ClusterState(1000.0, 64, 64, jobs)
    spec.cycle(1, backend.state)
    end = 2000.0
    for i, (length, _, state, _) in enumerate(PAST):
        end += 100.0
        backend.records[100 + i] = {"job_id": 100 + i, "state": state, "start": end - length, "end": end}
    backend.state = ClusterState(end + 10.0, 64, 64, ())
    spec.cycle(2, backend.state)
    new = pending(999, WALLTIME, end + 20.0)
    backend.state = ClusterState(end + 30.0, 64, 64, (new,))
    spec.cycle(3, backend.state)
    [decision] = spec.journal.decisions(999, "speculate")
    assert decision["model_outputs"]["samples"] == len(PAST) - 1
    return decision["model_outputs"]["sequence"]


def study_sequence(estimator: str) -> list[float]:
    n = len(PAST) + 1
    runtime = np.array([p[0] for p in PAST] + [100.0])
    walltime = np.array([p[1] for p in PAST] + [WALLTIME])
    status = np.array([p[3] for p in PAST] + [1])
    # Each run ends 100 s after the previous one; the new job is submitted after the last end.
    ends = 2100.0 + 100.0 * np.arange(len(PAST))
    submit = np.append(ends - runtime[:-1] - 5.0, ends[-1] + 20.0)
    workload = Workload(
        job_id=np.arange(1, n + 1),
        submit=submit,
        runtime=runtime,
        procs=np.ones(n, dtype=np.int64),
        requested_time=walltime,
        user=np.zeros(n, dtype=np.int64),
        machine_procs=64,
        extra={"wait": np.full(n, 5.0), "app": np.full(n, 7), "status": status},
    )
    seq, counts, _ = reservation_inputs(workload, estimator)
    return seq[-1, : counts[-1]].tolist()


@pytest.mark.parametrize("estimator", ["discrete", "continuous", "mean-doubling"])
def test_study_and_daemon_build_the_same_sequence(tmp_path, estimator):
    live = daemon_sequence(tmp_path, estimator)
    offline = study_sequence(estimator)
    assert live == offline
    # Censored runs were kept (Kaplan-Meier), rounded to Slurm's minutes, ended at the walltime.
    assert len(live) >= 2 and live[-1] == WALLTIME
    assert all(t % 60 == 0 for t in live)


def test_a_journal_without_the_censored_column_is_upgraded(tmp_path):
    path = tmp_path / "old.sqlite"
    journal = Journal(path)
    journal.db.execute(
        "CREATE TABLE speculative_history (app TEXT NOT NULL, job_id INTEGER NOT NULL,"
        " runtime REAL NOT NULL, time REAL NOT NULL, PRIMARY KEY (app, job_id))"
    )
    journal.db.execute("INSERT INTO speculative_history VALUES ('alice/sim', 1, 42.0, 1.0)")
    spec = Speculator(SpeculativeSection(enabled=True), Recorder(), journal)
    spec.add_sample("alice/sim", 2, 60.0, 2.0, censored=True)
    history = spec.history("alice/sim")
    assert [(r.length, r.censored) for r in history] == [(42.0, False), (60.0, True)]
