"""Two trees' Flux daemon cycles alternated in one process (issue 31 item 3, round 28, r31flux):
``bench_flux_cycle.py``'s cycle (the tree's ``FluxBackend.read_state`` on flux-core 0.88-shaped
answers, then ``bench_live_cycle``'s daemon cycle) imported once from each tree, each with its
own ``rush`` (modules swapped in ``sys.modules`` around each call, :mod:`ab_trees`), run in
turns with the order swapped each round.

Each tree makes its own answers and reference run (``bench_flux_cycle.make_cycles``, which
checks each of its reads equal to a new backend's); the benchmark stops unless both trees'
answer texts are equal and their reference outcomes equal in a tree-neutral form
(``ab_slurm_cycle.plain``). Per round and tree: ``--cycles`` cycles in a row with a new backend
and ``LivePath``, every cycle's outcome checked against its tree's reference after it; CPU ms,
medians of cycles 2 to N, of the read, the builder, the rest and the whole, and the first
cycle's read; B/A of the whole per round.

A tree without this benchmark (main before round 28): ``git archive`` it to a directory and
copy ``benchmarks/bench_flux_cycle.py`` and ``benchmarks/flux_answers.py`` into it.

Run: ``python benchmarks/ab_flux_cycle.py /path/to/tree/A /path/to/tree/B [--rounds 5]
[--cycles 12] [--pending 10000]``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os

import ab_trees
import bench_args
from ab_slurm_cycle import plain

print = functools.partial(print, flush=True)  # noqa: A001 - rounds show as they end
OWN = ("rush", "bench_live_cycle", "bench_nodes", "live_next_pass", "bench_slurm_cycle", "flux_answers",
       "bench_flux_cycle")  # fmt: skip
PARTS = ("read", "build", "rest", "whole")


def use(modules: dict) -> dict:
    return ab_trees.use(modules, OWN)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=bench_args.source_tree, help="tree A (e.g. main's)")
    parser.add_argument("b", type=bench_args.source_tree, help="tree B")
    parser.add_argument("--rounds", type=bench_args.positive, default=5)
    parser.add_argument(
        "--cycles", type=bench_args.count(2), default=12, help="cycles a round (the first is not timed)"
    )
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--ended", type=bench_args.non_negative, default=5)
    parser.add_argument("--arrivals", type=bench_args.non_negative, default=5)
    parser.add_argument("--actions", type=bench_args.non_negative, default=200)
    args = parser.parse_args()
    trees = {
        "A": ab_trees.load(args.a, "bench_flux_cycle", OWN),
        "B": ab_trees.load(args.b, "bench_flux_cycle", OWN),
    }
    print(f"A = {args.a}, B = {args.b}; load {os.getloadavg()}")
    cycles = {}
    for name, modules in trees.items():
        bench = use(modules)["bench_flux_cycle"]
        bench.warm()
        cycles[name] = bench.make_cycles(args)
    assert cycles["A"].texts == cycles["B"].texts, "the two trees' answers differ"
    assert plain(cycles["A"].outcomes) == plain(cycles["B"].outcomes), "the reference runs' outcomes differ"
    from rush.planner.collector import settle_collector  # (B's: the same rule in both trees)

    gc.collect()
    print(f"{args.pending} pending, {args.cycles} cycles, references equal; {settle_collector()}")
    print("CPU ms, medians of cycles 2 to N: read / build / rest / whole; first read")
    rows: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for r in range(args.rounds):
        order = ("A", "B") if r % 2 == 0 else ("B", "A")
        for name in order:
            bench = use(trees[name])["bench_flux_cycle"]
            rows[name].append(bench.medians(bench.run_cycles(cycles[name], args)))
        a, b = rows["A"][-1], rows["B"][-1]
        print(
            f"round {r + 1} ({order[0]} first): "
            + "   ".join(
                f"{n} " + " / ".join(f"{x[p]:6.1f}" for p in PARTS) + f"; first {x['first read']:6.1f}"
                for n, x in (("A", a), ("B", b))
            )
            + f"   B/A whole x{b['whole'] / a['whole']:.3f}; load {os.getloadavg()[0]:.2f}"
        )
    for line in ab_trees.summarize(rows, (*PARTS, "first read", "first build"), ratio=True):
        print(line)
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
