"""Nodes in the compiled pass: the pool, each job's request, allocations, and placement.

The pass sees a cluster with nodes as a :class:`NodeView` of arrays (built from
:class:`rush.core.resources.Node` by :func:`rush.core.node_view.node_view`, or by the
simulator). A view with ``pool.count == 0`` means a bag of processors: the pass then runs its
processor-count kernels, bit for bit as before nodes existed.

Placement (:func:`place`) chooses the nodes for one job on given per-node availabilities:

* ``PLACE_FIRST_FIT``: lowest-indexed eligible nodes;
* ``PLACE_TOPOLOGY``: fewest leaf switches: the smallest leaf that holds the whole job (best
  fit), else the leaves with the most room first (Slurm's topology/tree, Flux's TreePool);
* ``PLACE_VARIABILITY``: topology packing, and a job that spans leaves gets them inside one
  pod when one holds it (``pool.leaf_pod``; the links between pods are tapered); for a job the
  variation predictor flags, only quiet nodes (``pool.quiet``) are eligible on a first try,
  inside one pod (the quiet-pod rule); the pass falls back to skip-with-limit when no such
  placement fits, and when only a placement across pods fits (:func:`holds_in_one_pod`) the
  job waits for room in one pod without a skip, with EASY's reservation inside one pod (the pod
  wait, :mod:`rush.core.easy_nodes`).

Within either, nodes marked ``prefer`` go first: EASY uses this so that a backfill job that
ends before the shadow time takes the head's reserved nodes first, and the head's reservation
takes nodes that are busy now first. On one-core nodes this makes node-level EASY exactly the
processor-count EASY of Mu'alem & Feitelson (tests/core/test_node_pass.py checks it).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

PLACE_FIRST_FIT = 0
PLACE_TOPOLOGY = 1
PLACE_VARIABILITY = 2
PLACEMENT_CODES = {"first-fit": PLACE_FIRST_FIT, "topology": PLACE_TOPOLOGY, "variability": PLACE_VARIABILITY}


class NodePool(NamedTuple):
    """The nodes: capacity, what is free now, whether new jobs may use them (up), partition
    membership (bit p of ``partitions`` for partition p), leaf switch, and whether the
    variation predictor sees their leaf as quiet. ``leaf_room`` (one per leaf) and
    ``node_units`` (one per node) are placement's scratch. ``leaf_nodes`` lists the nodes
    leaf by leaf (by index within a leaf), leaf l's from ``leaf_first[l]`` to
    ``leaf_first[l + 1]``: placement on one leaf reads only its nodes (:func:`leaf_index`).
    ``leaf_pod`` groups the leaves into pods, whose links between them are tapered: a flagged
    job's quiet placement stays inside one pod (:func:`place_in`)."""

    cores: np.ndarray
    gpus: np.ndarray
    free_cores: np.ndarray
    free_gpus: np.ndarray
    usable: np.ndarray
    partitions: np.ndarray
    leaf: np.ndarray
    quiet: np.ndarray
    leaf_room: np.ndarray
    node_units: np.ndarray
    count: int
    leaf_nodes: np.ndarray
    leaf_first: np.ndarray
    # The pod (switch group above the leaves) of each leaf; empty: every leaf in one pod.
    leaf_pod: np.ndarray = np.zeros(0, dtype=np.int64)


def leaf_index(leaf: np.ndarray, leaves: int) -> tuple[np.ndarray, np.ndarray]:
    """(``leaf_nodes``, ``leaf_first``) of :class:`NodePool` for nodes on leaf switches ``leaf``
    (values 0 .. ``leaves`` - 1)."""
    order = np.argsort(leaf, kind="stable").astype(np.int64)
    first = np.zeros(leaves + 1, dtype=np.int64)
    np.cumsum(np.bincount(leaf, minlength=leaves), out=first[1:])
    return order, first


class NodeRequests(NamedTuple):
    """Per job: nodes (0: ``cores`` processors anywhere), cores and GPUs per node, exclusive,
    and partition bit index (-1: any node)."""

    nodes: np.ndarray
    cores: np.ndarray
    gpus: np.ndarray
    exclusive: np.ndarray
    partition: np.ndarray


class Slots(NamedTuple):
    """Allocations in compressed rows: item i has entries ``offset[i] .. offset[i+1]``, each a
    node with the cores and GPUs taken on it."""

    offset: np.ndarray
    node: np.ndarray
    cores: np.ndarray
    gpus: np.ndarray


class Room(NamedTuple):
    """Per-node availability a placement is computed on, the nodes it should use first
    (``prefer`` nonzero: int64, a row of the pass's table, or bool), and whether only quiet
    nodes count (variability-aware placement of a flagged job)."""

    cores: np.ndarray
    gpus: np.ndarray
    prefer: np.ndarray
    quiet_only: bool


NO_TABLE = np.zeros((0, 0), dtype=np.int64)


class NodeView(NamedTuple):
    """Everything node-level a pass needs: the pool, requests by job index, the running jobs'
    allocations (rows aligned with the pass's :class:`rush.core.pass_data.RunningSet`), the
    placement policy, and outputs: ``placed`` (one row per start, in start order) and the
    EASY head's reserved nodes (``reserved``: row 0). ``table``: the pool's
    :func:`node_table` when the caller keeps one across passes (the simulator), else empty
    and a pass builds it."""

    pool: NodePool
    request: NodeRequests
    held: Slots
    placement: int
    placed: Slots
    reserved: Slots
    table: np.ndarray = NO_TABLE


@njit(cache=True)
def new_slots(rows: int, entries: int) -> Slots:
    offset = np.zeros(rows + 1, dtype=np.int64)
    return Slots(
        offset,
        np.empty(entries, dtype=np.int64),
        np.empty(entries, dtype=np.int64),
        np.empty(entries, dtype=np.int64),
    )


@njit(cache=True, inline="always")
def need_units(request: NodeRequests, j: int, procs: int) -> int:
    return procs if request.nodes[j] == 0 else request.nodes[j]


# Hot loops read arrays held in locals: taking an array out of a named tuple inside a loop
# costs numba a reference-count update each time (measured: 60 ns a node, 20x the work).
# Across calls too: a jitted call counts a reference per array in its arguments on entry and
# exit, so a NodePool (12 arrays) and NodeRequests (5) passed per placement made reference
# counting 70 % of the node replay (issue 31). Placement therefore reads the pool from one
# 2-D table (:func:`node_table`, built once per pass) and the job's request as a tuple of
# integers (:func:`job_ask`): a placement counts the table, the room and the output only.

# The placement kernels that allocate nothing are compiled without numba's runtime
# (``_nrt=False``): they then take no reference count at all, neither on the arrays they are
# passed nor on the rows they read, and a pass places a job for every start (issue 31: reference
# counting was 29 % of the LLNL-Atlas node replay). A function they call inherits the setting
# unless it says otherwise: one that allocates (``_one_pod``) says ``_nrt=True``. Such a
# function must not return an array: its caller would release a reference it never took.

CAP_C, CAP_G, USABLE, PARTS, LEAF, QUIET, UNITS, LEAF_ROOM, LEAF_FIRST, LEAF_NODES, LEAF_POD, META = range(12)
# Scratch rows of the EASY pass on nodes (rush.core.easy_nodes), per node: kept in the table so
# that a pass allocates no node-length array (the simulator keeps one table per replay).
# ``NO_PREFER`` is never written: all zeros, the ``prefer`` of a room without preferred nodes.
(
    FREE_C, FREE_G, SHADOW_C, SHADOW_G, BLOCKED_C, BLOCKED_G, LONG_C, LONG_G,
    ELIGIBLE, NO_PREFER, PREFER_BLOCKED, PREFER_RESERVE,
) = range(12, 24)  # fmt: skip
TABLE_ROWS = 24


@njit(cache=True)
def node_table(pool: NodePool) -> np.ndarray:
    """The pool as one int64 table for placement: rows ``CAP_C`` .. ``QUIET`` per node,
    ``UNITS`` (scratch per node), ``LEAF_ROOM`` (scratch per leaf), ``LEAF_FIRST`` and
    ``LEAF_NODES`` (:func:`leaf_index`), ``LEAF_POD`` (each leaf's pod), ``META``: (node
    count, leaf count, pod count), then the EASY pass's scratch rows (``FREE_C`` ..
    ``PREFER_RESERVE``)."""
    m = pool.count
    leaves = pool.leaf_room.shape[0]
    table = np.zeros((TABLE_ROWS, max(m, leaves + 1, 3)), dtype=np.int64)
    cores, gpus, usable, parts = pool.cores, pool.gpus, pool.usable, pool.partitions
    leaf, quiet, order, first = pool.leaf, pool.quiet, pool.leaf_nodes, pool.leaf_first
    for i in range(m):
        table[CAP_C, i] = cores[i]
        table[CAP_G, i] = gpus[i]
        table[USABLE, i] = usable[i]
        table[PARTS, i] = parts[i]
        table[LEAF, i] = leaf[i]
        table[QUIET, i] = quiet[i]
        table[LEAF_NODES, i] = order[i]
    for x in range(leaves + 1):
        table[LEAF_FIRST, x] = first[x]
    pods = 1
    leaf_pod = pool.leaf_pod
    if leaf_pod.shape[0] == leaves:
        for x in range(leaves):
            table[LEAF_POD, x] = leaf_pod[x]
            pods = max(pods, leaf_pod[x] + 1)
    table[META, 0] = m
    table[META, 1] = leaves
    table[META, 2] = pods
    return table


@njit(cache=True, inline="always")
def job_ask(request: NodeRequests, j: int) -> tuple[int, int, int, int, int]:
    """Job j's request as integers: (partition bit or -1, nodes, exclusive, cores and GPUs
    per node)."""
    return (
        request.partition[j],
        request.nodes[j],
        1 if request.exclusive[j] else 0,
        request.cores[j],
        request.gpus[j],
    )


@njit(cache=True, _nrt=False)
def _units(
    table: np.ndarray, ask: tuple[int, int, int, int, int], room: Room, by_leaf: bool
) -> tuple[int, int]:
    """Fill the table's ``UNITS`` row with what each node offers the job on ``room`` (cores
    for a processor request, else 1 if it can hold one of the job's nodes); return the total
    and the part on preferred nodes; with ``by_leaf``, also each leaf's share in ``LEAF_ROOM``."""
    room_c, room_g, prefer, quiet_only = room.cores, room.gpus, room.prefer, room.quiet_only
    p, nodes, exclusive, c_need, g_need = ask
    m = table[META, 0]
    total = 0
    preferred = 0
    if p < 0 and not quiet_only and nodes == 0:
        # The common cases get a loop without the per-node tests they do not need.
        for i in range(m):
            u = max(room_c[i], 0) if table[USABLE, i] else 0
            table[UNITS, i] = u
            total += u
            preferred += u if prefer[i] else 0
    elif p < 0 and not quiet_only and exclusive:
        for i in range(m):
            u = 1 if table[USABLE, i] and room_c[i] == table[CAP_C, i] and room_g[i] == table[CAP_G, i] else 0
            table[UNITS, i] = u
            total += u
            preferred += u if prefer[i] else 0
    else:
        for i in range(m):
            u = 0
            if (
                table[USABLE, i]
                and (p < 0 or ((table[PARTS, i] >> p) & 1) == 1)
                and not (quiet_only and not table[QUIET, i])
            ):
                if nodes == 0:
                    u = max(room_c[i], 0)
                elif exclusive:
                    u = 1 if room_c[i] == table[CAP_C, i] and room_g[i] == table[CAP_G, i] else 0
                else:
                    u = 1 if room_c[i] >= c_need and room_g[i] >= g_need else 0
            table[UNITS, i] = u
            total += u
            preferred += u if prefer[i] else 0
    if by_leaf:
        leaves = table[META, 1]
        for x in range(leaves):
            table[LEAF_ROOM, x] = 0
        if leaves == 1:
            table[LEAF_ROOM, 0] = total
        elif m > 0:
            # Summed in a register while the leaf stays the same (nodes are mostly numbered leaf
            # by leaf): adding to LEAF_ROOM node by node waited on its own store every node.
            leaf, share = table[LEAF, 0], 0
            for i in range(m):
                if table[LEAF, i] != leaf:
                    table[LEAF_ROOM, leaf] += share
                    leaf, share = table[LEAF, i], 0
                share += table[UNITS, i]
            table[LEAF_ROOM, leaf] += share
    return total, preferred


@njit(cache=True, _nrt=False)
def fits_in(table: np.ndarray, ask: tuple[int, int, int, int, int], need: int, room: Room) -> bool:
    """Whether :func:`place_in` would place the job (``need`` units) on ``room``: every
    policy takes units until it has ``need``, so it fits exactly when the room offers that
    many (counted by :func:`_units`' rule, stopping as soon as there are enough)."""
    if need <= 0:
        return True
    room_c, room_g, quiet_only = room.cores, room.gpus, room.quiet_only
    p, nodes, exclusive, c_need, g_need = ask
    total = 0
    for i in range(table[META, 0]):
        if (
            table[USABLE, i]
            and (p < 0 or ((table[PARTS, i] >> p) & 1) == 1)
            and not (quiet_only and not table[QUIET, i])
        ):
            if nodes == 0:
                total += max(room_c[i], 0)
            elif exclusive:
                total += 1 if room_c[i] == table[CAP_C, i] and room_g[i] == table[CAP_G, i] else 0
            else:
                total += 1 if room_c[i] >= c_need and room_g[i] >= g_need else 0
            if total >= need:
                return True
    return False


@njit(cache=True)
def fits(pool: NodePool, request: NodeRequests, j: int, need: int, room: Room) -> bool:
    """:func:`fits_in` on a pool and job j (one-off calls; passes build the table once)."""
    return fits_in(node_table(pool), job_ask(request, j), need, room)


@njit(cache=True, _nrt=False)
def _fill(
    table: np.ndarray,
    ask: tuple[int, int, int, int, int],
    wanted: tuple[int, int],
    prefer: np.ndarray,
    leaf: int,
    out: Slots,
    k0: int,
) -> tuple[int, int]:
    """Take units for the job from the nodes :func:`_units` found eligible (of ``leaf``, or
    any when -1), preferred ones first, then by index; returns (units still needed, next
    entry). ``wanted``: (units needed, units on preferred nodes anywhere: the first round
    stops after them)."""
    need, preferred = wanted
    out_node, out_c, out_g = out.node, out.cores, out.gpus
    _, nodes, exclusive, c_need, g_need = ask
    lo, hi = 0, table[META, 0]
    if leaf >= 0:  # only that leaf's nodes, in index order
        lo, hi = table[LEAF_FIRST, leaf], table[LEAF_FIRST, leaf + 1]
    k = k0
    for phase in range(2):
        want_prefer = phase == 0
        if want_prefer and preferred <= 0:
            continue
        seen = 0
        for x in range(lo, hi):
            if need <= 0:
                return need, k
            i = table[LEAF_NODES, x] if leaf >= 0 else x
            units = table[UNITS, i]
            if units <= 0 or (prefer[i] != 0) != want_prefer:
                continue
            seen += units
            out_node[k] = i
            if nodes == 0:
                c = min(units, need)
                out_c[k] = c
                out_g[k] = 0
                need -= c
            else:
                out_c[k] = table[CAP_C, i] if exclusive else c_need
                out_g[k] = table[CAP_G, i] if exclusive else g_need
                need -= 1
            k += 1
            if want_prefer and seen >= preferred:
                break  # no preferred unit is left on any node
    return need, k


@njit(cache=True, _nrt=True)  # it allocates: not inherited from place_in's _nrt=False
def _one_pod(table: np.ndarray, need: int) -> bool:
    """The pod rule of variability placement: a job that spans leaves gets the leaves of one
    pod, the pod with the least room (quiet room on a flagged job's quiet try) that holds it
    (best fit, as leaves are chosen); the other pods' leaves get no room in ``LEAF_ROOM``.
    False (nothing changed) when no one pod holds it."""
    leaves, pods = table[META, 1], table[META, 2]
    pod_room = np.zeros(pods, dtype=np.int64)
    for leaf in range(leaves):
        pod_room[table[LEAF_POD, leaf]] += table[LEAF_ROOM, leaf]
    best = -1
    for pod in range(pods):
        if pod_room[pod] >= need and (best < 0 or pod_room[pod] < pod_room[best]):
            best = pod
    if best < 0:
        return False
    for leaf in range(leaves):
        if table[LEAF_POD, leaf] != best:
            table[LEAF_ROOM, leaf] = 0
    return True


@njit(cache=True, _nrt=True)  # allocates (pod_room): counts references
def holds_in_one_pod(table: np.ndarray, ask: tuple[int, int, int, int, int], need: int, room: Room) -> bool:
    """Whether one pod (or the machine, when it has one) holds the job (``need`` units) on
    ``room``: a flagged job that only a placement across pods holds waits for room in one pod
    (:mod:`rush.core.easy_nodes`), not for quiet."""
    total, _ = _units(table, ask, room, True)
    if table[META, 2] <= 1:
        return total >= need
    pod_room = np.zeros(table[META, 2], dtype=np.int64)
    for leaf in range(table[META, 1]):
        pod_room[table[LEAF_POD, leaf]] += table[LEAF_ROOM, leaf]
    for pod in range(table[META, 2]):
        if pod_room[pod] >= need:
            return True
    return False


@njit(cache=True, _nrt=False)
def place_in(
    table: np.ndarray,
    ask: tuple[int, int, int, int, int],
    need: int,
    room: Room,
    policy: int,
    out: Slots,
    k0: int,
) -> int:
    """Place a job (``ask``: :func:`job_ask`; ``need`` units: nodes, or cores for a processor
    request) on ``room`` over the pool's :func:`node_table`: write its slots from entry ``k0``
    of ``out`` on and return their number, or -1 when it does not fit (entries from ``k0``
    then hold garbage)."""
    total, preferred = _units(table, ask, room, policy != PLACE_FIRST_FIT)
    if total < need:
        return -1
    prefer = room.prefer
    if policy == PLACE_FIRST_FIT:
        left, k = _fill(table, ask, (need, preferred), prefer, -1, out, k0)
        return k - k0 if left <= 0 else -1
    # Topology: the smallest leaf that holds it all, else the roomiest leaves first.
    leaves = table[META, 1]
    best = -1
    for leaf in range(leaves):
        room_l = table[LEAF_ROOM, leaf]
        if room_l >= need and (best < 0 or room_l < table[LEAF_ROOM, best]):
            best = leaf
    if best >= 0:
        left, k = _fill(table, ask, (need, preferred), prefer, best, out, k0)
        return k - k0 if left <= 0 else -1
    # Variability placement on a machine with pods: a job that spans leaves takes the leaves of
    # one pod when one holds it (jobs across the tapered pod links vary most); a flagged job's
    # quiet try that no pod holds is not moved (skip-with-limit), an unflagged job then takes
    # the roomiest leaves anywhere.
    if policy == PLACE_VARIABILITY and table[META, 2] > 1 and not _one_pod(table, need) and room.quiet_only:
        return -1
    left = need
    k = k0
    while left > 0:
        best = -1
        for leaf in range(leaves):
            room_l = table[LEAF_ROOM, leaf]
            if room_l > 0 and (best < 0 or room_l > table[LEAF_ROOM, best]):
                best = leaf
        if best < 0:
            return -1
        table[LEAF_ROOM, best] = 0
        left, k = _fill(table, ask, (left, preferred), prefer, best, out, k)
    return k - k0


@njit(cache=True)
def place(
    pool: NodePool, request: NodeRequests, j: int, need: int, room: Room, policy: int, out: Slots, k0: int
) -> int:
    """:func:`place_in` for job j on a pool (one-off calls; passes build the table once)."""
    return place_in(node_table(pool), job_ask(request, j), need, room, policy, out, k0)
