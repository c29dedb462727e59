"""A bounded pass: at most ``max_jobs_considered`` pending jobs are considered (Slurm's
``bf_max_job_test``), the rest are left for the next pass, *unconsidered*.

A pass decides job after job: EASY starts jobs in priority order, reserves the head and scans
the rest in backfill order; conservative compresses the standing reservations, then places the
other jobs in priority order. Each decision depends only on the decisions before it. The
cut-off keeps a *prefix* of that sequence, so every decision of a bounded pass is one the full
pass makes too:

* EASY and list scheduling: the first ``limit`` jobs in priority order (the list phase and the
  head) and the first ``limit`` jobs in backfill-scan order (the scan; the same jobs unless the
  scan has a policy of its own). The scan skips the jobs the list phase took, as in the full
  pass.
* conservative: every job that holds a standing reservation (an older promise: it is in the
  availability profile before any new job is placed, so a bounded pass cannot start a job in
  its way) and the first ``limit`` of the others in priority order.

So a bounded pass may leave jobs unconsidered (not started, not reserved, their estimated start
"not considered"), never start a job the full pass would not start ahead of an older
reservation. The jobs left out are listed in ``Decisions.unconsidered``; their priority values
are published as in a full pass (the order is computed for every job, which is cheap: it is
the placement of each job that costs).

Live passes are bounded by default (:data:`DEFAULT_MAX_JOBS_CONSIDERED`, the daemon's and the Flux
module's ``policy.max_jobs_considered`` when the site sets none; ``"all"`` lifts it). A count,
not a clock (Slurm's ``bf_max_time``): a pass cut by time would decide differently on a busy and
on an idle host, and no replay could say what it did. The count bounds what grows with the
queue inside a pass: the considered jobs' placement and start estimates, and the journal's queue
rows, which change at every pass only for considered jobs (the others keep "not considered").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rush.core.pass_data import MODE_CONSERVATIVE, PassConfig, PassJobs, PassMoment, PassQueues, PassState
from rush.core.scheduling_pass import order_queue
from rush.core.start_estimates import EASY_REPLAY_MAX_JOBS

INF = np.inf
# A live pass considers at most this many pending jobs unless the site says otherwise: the EASY
# start-estimate replay's bound, named, not copied, so that every considered job's estimate stays
# EASY's own if either moves; Slurm's bf_max_job_test defaults to 500. What it saves at 10 000
# pending jobs on 1 000 nodes: benchmarks/bench_pass_budget.py, docs/admin-slurm.md.
DEFAULT_MAX_JOBS_CONSIDERED = EASY_REPLAY_MAX_JOBS
# The estimate basis of a job a bounded pass left out (Decisions.estimate_basis).
BASIS_UNCONSIDERED = "not considered"


class BoundedQueue(NamedTuple):
    """The pass's moment with its queue cut to the considered jobs; the jobs left out (indices,
    in priority order) and the whole queue's order (job indices, group and key per rank)."""

    moment: PassMoment
    unconsidered: np.ndarray
    queue: np.ndarray
    group: np.ndarray
    key: np.ndarray


def bound_queue(
    moment: PassMoment,
    config: PassConfig,
    jobs: PassJobs,
    state: PassState,
    queues: PassQueues,
    limit: int | None,
) -> BoundedQueue | None:
    """Cut ``queues`` to the jobs a pass bounded by ``limit`` considers; None when nothing is cut."""
    qn = moment.queued
    if limit is None or qn <= limit:
        return None
    order_queue(moment, config, jobs, queues)  # the pass sorts again: already sorted, O(n)
    queue = queues.queue[:qn].copy()
    whole = BoundedQueue(moment, queue[:0], queue, queues.group[:qn].copy(), queues.key[:qn].copy())
    if config.mode == MODE_CONSERVATIVE:
        held = state.reserved_at[queue] < INF
        keep = held | (np.cumsum(~held) <= limit)
    else:
        keep = np.arange(qn) < limit
    scanned = config.mode != MODE_CONSERVATIVE and not config.same_scan
    # Left out: in neither the first `limit` by priority nor (own scan order) the first `limit` scanned.
    left = ~keep & ~np.isin(queue, queues.scan[:limit]) if scanned else ~keep
    if not left.any():
        return None
    considered = queue[keep]
    queues.queue[: len(considered)] = considered
    if not scanned:
        queues.scan[: len(considered)] = considered
    # else: scan[:limit] already holds the first `limit` jobs in scan order (order_queue sorted it)
    return whole._replace(moment=moment._replace(queued=len(considered)), unconsidered=queue[left])
