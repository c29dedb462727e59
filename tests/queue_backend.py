"""A backend whose queue the test sets: no RJMS involved, for tests of the daemon's own rules
(hold on a flag, journal, passes, runtime predictions); tests/campaign runs the same rules on
the real test Slurm."""

from __future__ import annotations

from rush.rjms.base import ActionResult, ClusterState, RJMSBackend


class Queue(RJMSBackend):
    """A backend whose queue the test sets (``state``; by default an empty machine of 8
    processors) and that records the jobs it was told to hold."""

    def __init__(self, state: ClusterState | None = None) -> None:
        self.state = state or ClusterState(taken_at=1000.0, total_procs=8, free_procs=8, jobs=())
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
