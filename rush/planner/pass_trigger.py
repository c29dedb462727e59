"""What triggered a live pass: an RJMS event or only the cycle's timer.

The core counts a skip only in a pass triggered by an RJMS event (a job submitted, a job
ended, resources changed: what runs Fluxion's scheduling loop; see
:mod:`rush.core.skip_with_limit`). The live shells poll (the Slurm daemon) or run on a timer
as well as on events (the Flux module), so the planner tells the two apart from what it reads:
a cycle whose read shows a job id it did not see last cycle (an arrival), misses one it saw
(an end or a cancel), or shows a node in another state (up, drained, down) is an event
pass; any other cycle is periodic. A job moving from pending to running is neither (it
is this scheduler's own start). The first cycle after a start is an event pass.
"""

from __future__ import annotations

from rush.rjms.base import ClusterState


def _fingerprint(state: ClusterState) -> tuple[frozenset[int], tuple]:
    active = frozenset(j.job_id for j in state.jobs if j.state in ("PENDING", "RUNNING"))
    nodes = tuple((n.name, n.state) for n in state.nodes)
    return active, nodes


class PassTrigger:
    """Remembers the last read's jobs and nodes; :meth:`of` names the trigger of the next."""

    def __init__(self) -> None:
        self._last: tuple[frozenset[int], tuple] | None = None

    def of(self, state: ClusterState) -> str:
        now = _fingerprint(state)
        last, self._last = self._last, now
        if last is None:
            return "event"
        (was, nodes_was), (jobs, nodes) = last, now
        return "event" if jobs != was or nodes != nodes_was else "periodic"
