"""Two trees' Slurm daemon cycles after the read in one process, alternated (issue 31 item 3,
round 28, r31post): ``bench_daemon_cycle.py``'s real ``Planner.run_cycle`` on each tree's own
read of ``bench_slurm_cycle``'s states, the trees loaded as ``ab_slurm_cycle.py`` loads them
(:mod:`ab_trees`). Both trees need ``benchmarks/bench_daemon_cycle.py`` (copy it into an older
tree). The run stops unless every journal, row for row, is the same in both trees and every
round.

Run: ``python benchmarks/ab_daemon_cycle.py TREE_A TREE_B [--rounds 5] [--cycles 8] [--full-book]``; swap
the trees for the other argument order (the tree loaded second runs shared code slower,
round 27).
"""

from __future__ import annotations

import argparse
import functools
import os
from types import SimpleNamespace

import ab_trees
import bench_args

print = functools.partial(print, flush=True)  # noqa: A001 - rounds show as they end
OWN = ("rush", "bench_live_cycle", "bench_nodes", "live_next_pass", "bench_slurm_cycle", "bench_daemon_cycle")
SHOWN = (
    "whole",
    "wall",
    "_touch",
    "_check_start_order",
    "_observe_completions",
    "_journal_request_notes",
    "plan_actions",
    "apply",
    "reconcile",
    "_record_queue",
    "record_queue",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=bench_args.source_tree, help="tree A (e.g. main's)")
    parser.add_argument("b", type=bench_args.source_tree, help="tree B")
    parser.add_argument("--rounds", type=bench_args.positive, default=5)
    parser.add_argument(
        "--cycles", type=bench_args.count(3), default=8, help="cycles a round (the first two are not timed)"
    )
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument(
        "--full-book",
        action="store_true",
        help="each journal starts with a record for every job (both trees)",
    )
    args = parser.parse_args()
    options = SimpleNamespace(pending=args.pending, cycles=args.cycles, ended=5, arrivals=5, actions=200)
    trees = {
        name: ab_trees.load(tree, "bench_daemon_cycle", OWN) for name, tree in (("A", args.a), ("B", args.b))
    }
    print(f"A = {args.a}, B = {args.b}; load {os.getloadavg()}")
    read, journal = {}, None
    for name, modules in trees.items():
        bench = ab_trees.use(modules, OWN)["bench_daemon_cycle"]
        read[name] = bench.states(options)
        rows = bench.run(read[name], args.full_book)[2]  # numba's cache and first calls, not timed
        assert journal is None or rows == journal, "the two trees' journals differ"
        journal = rows
    from rush.planner.collector import settle_collector  # (B's: the same rule in both trees)

    book = "full book" if args.full_book else "empty book"
    print(f"{args.pending} pending, {args.cycles} cycles, {book}, journals equal; {settle_collector()}")
    print("ms (CPU but wall: elapsed), medians of cycles 3 to N: " + " / ".join(SHOWN))
    rows: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for r in range(args.rounds):
        order = ("A", "B") if r % 2 == 0 else ("B", "A")
        for name in order:
            bench = ab_trees.use(trees[name], OWN)["bench_daemon_cycle"]
            whole, seconds, dumped = bench.run(read[name], args.full_book)
            assert dumped == journal, f"tree {name}'s journal differs in round {r + 1}"
            rows[name].append(bench.medians(whole, seconds, 2))
        a, b = rows["A"][-1], rows["B"][-1]
        print(
            f"round {r + 1} ({order[0]} first): "
            + "   ".join(f"{n} " + " / ".join(f"{x[p]:.1f}" for p in SHOWN) for n, x in (("A", a), ("B", b)))
            + f"   B-A whole {b['whole'] - a['whole']:+.1f}; load {os.getloadavg()[0]:.2f}"
        )
    for line in ab_trees.summarize(rows, SHOWN):
        print(line)
    # To 0.01 ms as well: a pooled median of two orders can fall between two rounded values.
    for part in ("whole", "_record_queue", "record_queue"):
        diffs = [b[part] - a[part] for a, b in zip(rows["A"], rows["B"], strict=True)]
        print(f"{part} B-A by round to 0.01 ms: " + " ".join(f"{d:+.2f}" for d in diffs))
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
