"""How the core's pass grows with the queue and the machine (issue 31, item 5).

One live ``schedule()`` call with start estimates (what the daemon runs each cycle, without the
10 000 priority explanations) on EASY and conservative backfilling, at 1 000 / 10 000 /
100 000 pending jobs on 100 / 1 000 / 10 000 nodes of 32 cores (a Frontier-sized machine has
about 9 400 nodes; busy Slurm sites keep 50 000-100 000 jobs queued). The machine and queue
are :mod:`bench_nodes`'s (its builder, scaled): pods (leaf switches) of 32 nodes, the last node
of each with 4 GPUs, about half the nodes busy, the same mix of pending requests.

Printed: the median CPU time (``time.process_time``: the host is shared) of ``--repeat`` calls
per case (the numba cache loaded first, once, on both projections: EASY's replay and, above
``EASY_REPLAY_MAX_JOBS`` waiting jobs, the profile projection), with start estimates and, beside
it, without them (the pass alone) and the estimates alone (``estimate_starts`` on the inputs
the call builds: for EASY, the projection of every pending job's start); for conservative also
``next pass``: the live cycle after it, with start estimates, as the daemon runs it
(:mod:`live_next_pass`: the first call's starts running, ``--ended`` running jobs ended early,
the reservations given back with their nodes, ``Snapshot.kept``, ``--step`` seconds later).
Then the growth exponent in each dimension, the slope of log(time) over
log(size) fitted by least squares, beside the exponent of n log n over the same sizes (the issue's bound:
no dimension worse than n log n). References measured in the same run: ``python -c pass`` and
``numpy.sort`` of as many floats as there are pending jobs.

A case whose time, extrapolated as n^1.5 from the smaller queue on the same machine, would
exceed ``--max-seconds`` is skipped and said so (conservative at 100 000 pending may take
minutes on 2 cores); the target's case is always run. Target: EASY with estimates, 100 000 pending on 10 000 nodes, within 1 s.

Figures: docs/admin-slurm.md ("What a pass costs"); conservative's next cycle also in
docs/research.md (issue 31, item 2, live).

Run: ``python benchmarks/bench_scale.py [--quick] [--repeat 3] [--modes easy,conservative]
[--pending 1000,10000,100000] [--nodes 100,1000,10000]`` (``--quick``: 1 000 and 10 000 pending
on 100 and 1 000 nodes, one call each: a smoke test).
"""

from __future__ import annotations

import argparse
import functools
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import bench_args
import bench_nodes
import numpy as np
from live_next_pass import next_snapshot

import rush.core.schedule as core_schedule
from rush.core import CoreConfig, Snapshot
from rush.core.schedule import schedule
from rush.core.start_estimates import EASY_REPLAY_MAX_JOBS, estimate_starts

print = functools.partial(print, flush=True)  # noqa: A001 - progress shows while the slow cases run

PENDING = (1_000, 10_000, 100_000)
NODES = (100, 1_000, 10_000)
LEAF = 32  # nodes per leaf switch
TARGET = ("easy", 100_000, 10_000, 1.0)


def make_snapshot(nodes: int, pending: int, seed: int = 1) -> Snapshot:
    """:mod:`bench_nodes`'s snapshot on ``nodes`` nodes, in pods of ``LEAF``."""
    return bench_nodes.make_snapshot(pending, seed, nodes, pods=-(-nodes // LEAF))


def median_seconds(snapshot: Snapshot, config: CoreConfig, repeat: int, estimates: bool = True):
    """Median CPU seconds of ``repeat`` calls, and the last call's decisions."""
    seconds = []
    for _ in range(repeat):
        t0 = time.process_time()
        decided = schedule(snapshot, config, explain_priorities=False, estimate_starts_too=estimates)
        seconds.append(time.process_time() - t0)
    return statistics.median(seconds), decided


@contextmanager
def caught_estimate_inputs() -> Iterator[list]:
    """The inputs each schedule() call hands estimate_starts, caught on their way in."""
    caught: list = []
    original = core_schedule.estimate_starts

    def spy(inputs):
        caught.append(inputs)
        return original(inputs)

    core_schedule.estimate_starts = spy
    try:
        yield caught
    finally:
        core_schedule.estimate_starts = original


def projection_seconds(inputs, repeat: int) -> float:
    """Median seconds of the start estimates alone (for EASY, the projection)."""
    seconds = []
    for _ in range(repeat):
        t0 = time.process_time()
        estimate_starts(inputs)
        seconds.append(time.process_time() - t0)
    return statistics.median(seconds)


def slope(sizes: list[int], seconds: list[float]) -> float:
    """Least-squares slope of log(seconds) over log(size)."""
    x, y = np.log(sizes), np.log(seconds)
    return float(np.polyfit(x, y, 1)[0]) if len(sizes) >= 2 else math.nan


def n_log_n_exponent(sizes: list[int]) -> float:
    return slope(sizes, [n * math.log(n) for n in sizes])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1k/10k pending on 100/1k nodes, one call each")
    parser.add_argument("--repeat", type=bench_args.positive, default=3)
    parser.add_argument(
        "--modes", type=bench_args.names(bench_args.BACKFILL_MODES), default="easy,conservative"
    )
    parser.add_argument(
        "--max-seconds", type=bench_args.positive_number, default=120.0, help="skip a case predicted slower"
    )
    parser.add_argument(
        "--pending", type=bench_args.counts(1), default=",".join(map(str, PENDING)), help="pending-job counts"
    )
    parser.add_argument(
        "--nodes", type=bench_args.counts(1), default=",".join(map(str, NODES)), help="node counts"
    )
    parser.add_argument(
        "--ended",
        type=bench_args.non_negative,
        default=5,
        help="running jobs ended early before the next pass",
    )
    parser.add_argument(
        "--step", type=bench_args.positive_number, default=1.0, help="seconds between a pass and the next"
    )
    args = parser.parse_args()
    pending_sizes = args.pending
    node_sizes = args.nodes
    if args.quick:
        pending_sizes, node_sizes = PENDING[:2], NODES[:2]
    repeat = 1 if args.quick else args.repeat

    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    print(f"reference: python -c pass {time.perf_counter() - t0:.3f} s")
    for n in pending_sizes:
        values = np.random.default_rng(0).random(n)
        t0 = time.perf_counter()
        np.sort(values)
        print(f"reference: numpy.sort of {n} floats {1e3 * (time.perf_counter() - t0):.2f} ms")

    results: dict[tuple[str, int, int], float] = {}
    alone_results: dict[tuple[str, int, int], float] = {}
    estimate_results: dict[tuple[str, int, int], float] = {}
    for mode in args.modes:  # numba cache load, once, on both projections
        for size in (100, EASY_REPLAY_MAX_JOBS + 1):
            schedule(make_snapshot(node_sizes[0], size), CoreConfig(backfill=mode), explain_priorities=False)
    next_results: dict[tuple[str, int, int], float] = {}
    print(
        f"{'mode':13s} {'nodes':>6s} {'pending':>8s} {'running':>8s} {'seconds':>9s} {'no estim.':>9s} "
        f"{'estimates':>9s} {'next pass':>9s}   (CPU seconds)"
    )
    for nodes in node_sizes:
        for pending in pending_sizes:
            snapshot = make_snapshot(nodes, pending)
            for mode in args.modes:
                smaller = [p for p in pending_sizes if p < pending and (mode, nodes, p) in results]
                is_target = (mode, pending, nodes) == TARGET[:3]
                if smaller and not is_target:
                    # Extrapolated as n^1.5: a generous guess for a pass that should be n log n.
                    p = smaller[-1]
                    predicted = results[mode, nodes, p] * (pending / p) ** 1.5
                    if predicted > args.max_seconds:
                        print(f"{mode:13s} {nodes:6d} {pending:8d}  skipped: predicted {predicted:.0f} s")
                        continue
                elif pending != pending_sizes[0] and not is_target:
                    print(f"{mode:13s} {nodes:6d} {pending:8d}  skipped: the smaller queue was skipped")
                    continue
                repeats = 1 if pending >= 100_000 else repeat
                with caught_estimate_inputs() as caught:
                    seconds, decided = median_seconds(snapshot, CoreConfig(backfill=mode), repeats)
                alone = median_seconds(snapshot, CoreConfig(backfill=mode), repeats, estimates=False)[0]
                estimates = projection_seconds(caught[0], repeats)
                results[mode, nodes, pending] = seconds
                alone_results[mode, nodes, pending] = alone
                estimate_results[mode, nodes, pending] = estimates
                following = math.nan
                if mode == "conservative":
                    later = next_snapshot(snapshot, decided, args.ended, kept=True, step=args.step)
                    following = median_seconds(later, CoreConfig(backfill=mode), repeats)[0]
                    next_results[mode, nodes, pending] = following
                print(
                    f"{mode:13s} {nodes:6d} {pending:8d} {len(snapshot.running):8d} {seconds:9.3f} {alone:9.3f} "
                    f"{estimates:9.3f} {following:9.3f}"
                )

    print("growth exponents (slope of log time over log size; n log n over the same sizes in brackets):")
    for mode in args.modes:
        tables = (
            ("with estimates", results),
            ("pass alone", alone_results),
            ("estimates alone", estimate_results),
            ("next pass", next_results),
        )
        for label, table in tables:
            for nodes in node_sizes:
                sizes = [p for p in pending_sizes if (mode, nodes, p) in table]
                if len(sizes) >= 2:
                    fitted = slope(sizes, [table[mode, nodes, p] for p in sizes])
                    print(
                        f"  {mode:13s} {label:15s} over pending {sizes[0]}-{sizes[-1]} on {nodes:5d} nodes: "
                        f"{fitted:5.2f} (n log n: {n_log_n_exponent(sizes):4.2f})"
                    )
            for pending in pending_sizes:
                sizes = [n for n in node_sizes if (mode, n, pending) in table]
                if len(sizes) >= 2:
                    fitted = slope(sizes, [table[mode, n, pending] for n in sizes])
                    print(
                        f"  {mode:13s} {label:15s} over nodes {sizes[0]}-{sizes[-1]} at {pending:6d} pending: "
                        f"{fitted:5.2f} (n log n: {n_log_n_exponent(sizes):4.2f})"
                    )
    mode, pending, nodes, limit = TARGET
    if (mode, nodes, pending) in results:
        seconds = results[mode, nodes, pending]
        verdict = "met" if seconds <= limit else "NOT met"
        print(
            f"target: {mode} with estimates, {pending} pending on {nodes} nodes <= {limit} s: {verdict} ({seconds:.3f} s)"
        )


if __name__ == "__main__":
    main()
