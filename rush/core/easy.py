"""EASY backfilling (Mu'alem & Feitelson 2001), exactly, and plain list scheduling.

1. start jobs in priority order while they fit;
2. the first job that does not fit (the head) is reserved at the *shadow time*: the
   earliest estimated end of running jobs at which enough processors are free; ``extra``
   = processors free at the shadow time beyond the head's need;
3. scan the rest in backfill order; start a job if it fits now and either ends (by its
   estimate) no later than the shadow time, or needs no more than ``extra`` (then
   ``extra -= q``).

A head that has starved (waited longer than the starvation threshold) is reserved on limits
instead of estimates, steps 2 and 3 alike (:mod:`rush.core.starved_head`).

Without backfilling (``none``) only step 1 runs: strict list scheduling.

Skip-with-limit applies to every job the pass would start now
(:func:`rush.core.skip_with_limit.should_skip`): it is passed over, not started, not reserved.
The pass never mutates job state; :func:`rush.core.scheduling_pass.scheduling_pass` counts
the skips and the shells apply the starts.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rush.core.pass_data import (
    MODE_EASY,
    PassConfig,
    PassJobs,
    PassMoment,
    PassOut,
    PassQueues,
    PassState,
    RunningSet,
)
from rush.core.skip_with_limit import should_skip
from rush.core.sorted_ends import sort_ends
from rush.core.starved_head import on_limits, reserved_on_limits

INF = np.inf


@njit(cache=True)
def _list_phase(
    moment: PassMoment, config: PassConfig, jobs: PassJobs, state: PassState, queues: PassQueues, out: PassOut
) -> tuple[int, int, int, int]:
    """Start in priority order while jobs fit; return (free, n_started, n_skipped, head)."""
    free = moment.free
    variable_now = moment.variable_now
    ns = 0
    nk = 0
    head = -1
    for k in range(moment.queued):
        j = queues.queue[k]
        if jobs.procs[j] > free:
            head = j
            break
        queues.taken[j] = True
        if should_skip(jobs.sensitive[j] and variable_now, state.skips[j], config.skip_limit):
            out.skip[nk] = j
            nk += 1
            continue
        free -= jobs.procs[j]
        out.start[ns] = j
        out.backfilled[ns] = False
        ns += 1
    return free, ns, nk, head


@njit(cache=True)
def shadow_time(
    now: float, free: int, need: int, running: RunningSet, started: RunningSet
) -> tuple[float, int]:
    """Shadow time and extra processors for a head needing ``need``, merging the running
    jobs' and the just-started jobs' estimated ends (both ascending)."""
    avail = free
    a = 0
    b = 0
    rn = running.count
    nn = started.count
    shadow = INF
    while a < rn or b < nn:
        if b >= nn or (a < rn and running.end[a] <= started.end[b]):
            e = running.end[a]
            p = running.procs[a]
            a += 1
        else:
            e = started.end[b]
            p = started.procs[b]
            b += 1
        avail += p
        if avail >= need:
            shadow = e
            # Everything that ends at the shadow time is free then, too.
            while a < rn and running.end[a] <= shadow:
                avail += running.procs[a]
                a += 1
            while b < nn and started.end[b] <= shadow:
                avail += started.procs[b]
                b += 1
            break
    if shadow < now:
        shadow = now
    return shadow, avail - need


@njit(cache=True, _nrt=False)  # no reference counts on its 35 arrays (rush.core.scheduling_pass)
def easy_pass(
    moment: PassMoment,
    config: PassConfig,
    jobs: PassJobs,
    state: PassState,
    queues: PassQueues,
    running: RunningSet,
    out: PassOut,
) -> tuple[int, int, int, float, int]:
    """EASY (``config.mode`` easy) or list scheduling; returns (n_started, n_skipped, head,
    shadow, extra). The backfill scan follows ``queues.scan`` unless ``config.same_scan``.
    ``queues.taken`` is all False on entry and restored on exit."""
    now = moment.now
    procs = jobs.procs
    free, ns, nk, head = _list_phase(moment, config, jobs, state, queues, out)
    shadow = INF
    extra = 0
    if head >= 0 and config.mode == MODE_EASY:
        starved = reserved_on_limits(config, jobs, head, now)
        est = jobs.limit if starved else jobs.est
        # This pass's starts by their estimated ends, in ``out``'s reservation buffers, which
        # EASY does not use (as the node pass): no allocation, no reference counts.
        new_end, new_procs = out.reserved_at, out.reserved
        for k in range(ns):
            new_end[k] = now + est[out.start[k]]
            new_procs[k] = procs[out.start[k]]
        sort_ends(new_end, new_procs, ns)
        started = RunningSet(new_end, new_procs, ns, new_end, new_procs)
        shadow, extra = shadow_time(
            now, free, procs[head], on_limits(running) if starved else running, started
        )
        queues.taken[head] = True
        scan = queues.queue if config.same_scan else queues.scan
        for k in range(moment.queued):
            if free <= 0:
                break
            j = scan[k]
            if queues.taken[j] or procs[j] > free:
                continue
            ends_in_time = now + est[j] <= shadow
            if not ends_in_time and procs[j] > extra:
                continue
            queues.taken[j] = True
            if should_skip(jobs.sensitive[j] and moment.variable_now, state.skips[j], config.skip_limit):
                out.skip[nk] = j
                nk += 1
                continue
            free -= procs[j]
            if not ends_in_time:
                extra -= procs[j]
            out.start[ns] = j
            out.backfilled[ns] = True
            ns += 1
    # Restore the scratch mask.
    for k in range(moment.queued):
        queues.taken[queues.queue[k]] = False
    return ns, nk, head, shadow, extra
