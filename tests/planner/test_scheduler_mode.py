"""A backend that starts jobs itself (``Capabilities.starts_jobs``: the Flux scheduler module)
has no holds: the applier counts the core's skips in the journal and calls nothing."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from rush.planner.apply import SCHEDULER_MODE, Action, Applier, Plan
from rush.planner.journal import Journal
from rush.planner.metrics import DaemonMetrics
from rush.rjms.base import ActionResult, Capabilities, ClusterState, RJMSBackend, RJMSJob

PENDING = RJMSJob(job_id=7, state="PENDING", submit=0.0, procs=2, requested_time=60.0)
STATE = ClusterState(taken_at=10.0, total_procs=8, free_procs=8, jobs=(PENDING,))


class Levers(RJMSBackend):
    """Records every lever pulled (an RJMS with holds, as Slurm)."""

    name = "levers"

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def hold(self, job_id: int) -> ActionResult:
        self.calls.append(("hold", job_id))
        return ActionResult(True, "held")

    def release(self, job_id: int) -> ActionResult:
        self.calls.append(("release", job_id))
        return ActionResult(True, "released")

    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        raise NotImplementedError

    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        raise NotImplementedError

    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        raise NotImplementedError

    def submit(self, **kwargs) -> int:
        raise NotImplementedError

    def cancel(self, job_id: int) -> ActionResult:
        raise NotImplementedError


class SchedulerLevers(Levers):
    """The same, declared as a backend whose shell starts the jobs (the Flux module's)."""

    capabilities = Capabilities(starts_jobs=True)


def run(backend: Levers, journal: Journal, kind: str) -> None:
    done, error = Applier(backend, journal, DaemonMetrics()).apply(
        1, Plan(actions=[Action(kind, 7, f"the core's {kind}", 1.0)]), STATE
    )
    assert error is None and done == {kind: 1}


@pytest.mark.parametrize("starts_jobs", [True, False])
def test_hold_then_release_are_bookkeeping_only_when_the_backend_starts_jobs(tmp_path, starts_jobs):
    backend, journal = (SchedulerLevers() if starts_jobs else Levers()), Journal(tmp_path / "journal.sqlite")
    run(backend, journal, "hold")
    held = journal.job(7)
    run(backend, journal, "release")
    assert (held.held_by_rush, held.skips) == (True, 1)
    assert not journal.job(7).held_by_rush
    answers = [(d["action"], d["status"], d["answer"]) for d in journal.decisions(7)]
    if starts_jobs:
        assert backend.calls == []
        assert answers == [(k, "done", SCHEDULER_MODE[k]) for k in ("hold", "release")]
    else:
        assert backend.calls == [("hold", 7), ("release", 7)]
        assert answers == [("hold", "done", "held"), ("release", "done", "released")]
    journal.close()
