"""Under the RJMS policy the planner sets no priorities: the order is the RJMS's own priority,
and on Slurm that priority includes the SiteFactor rush would set (a feedback loop measured
live: values drifting by 3 % in four cycles)."""

from __future__ import annotations

from rush.planner.config import parse_config
from rush.planner.plan import Planner
from rush.rjms.base import ClusterState, RJMSJob
from tests.models.variability.queue_backend import Queue


class Recording(Queue):
    """A fixed queue that also records the priorities the planner sets."""

    def __init__(self, state: ClusterState) -> None:
        super().__init__(state)
        self.priorities: list[tuple[int, int]] = []

    def set_priority(self, job_id, site_factor):
        self.priorities.append((job_id, site_factor))
        return super().set_priority(job_id, site_factor)


def _planner(tmp_path, policy: str) -> Planner:
    jobs = tuple(RJMSJob(k, "PENDING", 1000.0 + k, 8, 600.0, priority=float(100 - k)) for k in range(1, 4))
    state = ClusterState(taken_at=2000.0, total_procs=8, free_procs=0, jobs=jobs)
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / f"{policy}.sqlite"), "dry_run": False},
            "policy": {"policy": policy},
        }
    )
    return Planner(config, backend=Recording(state))


def test_rjms_policy_plans_no_priority_actions(tmp_path) -> None:
    planner = _planner(tmp_path, "RJMS")
    assert planner.run_cycle().ok
    assert planner.backend.priorities == []
    assert planner.last[2].order == [1, 2, 3]


def test_other_policies_still_set_priorities(tmp_path) -> None:
    planner = _planner(tmp_path, "SPF")
    assert planner.run_cycle().ok
    assert {job_id for job_id, _ in planner.backend.priorities} == {1, 2, 3}
