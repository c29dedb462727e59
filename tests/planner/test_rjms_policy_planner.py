"""Under the RJMS policy the planner sets no priorities: the order is the RJMS's own priority,
and on Slurm that priority includes the SiteFactor rush would set (a feedback loop measured
live: values drifting by 3 % in four cycles)."""

from __future__ import annotations

from dataclasses import replace

from rush.planner.config import parse_config
from rush.planner.plan import Planner
from rush.rjms.base import ClusterState, RJMSJob
from tests.queue_backend import Queue


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


class StartsJobs(Recording):
    """The same queue read by a shell that starts jobs itself (rush as Flux's scheduler)."""

    capabilities = replace(Recording.capabilities, starts_jobs=True)


def _scheduler(tmp_path, backend: type[Recording], **policy: str) -> Planner:
    # Walltimes make SPF's order 3, 2, 1; Flux's priorities say 2 first (expedited), then 1 and 3.
    jobs = (
        RJMSJob(1, "PENDING", 1001.0, 8, 900.0, priority=16.0),
        RJMSJob(2, "PENDING", 1002.0, 8, 600.0, priority=31.0),
        RJMSJob(3, "PENDING", 1003.0, 8, 300.0, priority=16.0),
    )
    state = ClusterState(taken_at=2000.0, total_procs=8, free_procs=0, jobs=jobs)
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "scheduler.sqlite"), "dry_run": False},
            "policy": {"policy": "SPF", **policy},
        }
    )
    return Planner(config, backend=backend(state))


def test_a_scheduler_orders_by_the_rjms_priority_first_by_default(tmp_path) -> None:
    planner = _scheduler(tmp_path, StartsJobs)
    assert planner.core_config.rjms_priority_first
    assert planner.run_cycle().ok
    assert planner.last[2].order == [2, 3, 1]  # priority 31, then SPF among the 16s


def test_rjms_priority_ignore_orders_by_the_policy_alone(tmp_path) -> None:
    planner = _scheduler(tmp_path, StartsJobs, rjms_priority="ignore")
    assert planner.run_cycle().ok
    assert planner.last[2].order == [3, 2, 1]


def test_the_daemon_sets_priorities_so_it_never_orders_by_them(tmp_path) -> None:
    """Priority mode: the RJMS's priority is rush's own value (feedback), never an input."""
    planner = _scheduler(tmp_path, Recording)
    assert not planner.core_config.rjms_priority_first
    assert planner.run_cycle().ok
    assert planner.last[2].order == [3, 2, 1]
