"""Two trees' Slurm daemon cycles alternated in one process (issue 31 item 3, round 27,
r31build): ``bench_slurm_cycle.py``'s cached path (the backends' read through
:class:`rush.rjms.slurm_json.ParsedJobs`, then ``bench_live_cycle``'s daemon cycle) imported
once from each tree, each with its own ``rush`` (modules swapped in ``sys.modules`` around each
call, as ``ab_live_cycle.py`` does), run in turns with the order swapped each round.

Each tree makes its own answers and reference run (``bench_slurm_cycle.make_answers``, its own
``main_read``); the benchmark stops unless both trees' answer texts are equal and their
reference outcomes (decisions, priorities, order, reservations, estimates, plan actions) equal
in a tree-neutral form. Per round and tree: ``--cycles`` cycles in a row of the cached path (a
new ``ParsedJobs`` and ``LivePath``), every cycle's outcome checked against its tree's reference
after it; CPU ms, medians of cycles 2 to N, of the read, the fair-share step (with
``--fairshare``: sshare's answer parsed and the tree's step, timed apart, also in the read;
r31fsassoc), the builder, the rest (kept columns, ``schedule()``, the plan) and the whole; then each tree's ``bench_live_cycle.steady()`` Flux
module (kept objects, no read), its median of cycles 2 to N, the order swapped too.
``--fairshare`` (r31fair): ``bench_slurm_cycle.py``'s fair-share answers (an sshare answer each
cycle, ``--fair-changes`` associations' factors changed a cycle), read by each tree's own step.
``--moving-starts`` and ``--finished`` (r31move): ``bench_slurm_cycle.py``'s; both trees need
its ``Moving`` (a tree older than round 28 makes different answers and the run stops).

Run: ``python benchmarks/ab_slurm_cycle.py /path/to/tree/A /path/to/tree/B [--rounds 5]
[--cycles 12] [--pending 10000] [--fairshare [--fair-changes 3]] [--moving-starts 0.3]
[--finished 300]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import functools
import gc
import math
import os
import statistics
import time
from collections import defaultdict
from types import SimpleNamespace
from typing import Any

import ab_trees
import bench_args
import numpy as np

print = functools.partial(print, flush=True)  # noqa: A001 - rounds show as they end
OWN = ("rush", "bench_live_cycle", "bench_nodes", "live_next_pass", "bench_slurm_cycle")
PARTS = ("read", "fair", "build", "rest", "whole")


def use(modules: dict) -> dict:
    """``modules``'s tree made the one imports resolve to; its modules back."""
    return ab_trees.use(modules, OWN)


def load(tree: str) -> dict:
    """``tree``'s benchmark modules and its own ``rush`` (every module of both), by name."""
    return ab_trees.load(tree, "bench_slurm_cycle", OWN)


def plain(value: Any) -> Any:
    """``value`` in a form equal across two trees' classes: dataclasses and enums by type name
    and fields, arrays by dtype and values, NaN as a marker (it equals nothing)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, *(plain(getattr(value, f.name)) for f in dataclasses.fields(value)))
    if isinstance(value, enum.Enum):
        return (type(value).__name__, value.name)
    if isinstance(value, np.ndarray):
        return ("array", str(value.dtype), plain(value.tolist()))
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, dict):
        return ("dict", *((plain(k), plain(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    return value


def warm(modules: dict) -> None:
    """numba's cache loaded and the tree's first calls made, not timed."""
    b = use(modules)["bench_slurm_cycle"]
    lc = modules["bench_live_cycle"]
    small = modules["bench_nodes"].make_snapshot(100, 1, lc.NODES, lc.PODS)
    lc.LivePath(b.config(), True).cycle(lc.rjms_state(small, None), defaultdict(float))


def cached_cycles(modules: dict, answers, args: argparse.Namespace) -> list[tuple[float, ...]]:
    """``bench_slurm_cycle.run_path``'s cached path with the builder timed apart: (read, build,
    rest, whole) CPU seconds of each cycle; each outcome checked after its cycle."""
    b = use(modules)["bench_slurm_cycle"]
    live = modules["bench_live_cycle"].LivePath(b.config(), explain=True, collect=False, actions=args.actions)
    parsed = b.ParsedJobs()
    out = []
    gc.collect()
    for text, factors, share_text, snapshot, want in zip(
        answers.texts, answers.factors, answers.shares, answers.snapshots, answers.outcomes, strict=True
    ):
        t0 = time.process_time()
        jobs = b.cached_read(parsed, text, factors)  # up to the site factors
        tf = time.process_time()
        if share_text:  # cached_read's fair-share step, timed apart
            jobs = fair_step(b, parsed, jobs, share_text)
        state = b.state_of(snapshot, jobs)
        t1 = time.process_time()
        parts: dict[str, float] = defaultdict(float)
        decided = live.cycle(state, parts)
        t2 = time.process_time()
        out.append((t1 - t0, t1 - tf, parts["build"], t2 - t1 - parts["build"], t2 - t0))
        assert b.outcome(decided, b.PLANS.plan) == want, "a decision or action differs from the reference"
    return out


def fair_step(b, parsed, jobs: list, share_text: str) -> list:
    """``bench_slurm_cycle.cached_read``'s last steps (sshare's answer parsed, the tree's
    fair-share step), so that they are timed apart from the read before them."""
    shares = b.site_factor_values.parse_sshare(share_text)
    fair = getattr(parsed, "with_fairshare", None)
    return fair(jobs, shares) if fair is not None else b.slurm.with_fairshare(jobs, shares)


def flux_module(modules: dict, args: argparse.Namespace) -> float:
    """The tree's ``bench_live_cycle.steady()`` Flux module: the median CPU ms of cycles 2 to N."""
    lc = use(modules)["bench_live_cycle"]
    options = SimpleNamespace(
        steady=args.cycles, ended=args.ended, arrivals=args.arrivals, actions=args.actions
    )
    seconds, _ = lc.steady(args.pending, "flux-module", False, options)
    return 1e3 * statistics.median(seconds[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=bench_args.source_tree, help="tree A (e.g. the integration branch's)")
    parser.add_argument("b", type=bench_args.source_tree, help="tree B")
    parser.add_argument("--rounds", type=bench_args.positive, default=5)
    parser.add_argument(
        "--cycles", type=bench_args.count(2), default=12, help="cycles a round (the first is not timed)"
    )
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--ended", type=bench_args.non_negative, default=5)
    parser.add_argument("--arrivals", type=bench_args.non_negative, default=5)
    parser.add_argument("--actions", type=bench_args.non_negative, default=200)
    parser.add_argument(
        "--fairshare", action="store_true", help='site.fairshare = "rjms": sshare read each cycle'
    )
    parser.add_argument(
        "--fair-changes",
        type=bench_args.non_negative,
        default=3,
        help="associations whose factor changes a cycle",
    )
    parser.add_argument("--moving-starts", type=bench_args.fraction, default=0.0, help="bench_slurm_cycle's")
    parser.add_argument("--finished", type=bench_args.non_negative, default=0, help="bench_slurm_cycle's")
    args = parser.parse_args()
    trees = {"A": load(args.a), "B": load(args.b)}
    print(
        f"A = {args.a}, B = {args.b}; fair-share {'on' if args.fairshare else 'off'}; "
        f"moving starts {args.moving_starts:g}, finished listed {args.finished}; load {os.getloadavg()}"
    )
    answers = {}
    for name, modules in trees.items():
        warm(modules)
        answers[name] = use(modules)["bench_slurm_cycle"].make_answers(args)
    assert answers["A"].texts == answers["B"].texts, "the two trees' answers differ"
    assert answers["A"].shares == answers["B"].shares, "the two trees' sshare answers differ"
    assert plain(answers["A"].outcomes) == plain(answers["B"].outcomes), "the reference runs' outcomes differ"
    from rush.planner.collector import settle_collector  # (B's: the same rule in both trees)

    gc.collect()
    print(f"{args.pending} pending, {args.cycles} cycles, references equal; {settle_collector()}")
    print(
        "CPU ms, medians of cycles 2 to N: read (fair-share step included) / fair-share step / build / rest / whole; the Flux module's steady cycle"
    )
    rows: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for r in range(args.rounds):
        order = ("A", "B") if r % 2 == 0 else ("B", "A")
        for name in order:
            cycles = cached_cycles(trees[name], answers[name], args)
            row = {p: 1e3 * statistics.median(c[k] for c in cycles[1:]) for k, p in enumerate(PARTS)}
            row["first read"], row["first fair"], row["first build"] = (1e3 * cycles[0][k] for k in range(3))
            rows[name].append(row)
        for name in order:
            rows[name][-1]["flux"] = flux_module(trees[name], args)
        a, b = rows["A"][-1], rows["B"][-1]
        print(
            f"round {r + 1} ({order[0]} first): "
            + "   ".join(
                f"{n} " + " / ".join(f"{x[p]:6.1f}" for p in PARTS) + f"  Flux {x['flux']:5.1f}"
                for n, x in (("A", a), ("B", b))
            )
            + f"   B-A fair {b['fair'] - a['fair']:+5.1f} build {b['build'] - a['build']:+5.1f}"
            f" read {b['read'] - a['read']:+5.1f} whole {b['whole'] - a['whole']:+5.1f}"
            f" Flux {b['flux'] - a['flux']:+5.1f}; first read A {a['first read']:.1f} B {b['first read']:.1f};"
            f" load {os.getloadavg()[0]:.2f}"
        )
    for line in ab_trees.summarize(rows, (*PARTS, "flux", "first read", "first fair", "first build")):
        print(line)
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
