"""A backend whose queue a test sets (shared by the variability predictor and placement tests)."""

from __future__ import annotations

from rush.rjms.base import ActionResult, ClusterState, RJMSBackend


class Queue(RJMSBackend):
    """A backend whose queue the test sets: the rule under test is the daemon's (hold on a
    flag, journal), not Slurm's; tests/campaign runs the same on the real test Slurm."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.held: list[int] = []

    def read_state(self, partitions=()):
        return self.state

    def set_priority(self, job_id, site_factor):
        return ActionResult(True)

    def hold(self, job_id):
        self.held.append(job_id)
        return ActionResult(True)

    def release(self, job_id):
        return ActionResult(True)

    def requeue(self, job_id, tags):
        return ActionResult(True)

    def cancel(self, job_id):
        return ActionResult(True)

    def submit(self, **kwargs):
        raise NotImplementedError
