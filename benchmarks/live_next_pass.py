"""The snapshot a live shell reads one cycle after a ``schedule()`` call, for benchmarks of the
warm conservative pass: the core's starts running where it put them, the ``ended`` running
jobs that were to end soonest gone (ended early), the standing reservations given back
(``PendingJob.reserved_at``) and, with ``kept``, the pass's record (``Snapshot.kept``)."""

from __future__ import annotations

from dataclasses import replace

from rush.core import RunningJob, Snapshot
from rush.core.resources import Slot
from rush.core.snapshot import Decisions


def next_snapshot(
    snapshot: Snapshot, decided: Decisions, ended: int, kept: bool, step: float = 1.0
) -> Snapshot:
    index = {node.name: i for i, node in enumerate(snapshot.nodes)}
    starts = {d.job_id: d for d in decided.decisions if d.action in ("start", "backfill")}
    by_end = sorted(snapshot.running, key=lambda r: r.start + (r.estimate or r.requested_time))
    running = list(by_end[ended:])
    pending = []
    for p in snapshot.pending:
        d = starts.get(p.job_id)
        if d is None:
            pending.append(replace(p, reserved_at=decided.reserved_at.get(p.job_id, float("inf"))))
            continue
        running.append(
            RunningJob(
                p.job_id,
                snapshot.now,
                p.procs,
                p.requested_time,
                estimate=p.estimate,
                request=p.request,
                allocation=tuple(Slot(index[name], c, g) for name, c, g in d.allocation),
            )
        )
    return replace(
        snapshot,
        now=snapshot.now + step,
        pending=tuple(pending),
        running=tuple(running),
        free_procs=max(snapshot.total_procs - sum(r.procs for r in running), 0),
        kept=decided.kept if kept else None,
    )
