"""How fresh a per-threshold index of nodes' gaps would be in the conservative first pass on
nodes (issue 31, round 24): a count, not a timing.

Round 10 found that, under the pass's window rule, a shared request fits on a node over
``[t, t + d)`` exactly when ``t + d <= g(t; T)`` for its load threshold ``T`` (a node's cores
less the request's; GPUs alike), so an index of each node's gaps per threshold would let a
search skip the booked stretch it now slides over. Such an index, kept per node and threshold,
is out of date on a node as soon as a placement lands there. This replays the benchmark's first
pass (10 000 pending on 1 000 nodes: :mod:`bench_conservative_nodes`'s inputs) in the pass's
order from its decisions (each job's nodes, start or reservation) and counts, for every shared
partial-node request, the placements since the last request with the same threshold (partition,
cores and GPUs per node) and the distinct nodes they touched: what a lazily rebuilt index would
have to rebuild at that request's query, were every such request to query it.

Printed: the number of thresholds asked, and per request the placements and the nodes touched
since the last request of its threshold (median, mean, p90), the load average.

Run: ``python benchmarks/conservative_index_staleness.py [--pending 10000]``
Figures: docs/research.md (issue 31, round 24).
"""

from __future__ import annotations

import argparse
import os

import bench_args
import numpy as np
from bench_conservative_nodes import first_pass_inputs
from bench_nodes import _fresh, make_snapshots

from rush.core import CoreConfig
from rush.core.scheduling_pass import scheduling_pass


def placements_in_order(pending: int) -> tuple[list[tuple[int, tuple, frozenset]], int]:
    """The first pass's jobs in the order it placed them: (job, threshold key or (), its
    nodes); the key is set for shared partial-node requests only. Also the node count."""
    snapshot = make_snapshots(pending)[0]
    config = CoreConfig(backfill="conservative")
    args = tuple(_fresh(a) for a in first_pass_inputs(snapshot, config))
    moment, _, _, state, queues, _, out, nodes = args
    if np.any(state.reserved_at[queues.queue[: moment.queued]] < np.inf):
        raise SystemExit("standing reservations: the pass's order is not the queue's")
    result = scheduling_pass(*args)
    where: dict[int, frozenset] = {}
    for i in range(int(result.started)):
        a, b = nodes.placed.offset[i], nodes.placed.offset[i + 1]
        where[int(out.start[i])] = frozenset(int(x) for x in nodes.placed.node[a:b])
    for r in range(int(result.reserved)):
        a, b = nodes.reserved.offset[r], nodes.reserved.offset[r + 1]
        where[int(out.reserved[r])] = frozenset(int(x) for x in nodes.reserved.node[a:b])
    request = nodes.request
    order = []
    for j in queues.queue[: moment.queued]:
        j = int(j)
        shared = request.nodes[j] > 0 and not request.exclusive[j]
        key = (int(request.partition[j]), int(request.cores[j]), int(request.gpus[j])) if shared else ()
        order.append((j, key, where.get(j, frozenset())))
    return order, nodes.pool.count


def staleness(order: list[tuple[int, tuple, frozenset]]) -> tuple[int, list[int], list[int]]:
    """Thresholds asked, and per shared request after the first of its threshold: placements
    and distinct nodes placed on since the last request of that threshold."""
    last: dict[tuple, int] = {}
    since: list[int] = []
    touched: list[int] = []
    for x, (_, key, _) in enumerate(order):
        if not key:
            continue
        if key in last:
            between = order[last[key] : x]
            since.append(len(between))
            touched.append(len(frozenset().union(*(nodes for _, _, nodes in between))))
        last[key] = x
    return len(last), since, touched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    options = parser.parse_args()
    order, m = placements_in_order(options.pending)
    keys, since, touched = staleness(order)
    print(
        f"{len(order)} jobs placed in order on {m} nodes; {len(since) + keys} shared partial-node requests, {keys} thresholds"
    )
    for name, values in (("placements since", since), ("nodes touched since", touched)):
        v = np.array(values)
        line = f"{name:20s} median {np.median(v):7.1f}  mean {v.mean():7.1f}  p90 {np.percentile(v, 90):7.1f}"
        if name.startswith("nodes"):
            line += f"  ({v.mean() / m:.0%} of the nodes on average)"
        print(line)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
