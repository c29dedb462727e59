"""One scheduling pass, the only one: order the queue, then EASY, conservative or list
scheduling, then count skips and update standing reservations.

The simulator's event loop (:mod:`rush.simulator.loop`) calls it at every event; the live entry
point :func:`rush.core.schedule.schedule` calls it once per snapshot. What a pass carries to
the next (skip counts, conservative reservations, first promised starts) is
:class:`rush.core.pass_data.PassState`, passed in and updated here; the shells keep it
between passes (the simulator in its arrays, the daemon in its journal).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rush.core.conservative import conservative_pass
from rush.core.conservative_nodes import conservative_nodes_pass
from rush.core.easy import easy_pass
from rush.core.easy_nodes import easy_nodes_pass
from rush.core.node_pool import NodeView, node_table
from rush.core.ordering import compute_order_keys, sort_queue
from rush.core.pass_data import (
    MODE_CONSERVATIVE,
    MODE_EASY,
    PassConfig,
    PassJobs,
    PassMoment,
    PassOut,
    PassQueues,
    PassResult,
    PassState,
    RunningSet,
)

INF = np.inf


# The pass itself is compiled without numba's runtime (``_nrt=False``): a call then counts no
# reference on its arguments' 60-odd arrays, nor on the rows and views it takes, which on a
# node replay was a fifth of the process (issue 31). The parts that allocate say
# ``_nrt=True`` (a callee inherits its caller's setting otherwise) and count as before.


@njit(cache=True, _nrt=False)  # its merge sort allocates and counts (rush.core.ordering)
def order_queue(moment: PassMoment, config: PassConfig, jobs: PassJobs, queues: PassQueues) -> None:
    """Sort ``queues.queue[:queued]`` into priority order and, when the backfill scan has its
    own policy, ``queues.scan[:queued]`` into scan order (ties: the job's index)."""
    qn = moment.queued
    compute_order_keys(queues.queue, qn, moment.now, config.order, config, jobs, queues.group, queues.key)
    sort_queue(queues.queue, queues.group, queues.key, qn)
    if config.mode != MODE_CONSERVATIVE and not config.same_scan:
        compute_order_keys(
            queues.scan, qn, moment.now, config.scan, config, jobs, queues.scan_group, queues.scan_key
        )
        sort_queue(queues.scan, queues.scan_group, queues.scan_key, qn)


@njit(cache=True, _nrt=False)
def scheduling_pass(
    moment: PassMoment,
    config: PassConfig,
    jobs: PassJobs,
    state: PassState,
    queues: PassQueues,
    running: RunningSet,
    out: PassOut,
    nodes: NodeView,
) -> PassResult:
    """One pass over the queue ``queues.queue[:moment.queued]`` (any order on entry; sorted
    on exit). Writes starts, skips and new reservations to ``out``; updates ``state``: one
    more skip per skipped job, standing reservations replaced by this pass's (conservative),
    first promised starts (conservative reservations and the EASY head's shadow time).

    With nodes (``nodes.pool.count > 0``) fits, shadow times and reservations are computed
    on them and each start's nodes are written to ``nodes.placed``; without, on processor
    counts (``running`` rows are then aligned with ``nodes.held`` rows)."""
    if nodes.pool.count == 0:
        return counts_pass(moment, config, jobs, state, queues, running, out)
    order_queue(moment, config, jobs, queues)
    if config.mode == MODE_CONSERVATIVE:
        ns, nk, nr = _conservative_on_nodes(moment, config, jobs, state, queues, running, out, nodes)
        return _settle(moment, config, state, queues, out, PassResult(ns, nk, nr, -1, INF, 0))
    if nodes.table.shape[1] == 0:  # the live path keeps no placement table
        ns, nk, head, shadow, extra = _easy_with_table(
            moment, config, jobs, state, queues, running, out, nodes
        )
    else:
        ns, nk, head, shadow, extra = easy_nodes_pass(
            moment, config, jobs, state, queues, running, out, nodes
        )
    return _settle(moment, config, state, queues, out, PassResult(ns, nk, 0, head, shadow, extra))


@njit(cache=True, _nrt=True)  # it allocates
def _conservative_on_nodes(
    moment: PassMoment,
    config: PassConfig,
    jobs: PassJobs,
    state: PassState,
    queues: PassQueues,
    running: RunningSet,
    out: PassOut,
    nodes: NodeView,
) -> tuple[int, int, int]:
    return conservative_nodes_pass(moment, config, jobs, state, queues, running, out, nodes)


@njit(cache=True, _nrt=True)  # it allocates placement's table
def _easy_with_table(
    moment: PassMoment,
    config: PassConfig,
    jobs: PassJobs,
    state: PassState,
    queues: PassQueues,
    running: RunningSet,
    out: PassOut,
    nodes: NodeView,
) -> tuple[int, int, int, float, int]:
    """:func:`rush.core.easy_nodes.easy_nodes_pass` on a view without placement's table (the
    simulator keeps one per replay; the live path builds it here)."""
    table = node_table(nodes.pool)
    view = NodeView(
        nodes.pool, nodes.request, nodes.held, nodes.placement, nodes.placed, nodes.reserved, table
    )
    return easy_nodes_pass(moment, config, jobs, state, queues, running, out, view)


@njit(cache=True, _nrt=False)  # EASY allocates nothing; conservative counts in its own call
def counts_pass(
    moment: PassMoment,
    config: PassConfig,
    jobs: PassJobs,
    state: PassState,
    queues: PassQueues,
    running: RunningSet,
    out: PassOut,
) -> PassResult:
    """:func:`scheduling_pass` on processor counts (a cluster without nodes). The simulator
    calls it directly on such traces: a node view passed at every event costs a
    reference-count update per array, measurable over a whole trace. Compiled without numba's
    runtime as the node pass is: with it, counting references on the 35 arrays of its arguments
    at every call and callee was three quarters of the SDSC-SP2 replay (issue 31)."""
    order_queue(moment, config, jobs, queues)
    if config.mode == MODE_CONSERVATIVE:
        ns, nk, nr = _conservative_on_counts(moment, config, jobs, state, queues, running, out)
        return _settle(moment, config, state, queues, out, PassResult(ns, nk, nr, -1, INF, 0))
    ns, nk, head, shadow, extra = easy_pass(moment, config, jobs, state, queues, running, out)
    return _settle(moment, config, state, queues, out, PassResult(ns, nk, 0, head, shadow, extra))


@njit(cache=True, _nrt=True)  # it allocates
def _conservative_on_counts(
    moment: PassMoment,
    config: PassConfig,
    jobs: PassJobs,
    state: PassState,
    queues: PassQueues,
    running: RunningSet,
    out: PassOut,
) -> tuple[int, int, int]:
    return conservative_pass(moment, config, jobs, state, queues, running, out)


@njit(cache=True, inline="always")
def _settle(
    moment: PassMoment,
    config: PassConfig,
    state: PassState,
    queues: PassQueues,
    out: PassOut,
    result: PassResult,
) -> PassResult:
    """Carry the pass into ``state``: standing reservations replaced by this pass's
    (conservative), first promised starts, one more skip per skipped job when the pass counts
    skips (``moment.counts_skips``)."""
    if config.mode == MODE_CONSERVATIVE:
        for k in range(moment.queued):
            state.reserved_at[queues.queue[k]] = INF
        for k in range(result.reserved):
            j = out.reserved[k]
            state.reserved_at[j] = out.reserved_at[k]
            if state.first_reservation[j] == INF:
                state.first_reservation[j] = out.reserved_at[k]
    elif result.head >= 0 and config.mode == MODE_EASY and state.first_reservation[result.head] == INF:
        state.first_reservation[result.head] = result.shadow
    if moment.counts_skips:  # only an RJMS-event pass counts (rush.core.skip_with_limit)
        for k in range(result.skipped):
            state.skips[out.skip[k]] += 1
    return result


@njit(cache=True, _nrt=False)  # once per pass that starts a job: no reference counts
def drop_started(queues: PassQueues, queued: int, started: np.ndarray, same_scan: bool) -> int:
    """Remove the jobs marked in ``started`` from both queues, keeping their order; return the
    new queue length."""
    m = 0
    for k in range(queued):
        j = queues.queue[k]
        if not started[j]:
            queues.queue[m] = j
            queues.group[m] = queues.group[k]
            queues.key[m] = queues.key[k]
            m += 1
    if same_scan:
        for k in range(m):
            queues.scan[k] = queues.queue[k]
    else:
        m2 = 0
        for k in range(queued):
            j = queues.scan[k]
            if not started[j]:
                queues.scan[m2] = j
                queues.scan_group[m2] = queues.scan_group[k]
                queues.scan_key[m2] = queues.scan_key[k]
                m2 += 1
    return m
