"""The snapshot a live shell reads one cycle after a ``schedule()`` call, for benchmarks of the
warm conservative pass: the core's starts running where it put them, the ``ended`` running
jobs that were to end soonest gone (ended early), the standing reservations given back
(``PendingJob.reserved_at``) and, with ``kept``, the pass's record (``Snapshot.kept``).

Its builders (a started job, a pending job with its reservation) are also those of
``tests/core/test_kept_nodes_live.py``'s random live passes, which load this file."""

from __future__ import annotations

from dataclasses import replace

from rush.core import RunningJob, Snapshot
from rush.core.resources import Slot
from rush.core.snapshot import Decision, Decisions, PendingJob


def node_index(snapshot: Snapshot) -> dict[str, int]:
    """Node name -> its index in the snapshot (what a running job's slots name)."""
    return {node.name: i for i, node in enumerate(snapshot.nodes)}


def started_where(index: dict[str, int], decision: Decision) -> list[tuple[int, int, int]]:
    """A start's nodes as (node index, cores, GPUs), from its named allocation."""
    return [(index[name], cores, gpus) for name, cores, gpus in decision.allocation]


def started_job(job: PendingJob, start: float, where: list[tuple[int, int, int]]) -> RunningJob:
    """A pending job running from ``start`` on ``where`` (node index, cores, GPUs)."""
    return RunningJob(
        job.job_id,
        start,
        job.procs,
        job.requested_time,
        estimate=job.estimate,
        request=job.request,
        allocation=tuple(Slot(i, cores, gpus) for i, cores, gpus in where),
    )


def with_reservation(job: PendingJob, decided: Decisions) -> PendingJob:
    """A job still pending, with the time the last pass reserved for it (none: infinity)."""
    return replace(job, reserved_at=decided.reserved_at.get(job.job_id, float("inf")))


def next_snapshot(
    snapshot: Snapshot, decided: Decisions, ended: int, kept: bool, step: float = 1.0
) -> Snapshot:
    index = node_index(snapshot)
    starts = {d.job_id: d for d in decided.decisions if d.action in ("start", "backfill")}
    by_end = sorted(snapshot.running, key=lambda r: r.start + (r.estimate or r.requested_time))
    running = list(by_end[ended:])
    pending = []
    for p in snapshot.pending:
        d = starts.get(p.job_id)
        if d is None:
            pending.append(with_reservation(p, decided))
        else:
            running.append(started_job(p, snapshot.now, started_where(index, d)))
    return replace(
        snapshot,
        now=snapshot.now + step,
        pending=tuple(pending),
        running=tuple(running),
        free_procs=max(snapshot.total_procs - sum(r.procs for r in running), 0),
        kept=decided.kept if kept else None,
    )
