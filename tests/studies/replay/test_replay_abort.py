"""Replay mode must leave nothing behind and never report a vacuous comparison.

An in-memory RJMS stands in for Slurm here (jobs that never finish on demand, a Ctrl-C in
the middle of submitting, finished jobs with no accounting): the real Slurm replay is in
tests/slurm/test_replay_live.py.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

import pytest

from rush.core.config import CoreConfig
from rush.errors import RJMSError, RushError
from rush.rjms.base import ActionResult, ClusterState, RJMSBackend, RJMSJob
from rush.simulator.engine import simulate
from rush.studies.replay import ReplayOptions, replay
from rush.studies.replay_window import Window, fidelity_report
from tests.core.helpers import workload


class MemoryRJMS(RJMSBackend):
    """Submitted jobs stay PENDING (``finish=False``) or finish at once; cancels are recorded."""

    name = "memory"

    def __init__(self, finish: bool = False, interrupt_at: int | None = None) -> None:
        self.finish, self.interrupt_at = finish, interrupt_at
        self.jobs: dict[int, str] = {}
        self.cancelled: list[int] = []

    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        jobs = tuple(
            RJMSJob(job_id=j, state=s, submit=0.0, procs=1, requested_time=60.0)
            for j, s in self.jobs.items()
            if s != "COMPLETED"
        )
        return ClusterState(taken_at=0.0, total_procs=8, free_procs=8, jobs=jobs)

    def submit(self, *, name, procs, time_limit, command, comment="", begin=None, partition="") -> int:
        if self.interrupt_at is not None and len(self.jobs) == self.interrupt_at:
            raise KeyboardInterrupt
        job_id = 100 + len(self.jobs)
        self.jobs[job_id] = "COMPLETED" if self.finish else "PENDING"
        return job_id

    def cancel(self, job_id: int) -> ActionResult:
        if self.jobs.get(job_id) != "PENDING":
            return ActionResult(False, "Job/step already completing or completed")
        self.cancelled.append(job_id)
        self.jobs[job_id] = "CANCELLED"
        return ActionResult(True, "")

    def accounting(self, job_ids: Sequence[int]) -> list[dict]:
        return []  # finished, but forgotten (no MinJobAge, no jobcomp file)

    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        raise NotImplementedError

    def hold(self, job_id: int) -> ActionResult:
        raise NotImplementedError

    def release(self, job_id: int) -> ActionResult:
        raise NotImplementedError

    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        raise NotImplementedError


TRACE = workload(8, [(0, 2, 30, 60), (0, 2, 30, 60), (0, 2, 30, 60)])


def test_timeout_cancels_every_submitted_job_and_says_so():
    rjms, said = MemoryRJMS(), []
    with pytest.raises(RJMSError, match="still not finished") as err:
        replay(rjms, TRACE, Window(0, 3), 100.0, CoreConfig(), ReplayOptions(timeout=0.5, say=said.append))
    assert sorted(rjms.cancelled) == [100, 101, 102]
    assert set(rjms.jobs.values()) == {"CANCELLED"}
    assert "cancelled 3 of the 3 submitted jobs" in str(err.value)
    assert said and "cancelled 3 of the 3" in said[0]


def test_ctrl_c_while_submitting_cancels_what_was_submitted():
    rjms, said = MemoryRJMS(interrupt_at=2), []
    with pytest.raises(KeyboardInterrupt):
        replay(rjms, TRACE, Window(0, 3), 100.0, CoreConfig(), ReplayOptions(timeout=60, say=said.append))
    assert sorted(rjms.cancelled) == [100, 101] and set(rjms.jobs.values()) == {"CANCELLED"}
    assert "KeyboardInterrupt" in said[0] and "cancelled 2 of the 2" in said[0]


def test_no_finished_job_is_not_a_100_percent_match():
    rjms = MemoryRJMS(finish=True)
    with pytest.raises(RJMSError, match="nothing can be compared"):
        replay(rjms, TRACE, Window(0, 3), 100.0, CoreConfig(), ReplayOptions(timeout=60))
    assert rjms.cancelled == []  # they finished: nothing to cancel
    empty = simulate(TRACE.subset([]), CoreConfig())
    with pytest.raises(RushError, match="nothing can be compared"):
        fidelity_report(empty, [])


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf")])
def test_bad_timeout_is_refused_before_submitting(timeout):
    rjms = MemoryRJMS()
    with pytest.raises(RushError, match="--timeout"):
        replay(rjms, TRACE, Window(0, 3), 100.0, CoreConfig(), ReplayOptions(timeout=timeout))
    assert rjms.jobs == {}


@pytest.mark.parametrize("speedup", [0, -5, float("nan"), float("inf")])
def test_bad_speedup_is_refused_before_submitting(speedup):
    rjms = MemoryRJMS()
    with pytest.raises(RushError, match="--speedup"):
        replay(rjms, TRACE, Window(0, 3), speedup, CoreConfig(), ReplayOptions(timeout=60))
    assert rjms.jobs == {}


@pytest.mark.parametrize("where", ["missing-dir/report.json", "."])
def test_unwritable_report_path_is_refused_before_anything_is_submitted(tmp_path, where):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "rush",
            "replay",
            "lublin:10:8:1",
            "--window",
            "0:5",
            "--out",
            str(tmp_path / where),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2 and "--out" in out.stderr and "Traceback" not in out.stderr
