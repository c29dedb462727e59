"""A daemon cycle with a bounded pass (``policy.max_jobs_considered``): the jobs left out are
said so in the journal (the cycle's counts, each job's estimate basis), and every job still
gets its priority from rush."""

from __future__ import annotations

import json

import pytest

from rush.core.pass_budget import BASIS_UNCONSIDERED
from rush.errors import ConfigError
from rush.planner.config import parse_config
from rush.planner.journal_query import JournalQuery
from rush.planner.plan import Planner
from rush.rjms.base import ActionResult, ClusterState, RJMSJob
from tests.queue_backend import Queue


class Recording(Queue):
    def __init__(self, state: ClusterState) -> None:
        super().__init__(state)
        self.priorities: dict[int, int] = {}

    def set_priority(self, job_id, site_factor):
        self.priorities[job_id] = site_factor
        return ActionResult(True)


def config(tmp_path, **policy: object) -> dict:
    journal = str(tmp_path / "journal.sqlite")
    return {"daemon": {"journal": journal, "dry_run": False}, "policy": {"policy": "FCFS", **policy}}


def test_unconsidered_jobs_are_journalled_and_still_prioritised(tmp_path) -> None:
    # 8 processors, all busy; six pending jobs in FCFS order (job 1 oldest), two considered.
    running = RJMSJob(100, "RUNNING", 900.0, 8, 600.0, start=950.0)
    pending = tuple(RJMSJob(k, "PENDING", 1000.0 + k, 4, 600.0) for k in range(1, 7))
    state = ClusterState(taken_at=2000.0, total_procs=8, free_procs=0, jobs=(running, *pending))
    planner = Planner(parse_config(config(tmp_path, max_jobs_considered=2)), backend=Recording(state))
    assert planner.core_config.max_jobs_considered == 2
    assert planner.run_cycle().ok
    counts = json.loads(planner.journal.cycles()[-1]["counts"])
    assert counts["unconsidered"] == 4
    assert set(planner.backend.priorities) == {1, 2, 3, 4, 5, 6}
    with JournalQuery(tmp_path / "journal.sqlite") as query:
        basis = {line.job_id: line.estimate_basis for line in query.queue_view() if line.state == "pending"}
    assert {j for j, b in basis.items() if b == BASIS_UNCONSIDERED} == {3, 4, 5, 6}
    assert basis[1] not in (None, BASIS_UNCONSIDERED) and basis[2] not in (None, BASIS_UNCONSIDERED)


@pytest.mark.parametrize("value", [0, 1.5, "ten"])
def test_max_jobs_considered_is_checked_in_rush_toml(tmp_path, value: object) -> None:
    with pytest.raises(ConfigError, match="max_jobs_considered"):
        parse_config(config(tmp_path, max_jobs_considered=value))
