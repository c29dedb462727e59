"""EASY backfilling and list scheduling on nodes: :mod:`rush.core.easy` with fits, shadow
time and reservations computed on the nodes instead of a processor count.

1. Start jobs in priority order while they can be placed (:func:`rush.core.node_pool.place`).
2. The first that cannot (the head) gets a reservation: the running and just-started jobs
   give their nodes back in order of estimated end until the head can be placed; that end is
   the shadow time. Its reservation takes nodes busy now first, so as few free nodes as
   possible are *blocked* (held for the head).
3. Backfill in scan order: a job that ends by the shadow time may use any free resource and
   takes blocked ones first; a longer one only what is free now and not blocked.

On one-core nodes with processor requests this is exactly :func:`rush.core.easy.easy_pass`
(blocked processors are the complement of Mu'alem & Feitelson's "extra" processors), which
tests/core/test_node_pass.py checks job by job. Skip-with-limit applies to a job the pass
would start now; with variability-aware placement a flagged job is first tried on quiet
nodes only, and started there rather than skipped.

**The pod wait** (variability placement on a machine with pods, :mod:`rush.core.node_pool`). A
flagged job below its skip limit that only a placement across pods holds (a full machine's free
nodes scattered over the pods) is not skipped: its wait is for room in one pod, not for quiet,
and a skip counted for it would spend the limit on the machine's state, not the noise's (a
skip is of a job the pass would start now, :mod:`rush.core.skip_with_limit`). It is treated as a job that
does not fit: met in priority order it is EASY's head, and its reservation (as any flagged
head's below its limit) lies inside one pod (its shadow time is the first estimated end at which
one pod holds it; best fit among pods, nodes busy now first), so backfill takes that pod's
reserved nodes only with jobs that end by then; met in the backfill scan it is passed over.
The head's reservation bounds the wait, as EASY's does for any head: at the shadow time the pod
has the room, and the job then starts on quiet leaves, or is skipped and counted as before, and
at its limit starts in that pod.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rush.core.node_pool import (
    BLOCKED_C,
    BLOCKED_G,
    CAP_C,
    CAP_G,
    ELIGIBLE,
    FREE_C,
    FREE_G,
    LEAF,
    LEAF_POD,
    LONG_C,
    LONG_G,
    META,
    NO_PREFER,
    PARTS,
    PLACE_FIRST_FIT,
    PLACE_VARIABILITY,
    PREFER_BLOCKED,
    PREFER_RESERVE,
    SHADOW_C,
    SHADOW_G,
    USABLE,
    NodeView,
    Room,
    Slots,
    holds_in_one_pod,
    job_ask,
    node_table,
    place_in,
)
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
from rush.core.sorted_ends import sort_ends as _sort_ends  # tests/core/test_node_pass_sort.py's name
from rush.core.starved_head import on_limits, reserved_on_limits

INF = np.inf
NO_FIT = -1
SKIPPED = -2


@njit(cache=True, _nrt=False)  # no reference counts: see rush.core.node_pool
def decide_in(
    table: np.ndarray,
    ask: tuple[int, int, int, int, int],
    need: int,
    room: Room,
    skip_now: bool,
    placement: int,
    placed: Slots,
    k0: int,
) -> int:
    """Place a job (``ask``) on ``room`` (slots of ``placed`` from ``k0``): the slot count,
    ``NO_FIT``, or ``SKIPPED`` when it fits but skip-with-limit delays it. A flagged job under
    variability-aware placement tries quiet nodes first and starts there if it can. Takes the
    pool's table, not the NodeView: see rush.core.node_pool on reference counts."""
    if skip_now and placement == PLACE_VARIABILITY:
        quiet = Room(room.cores, room.gpus, room.prefer, True)
        count = place_in(table, ask, need, quiet, PLACE_VARIABILITY, placed, k0)
        if count >= 0:
            return count
    count = place_in(table, ask, need, room, placement, placed, k0)
    if count < 0:
        return NO_FIT
    return SKIPPED if skip_now else count


@njit(cache=True)
def _decide(nodes: NodeView, j: int, need: int, room: Room, skip_now: bool, k0: int) -> int:
    """:func:`decide_in` for job j on ``nodes`` (one-off calls; passes build the table once)."""
    table = node_table(nodes.pool)
    return decide_in(
        table, job_ask(nodes.request, j), need, room, skip_now, nodes.placement, nodes.placed, k0
    )


@njit(cache=True, inline="always")
def _node_units(
    c: int, g: int, cap_c: int, cap_g: int, nodes: int, exclusive: int, c_need: int, g_need: int
) -> int:
    """Units a node with ``c`` cores and ``g`` GPUs free offers a job: the rule of
    :func:`rush.core.node_pool.fits_in` on one eligible node (scalars: no reference counts)."""
    if nodes == 0:
        return max(c, 0)
    if exclusive:
        return 1 if c == cap_c and g == cap_g else 0
    return 1 if c >= c_need and g >= g_need else 0


@njit(cache=True, _nrt=True)  # allocates (the pod wait's per-pod units): counts references
def node_shadow_time(
    now: float,
    table: np.ndarray,
    allocations: tuple[Slots, Slots],
    ask: tuple[int, int, int, int, int],
    bounds: tuple[int, int],
    running: RunningSet,
    started: RunningSet,
    in_one_pod: bool = False,
) -> float:
    """Shadow time of the head (``ask``; ``bounds``: the units it needs and the cores it
    needs at least), from the free cores and GPUs per node now, after this pass's starts
    (the table's ``FREE_C`` / ``FREE_G`` rows); leaves those free at the shadow time in its
    ``SHADOW_C`` / ``SHADOW_G`` rows. ``allocations``: (``held``, ``placed``); with nodes a
    :class:`RunningSet`'s ``procs`` are allocation rows: of ``held`` for ``running``, of
    ``placed`` for ``started``. ``in_one_pod``: the first time one pod holds it (a flagged
    head waiting for room in one pod)."""
    # Allocations are read from locals and given back in place: a helper per job took
    # reference counts at every call.
    h_off, h_node, h_c, h_g = allocations[0]
    p_off, p_node, p_c, p_g = allocations[1]
    run_end, run_row, new_end, new_row = running.end, running.procs, started.end, started.procs
    need, lower = bounds
    p, r_nodes, exclusive, c_need, g_need = ask
    free_c, free_g = table[SHADOW_C], table[SHADOW_G]
    eligible = table[ELIGIBLE]
    # The units the room offers the head (fits_in's count), kept up to date node by node as
    # jobs give theirs back: a fits_in per released job scanned every node (issue 31).
    units = 0
    released = 0
    # Units per pod, for a head that must lie inside one pod.
    pod_units = np.zeros(table[META, 2] if in_one_pod else 1, dtype=np.int64)
    for node in range(table[META, 0]):
        c, g = table[FREE_C, node], table[FREE_G, node]
        free_c[node] = c
        free_g[node] = g
        up = table[USABLE, node] != 0
        if up:
            released += c
        eligible[node] = 1 if up and (p < 0 or ((table[PARTS, node] >> p) & 1) == 1) else 0
        if eligible[node]:
            u = _node_units(c, g, table[CAP_C, node], table[CAP_G, node], r_nodes, exclusive, c_need, g_need)
            units += u
            if in_one_pod:
                pod_units[table[LEAF_POD, table[LEAF, node]]] += u
    a = 0
    b = 0
    shadow = INF
    rn, sn = running.count, started.count
    # Ends in time order; once the head fits, everything else that ends at the shadow time
    # is given back too (it is free then).
    while a < rn or b < sn:
        # The next end, of a running job (rows of held) or of one started in this pass (rows
        # of placed); both give their allocation back by the loop below.
        of_running = b >= sn or (a < rn and run_end[a] <= new_end[b])
        e = run_end[a] if of_running else new_end[b]
        if e > shadow:
            break
        if of_running:
            lo, hi = h_off[run_row[a]], h_off[run_row[a] + 1]
            a += 1
        else:
            lo, hi = p_off[new_row[b]], p_off[new_row[b] + 1]
            b += 1
        for k in range(lo, hi):
            node = h_node[k] if of_running else p_node[k]
            back_c = h_c[k] if of_running else p_c[k]
            back_g = h_g[k] if of_running else p_g[k]
            cap_c, cap_g = table[CAP_C, node], table[CAP_G, node]
            before = 0
            if eligible[node]:
                before = _node_units(
                    free_c[node], free_g[node], cap_c, cap_g, r_nodes, exclusive, c_need, g_need
                )
            free_c[node] += back_c
            free_g[node] += back_g
            released += back_c
            if eligible[node]:
                u = _node_units(free_c[node], free_g[node], cap_c, cap_g, r_nodes, exclusive, c_need, g_need)
                units += u - before
                if in_one_pod:
                    pod_units[table[LEAF_POD, table[LEAF, node]]] += u - before
        if shadow == INF and released >= lower and (need <= 0 or units >= need):
            if not in_one_pod or pod_units.max() >= need:
                shadow = e
    if shadow < now:
        shadow = now
    return shadow


@njit(cache=True, _nrt=False)  # no reference counts: see rush.core.node_pool
def _reserve_head(
    table: np.ndarray, ask: tuple[int, int, int, int, int], need: int, reserved: Slots, in_one_pod: bool
) -> None:
    """Place the head (``ask``, ``need`` units) at the shadow time (the table's ``SHADOW_C`` /
    ``SHADOW_G`` rows), on nodes busy now first, as ``reserved`` row 0; writes the cores and
    GPUs per node it blocks now (its reservation minus what is released by then) to the
    ``BLOCKED_C`` / ``BLOCKED_G`` rows. ``in_one_pod``: inside one pod (best fit), by
    variability placement's pod rule."""
    m = table[META, 0]
    _, nodes, exclusive, c_need, g_need = ask
    kind = 0 if nodes == 0 else (1 if exclusive else 2)
    free_c, free_g = table[FREE_C], table[FREE_G]
    shadow_c, shadow_g = table[SHADOW_C], table[SHADOW_G]
    blocked_c, blocked_g = table[BLOCKED_C], table[BLOCKED_G]
    prefer = table[PREFER_RESERVE]
    for node in range(m):
        rel_c = shadow_c[node] - free_c[node]
        rel_g = shadow_g[node] - free_g[node]
        if kind == 0:
            busy = rel_c > 0
        elif kind == 1:
            busy = free_c[node] == 0 and free_g[node] == 0
        else:
            busy = rel_c >= c_need and rel_g >= g_need
        prefer[node] = 1 if busy else 0
        blocked_c[node] = 0
        blocked_g[node] = 0
    room = Room(shadow_c, shadow_g, prefer, False)
    policy = PLACE_VARIABILITY if in_one_pod else PLACE_FIRST_FIT
    count = place_in(table, ask, need, room, policy, reserved, 0)
    r_off, r_node, r_c, r_g = reserved
    r_off[1] = max(count, 0)
    for k in range(max(count, 0)):
        node = r_node[k]
        blocked_c[node] += max(r_c[k] - (shadow_c[node] - free_c[node]), 0)
        blocked_g[node] += max(r_g[k] - (shadow_g[node] - free_g[node]), 0)
    for node in range(m):
        blocked_c[node] = min(blocked_c[node], free_c[node])
        blocked_g[node] = min(blocked_g[node], free_g[node])


@njit(cache=True, _nrt=False)  # no reference counts on its 63 arrays: see rush.core.node_pool
def easy_nodes_pass(
    moment: PassMoment,
    config: PassConfig,
    jobs: PassJobs,
    state: PassState,
    queues: PassQueues,
    running: RunningSet,
    out: PassOut,
    nodes: NodeView,
) -> tuple[int, int, int, float, int]:
    """EASY (``config.mode`` easy) or list scheduling on nodes; returns (n_started, n_skipped,
    head, shadow, extra) as :func:`rush.core.easy.easy_pass`, ``extra`` being the cores free
    now outside the head's reservation. Start i's nodes are ``nodes.placed`` row i; the head's
    reservation is ``nodes.reserved`` row 0. ``nodes.table`` must be the pool's
    :func:`rush.core.node_pool.node_table` (:func:`rush.core.scheduling_pass.scheduling_pass`
    builds it when the caller keeps none): compiled without numba's runtime, the pass allocates
    nothing; its scratch is the table's rows, and ``out.reserved`` / ``out.reserved_at``
    (conservative's, unused by EASY) for the estimated ends of this pass's starts."""
    pool = nodes.pool
    m = pool.count
    now = moment.now
    procs = jobs.procs
    table = nodes.table
    free_c, free_g = table[FREE_C], table[FREE_G]
    pool_c, pool_g = pool.free_cores, pool.free_gpus
    # Arrays held in locals for the loops (see rush.core.node_pool).
    usable, cap_c, cap_g = pool.usable, pool.cores, pool.gpus
    # Idle usable nodes now (exclusive requests' bound), counted in the sweep that copies the
    # free counts (a sweep of its own cost a pass as much), then kept up to date start by start.
    idle_now = 0
    for node in range(m):
        c, g = pool_c[node], pool_g[node]
        free_c[node] = c
        free_g[node] = g
        idle_now += 1 if usable[node] and c == cap_c[node] and g == cap_g[node] else 0
    no_prefer = table[NO_PREFER]
    free_room = Room(free_c, free_g, no_prefer, False)
    placed = nodes.placed
    placed_off, placed_node, placed_c, placed_g = placed
    placement = nodes.placement
    queue, taken, est = queues.queue, queues.taken, jobs.est
    sensitive, skips, out_start, out_backfilled = jobs.sensitive, state.skips, out.start, out.backfilled
    variable_now, skip_limit = moment.variable_now, config.skip_limit
    # Variability placement on a machine with pods: a flagged job waits for room in one pod.
    pod_rule = placement == PLACE_VARIABILITY and table[META, 2] > 1
    head_in_pod = False
    nodes.placed.offset[0] = 0
    nodes.reserved.offset[1] = 0
    free_total = moment.free
    request = nodes.request
    r_nodes, r_cores, r_exclusive = request.nodes, request.cores, request.exclusive
    r_gpus, r_partition = request.gpus, request.partition
    ns = 0
    nk = 0
    head = -1
    for k in range(moment.queued):
        j = queue[k]
        need = procs[j] if r_nodes[j] == 0 else r_nodes[j]
        skip_now = should_skip(sensitive[j] and variable_now, skips[j], skip_limit)
        # An O(1) bound spares the O(nodes) placement for most jobs of a long queue.
        if r_nodes[j] == 0:
            no_hope = need > free_total
        elif r_exclusive[j]:
            no_hope = need > idle_now
        else:
            no_hope = need * r_cores[j] > free_total
        ask = (r_partition[j], r_nodes[j], 1 if r_exclusive[j] else 0, r_cores[j], r_gpus[j])
        if no_hope:
            count = NO_FIT
        else:
            count = decide_in(table, ask, need, free_room, skip_now, placement, placed, placed_off[ns])
        if count == SKIPPED and pod_rule and not holds_in_one_pod(table, ask, need, free_room):
            # Only a placement across pods holds it: it waits for room in one pod (no skip), as
            # a job that does not fit, and as EASY's head it gets that room reserved.
            count = NO_FIT
        if count == NO_FIT:
            head = j
            head_in_pod = pod_rule and skip_now
            break
        taken[j] = True
        if count == SKIPPED:
            out.skip[nk] = j
            nk += 1
            continue
        out_start[ns] = j
        out_backfilled[ns] = False
        placed_off[ns + 1] = placed_off[ns] + count
        ns += 1
        for e in range(placed_off[ns - 1], placed_off[ns]):
            node = placed_node[e]
            # The idle test is written out: a helper taking the capacity arrays costs reference
            # counts per node (LLNL-Atlas: 40 % of the replay).
            if usable[node] and free_c[node] == cap_c[node]:
                idle_now -= 1 if free_g[node] == cap_g[node] else 0
            free_c[node] -= placed_c[e]
            free_g[node] -= placed_g[e]
            free_total -= placed_c[e]
            if usable[node] and free_c[node] == cap_c[node]:
                idle_now += 1 if free_g[node] == cap_g[node] else 0
    shadow = INF
    extra = 0
    if head >= 0 and config.mode == MODE_EASY:
        # A starved head is reserved on limits (rush.core.starved_head).
        starved = reserved_on_limits(config, jobs, head, now)
        if starved:
            est = jobs.limit
            running = on_limits(running)
        new_end, new_rows = out.reserved_at, out.reserved
        for k in range(ns):
            new_end[k] = now + est[out.start[k]]
            new_rows[k] = k
        _sort_ends(new_end, new_rows, ns)
        need = procs[head] if r_nodes[head] == 0 else r_nodes[head]
        lower = need if r_nodes[head] == 0 else need * r_cores[head]  # cores at least
        ask = (r_partition[head], r_nodes[head], 1 if r_exclusive[head] else 0, r_cores[head], r_gpus[head])
        started = RunningSet(new_end, new_rows, ns, new_end, new_rows)
        shadow = node_shadow_time(
            now, table, (nodes.held, placed), ask, (need, lower), running, started, head_in_pod
        )
        blocked_c, blocked_g = table[BLOCKED_C], table[BLOCKED_G]
        if shadow < INF:
            _reserve_head(table, ask, need, nodes.reserved, head_in_pod)
        else:
            for node in range(m):
                blocked_c[node] = 0
                blocked_g[node] = 0
        # Free outside the head's reservation (long jobs' room), its cores on up nodes and
        # its idle nodes, in one sweep.
        long_c, long_g = table[LONG_C], table[LONG_G]
        prefer_blocked = table[PREFER_BLOCKED]
        idle_long = 0
        for node in range(m):
            lc = free_c[node] - blocked_c[node]
            lg = free_g[node] - blocked_g[node]
            long_c[node] = lc
            long_g[node] = lg
            prefer_blocked[node] = 1 if blocked_c[node] > 0 or blocked_g[node] > 0 else 0
            if usable[node]:
                extra += max(lc, 0)
                if lc == cap_c[node] and lg == cap_g[node]:
                    idle_long += 1
        short_room = Room(free_c, free_g, prefer_blocked, False)
        long_room = Room(long_c, long_g, no_prefer, False)
        taken[head] = True
        scan = queue if config.same_scan else queues.scan
        for k in range(moment.queued):
            if free_total <= 0:
                break
            j = scan[k]
            if taken[j]:
                continue
            # O(1) bounds before the O(nodes) placement: cores, and idle nodes for exclusive jobs.
            need = procs[j] if r_nodes[j] == 0 else r_nodes[j]
            ends_in_time = now + est[j] <= shadow
            cores_bound = need if r_nodes[j] == 0 else need * r_cores[j]
            if cores_bound > (free_total if ends_in_time else extra):
                continue
            if r_nodes[j] > 0 and r_exclusive[j]:
                if need > (idle_now if ends_in_time else idle_long):
                    continue
            skip_now = should_skip(sensitive[j] and variable_now, skips[j], skip_limit)
            room = short_room if ends_in_time else long_room
            ask = (r_partition[j], r_nodes[j], 1 if r_exclusive[j] else 0, r_cores[j], r_gpus[j])
            count = decide_in(table, ask, need, room, skip_now, placement, placed, placed_off[ns])
            if count == NO_FIT:
                continue
            if count == SKIPPED and pod_rule and not holds_in_one_pod(table, ask, need, room):
                continue  # waits for room in one pod: passed over, no skip
            taken[j] = True
            if count == SKIPPED:
                out.skip[nk] = j
                nk += 1
                continue
            out_start[ns] = j
            out_backfilled[ns] = True
            placed_off[ns + 1] = placed_off[ns] + count
            ns += 1
            for e in range(placed_off[ns - 1], placed_off[ns]):
                node = placed_node[e]
                c = placed_c[e]
                g = placed_g[e]
                up = usable[node]
                if up and free_c[node] == cap_c[node]:
                    idle_now -= 1 if free_g[node] == cap_g[node] else 0
                if up and long_c[node] == cap_c[node] and long_g[node] == cap_g[node]:
                    idle_long -= 1
                long_before = max(long_c[node], 0) if up else 0
                free_c[node] -= c
                free_g[node] -= g
                free_total -= c
                if ends_in_time:
                    # It is gone by the shadow time: it uses the head's blocked resources first.
                    blocked_c[node] -= min(blocked_c[node], c)
                    blocked_g[node] -= min(blocked_g[node], g)
                    prefer_blocked[node] = 1 if blocked_c[node] > 0 or blocked_g[node] > 0 else 0
                    long_c[node] = free_c[node] - blocked_c[node]
                    long_g[node] = free_g[node] - blocked_g[node]
                else:
                    long_c[node] -= c
                    long_g[node] -= g
                # extra: cores free now outside the head's reservation, on up nodes.
                extra += (max(long_c[node], 0) if up else 0) - long_before
                if up and free_c[node] == cap_c[node]:
                    idle_now += 1 if free_g[node] == cap_g[node] else 0
                if up and long_c[node] == cap_c[node] and long_g[node] == cap_g[node]:
                    idle_long += 1
    for k in range(moment.queued):
        taken[queue[k]] = False
    return ns, nk, head, shadow, extra
