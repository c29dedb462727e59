"""Two trees' live cycles alternated in one process (issue 31 item 3): ``bench_live_cycle.py``'s
live path (builder, kept columns, ``schedule()``, the daemon's plan) imported once from each
tree, each with its own ``rush`` package (the modules swapped in ``sys.modules`` around each
cycle, so that imports made inside functions resolve to that tree's), run in turns with the
order swapped each round: the two trees' first and next cycles at the same moment of the host's
load, which between processes moves more than a change of a few tens of ms.

Per round and tree: ``bench_live_cycle.run``'s first cycle (nothing kept) and next cycle (one
second later, ``--ended`` running jobs ended and ``--arrivals`` jobs queued), CPU ms of the
whole cycle (builder, kept columns, ``schedule()``, plan) and of the builder; medians over
``--rounds`` rounds, and the median of the per-round differences (B - A).

With ``--steady N`` (N >= 2), per round and tree also ``bench_live_cycle.steady``: N cycles in
a row with the collector left to run as it comes, as a live process runs them; their median
(cycles 2 to N, CPU ms) per round, each round's difference (B - A), and its median. Each steady
cycle's decisions (order, priorities, every other decision, start estimates, notes) and the
daemon's plan are read after the cycle's timing, as plain values; the run stops at the first
round where the two trees' differ.

Run: ``python benchmarks/ab_live_cycle.py /path/to/tree/A /path/to/tree/B [--rounds 7]
[--pending 10000] [--quantiles yes] [--steady 12]``.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import statistics
from collections import defaultdict
from types import SimpleNamespace

import ab_trees
import bench_args

OWN = ("rush", "bench_live_cycle", "bench_nodes", "live_next_pass")


def load(tree: str) -> dict:
    """``tree``'s benchmark modules and its own ``rush`` (every module of both), by name."""
    return ab_trees.load(tree, "bench_live_cycle", OWN)


def cycles(modules: dict, pending: int, shell: str, quantiles: bool, ended: int, arrivals: int):
    """One first and one next cycle of ``modules``'s tree: (total, builder) CPU ms of each."""
    ab_trees.use(modules, OWN)
    b = modules["bench_live_cycle"]
    config = b.CoreConfig(backfill="easy", max_jobs_considered=b.DEFAULT_MAX_JOBS_CONSIDERED)
    snapshot = modules["bench_nodes"].make_snapshot(pending, 1, b.NODES, b.PODS)
    live = b.LivePath(config, explain=shell == "daemon", actions=b.DAEMON_ACTIONS, quantiles=quantiles)
    objects = {} if shell == "flux-module" else None
    first = defaultdict(float)
    decided = live.cycle(b.rjms_state(snapshot, objects), first)
    later = b.with_arrivals(
        modules["live_next_pass"].next_snapshot(snapshot, decided, ended, kept=False), arrivals, pending
    )
    second = defaultdict(float)
    live.cycle(b.rjms_state(later, objects), second)
    out = []
    for s in (first, second):
        total = sum(s[p] for p in ("build", "columns", "schedule", "words"))
        out.append((1e3 * total, 1e3 * s["build"]))
    return out


def decided_digest(decided, plans: list) -> str:
    """The decisions of one cycle (and the plan made from them, if any) as plain values, hashed:
    comparable between two trees' classes. The priority decisions are read as their values (their
    words are not made: making 10 000 would move the next cycles' collector)."""
    listed = getattr(decided, "_listed", None)
    if listed is None or getattr(decided, "_explained", None) is None:
        listed = decided.decisions
    others = [
        (d.job_id, str(d.action), d.reason, d.value, d.requeue_class, d.requeues, d.nodes, d.allocation)
        for d in listed
        if d.action != "priority"
    ]
    plain = (
        decided.now,
        decided.order,
        sorted(decided.priority.items()),
        others,
        sorted(decided.reserved_at.items()),
        sorted(decided.estimated_start.items()),
        sorted(decided.estimate_basis.items()),
        sorted(decided.waits_behind.items()),
        sorted(decided.estimate_notes.items()),
        decided.unconsidered,
        [[(a.kind, a.job_id, a.value) for a in plan.actions] for plan in plans],
    )
    plans.clear()
    return hashlib.sha256(repr(plain).encode()).hexdigest()


def steady_median(
    modules: dict, pending: int, shell: str, quantiles: bool, options
) -> tuple[float, list[str]]:
    """The median CPU ms of cycles 2 to ``options.steady`` of ``modules``'s tree's
    ``bench_live_cycle.steady`` (the collector as it comes), and each cycle's decisions
    (:func:`decided_digest`, taken when the benchmark reads the decisions for its next snapshot,
    after the cycle's timing)."""
    ab_trees.use(modules, OWN)
    bench = modules["bench_live_cycle"]
    digests: list[str] = []
    plans: list = []
    next_snapshot, plan_actions = bench.next_snapshot, bench.plan_actions

    def planned(*args, **kwargs):
        plan = plan_actions(*args, **kwargs)
        plans.append(plan)
        return plan

    def read_next(snapshot, decided, *args, **kwargs):
        digests.append(decided_digest(decided, plans))
        return next_snapshot(snapshot, decided, *args, **kwargs)

    bench.next_snapshot, bench.plan_actions = read_next, planned
    try:
        seconds, _ = bench.steady(pending, shell, quantiles, options)
    finally:
        bench.next_snapshot, bench.plan_actions = next_snapshot, plan_actions
    return 1e3 * statistics.median(seconds[1:]), digests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=bench_args.source_tree, help="tree A (e.g. main's)")
    parser.add_argument("b", type=bench_args.source_tree, help="tree B")
    parser.add_argument("--rounds", type=bench_args.positive, default=7)
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--shells", type=bench_args.names(bench_args.SHELLS), default="flux-module,daemon")
    parser.add_argument("--quantiles", choices=("no", "yes"), default="yes")
    parser.add_argument("--ended", type=bench_args.non_negative, default=5)
    parser.add_argument("--arrivals", type=bench_args.non_negative, default=5)
    parser.add_argument(
        "--steady", type=bench_args.non_negative, default=0, help="cycles in a row per round (0: none)"
    )
    args = parser.parse_args()
    trees = {"A": load(args.a), "B": load(args.b)}
    quantiles = args.quantiles == "yes"
    for modules in trees.values():  # numba's cache loaded, each tree's first call made, not timed
        cycles(modules, 100, "daemon", quantiles, args.ended, args.arrivals)
    from rush.planner.collector import settle_collector  # (B's: the same rule in both trees)

    gc.collect()
    settle_collector()
    print(
        f"A = {args.a}, B = {args.b}; {args.pending} pending, quantiles {args.quantiles}; load {os.getloadavg()}"
    )
    for shell in args.shells:
        got: dict[str, list] = {"A": [], "B": []}
        for r in range(args.rounds):
            for name in ("A", "B") if r % 2 == 0 else ("B", "A"):
                got[name].append(
                    cycles(trees[name], args.pending, shell, quantiles, args.ended, args.arrivals)
                )
        if args.steady >= 2:
            options = SimpleNamespace(
                steady=args.steady,
                ended=args.ended,
                arrivals=args.arrivals,
                actions=trees["A"]["bench_live_cycle"].DAEMON_ACTIONS,
            )
            rows: dict[str, list[float]] = {"A": [], "B": []}
            for r in range(args.rounds):
                decided: dict[str, list[str]] = {}
                for name in ("A", "B") if r % 2 == 0 else ("B", "A"):
                    median, decided[name] = steady_median(
                        trees[name], args.pending, shell, quantiles, options
                    )
                    rows[name].append(median)
                if decided["A"] != decided["B"]:
                    first = next(
                        k for k, (a, b) in enumerate(zip(decided["A"], decided["B"], strict=True)) if a != b
                    )
                    raise SystemExit(
                        f"{shell} steady round {r + 1}: the trees' decisions differ at cycle {first + 1}"
                    )
                print(
                    f"{shell:12s} steady round {r + 1}: A {rows['A'][-1]:6.1f} B {rows['B'][-1]:6.1f} "
                    f"(B-A {rows['B'][-1] - rows['A'][-1]:+6.1f}); load {os.getloadavg()[0]:.2f}; "
                    f"{len(decided['A'])} cycles' decisions equal"
                )
            diffs = [b - a for a, b in zip(rows["A"], rows["B"], strict=True)]
            print(
                f"{shell:12s} steady median A {statistics.median(rows['A']):6.1f} "
                f"B {statistics.median(rows['B']):6.1f} (B-A {statistics.median(diffs):+6.1f})"
            )
        for c, cycle in enumerate(("first", "next")):
            med = {n: [statistics.median(v[c][i] for v in got[n]) for i in (0, 1)] for n in got}
            diff = [
                statistics.median(b[c][i] - a[c][i] for a, b in zip(got["A"], got["B"], strict=True))
                for i in (0, 1)
            ]
            print(
                f"{shell:12s} {cycle:5s} total A {med['A'][0]:6.1f} B {med['B'][0]:6.1f} (B-A {diff[0]:+6.1f})"
                f"   build A {med['A'][1]:6.1f} B {med['B'][1]:6.1f} (B-A {diff[1]:+6.1f})"
            )
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
