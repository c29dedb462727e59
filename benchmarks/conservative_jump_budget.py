"""The conservative pass on nodes with its jumps (issue 31, round 12: rush/core/node_fits.py)
at several budgets: CPU ms of the compiled first pass at 10 000 pending on 1 000 nodes
(:mod:`bench_conservative_nodes`'s inputs) when a whole-node or shared slide jumps after
``--budgets`` booking entries per node (negative: never jumps; the same compiled function, so
no budget costs a compile), each deciding as the one that never jumps (checked).

Run: ``python benchmarks/conservative_jump_budget.py [--budgets=-1,8,64,512] [--repeat 3]``
(the ``=``: argparse reads a leading minus as an option)
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench_conservative_nodes import first_pass_inputs
from bench_nodes import _fresh, make_snapshots

from rush.core import CoreConfig
from rush.core.conservative_nodes import conservative_nodes_jumping


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--budgets", default="-1,8,64,512")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    on_nodes, _ = make_snapshots(args.pending)
    cold = first_pass_inputs(on_nodes, CoreConfig(backfill="conservative"))
    m = cold[7].pool.count
    budgets = [int(b) for b in args.budgets.split(",")]
    print(f"{args.pending} pending, {m} nodes; load average {os.getloadavg()[0]:.2f}")
    reference = None
    times: dict[int, list[float]] = {b: [] for b in budgets}
    for _ in range(args.repeat + 1):  # the first round loads the cache and is not counted
        for budget in budgets:
            fresh = tuple(_fresh(a) for a in cold)
            jump_after = budget * m if budget >= 0 else -1
            t0 = time.process_time()
            result = conservative_nodes_jumping(*fresh, jump_after)
            times[budget].append(time.process_time() - t0)
            out = fresh[6]
            decided = (
                tuple(result),
                out.start[: result[0]].tobytes(),
                out.reserved_at[: result[2]].tobytes(),
            )
            reference = reference or decided
            assert decided == reference, budget
    for budget in budgets:
        label = "never" if budget < 0 else f"{budget} m"
        print(f"jump after {label:>8s}: median {statistics.median(times[budget][1:]) * 1e3:8.1f} ms CPU")
    print(f"load average {os.getloadavg()[0]:.2f} after the run")


if __name__ == "__main__":
    main()
