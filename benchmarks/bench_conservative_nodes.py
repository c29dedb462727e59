"""Conservative backfilling on nodes, the compiled pass alone (issue 31, item 2): a first pass
over 10 000 pending jobs on 1 000 nodes (:mod:`bench_nodes`'s snapshot), then the next pass
with the first one's starts running, ``--ended`` running jobs ended early, and its
reservations standing:

* ``cold``: the first pass (no standing reservation);
* ``warm, kept nodes``: the next pass carrying each reservation's time and nodes, as the
  simulator does: kept reservations are booked up front and a job whose count profile fits no
  earlier than its reservation costs no node work;
* ``warm, kept, blind``: kept nodes without knowing what was freed since (every kept
  reservation searched from now up to its time, as a shell that keeps no node memory);
* ``warm, times only``: the same pass carrying times alone (every shell before issue 31; the
  live ``schedule()`` now carries the nodes too, :mod:`rush.core.kept_nodes`): every standing
  reservation is re-placed from scratch;
* ``counts cold``: the processor-count twin's first pass, the reference from the same run.

Each figure is the median and max of ``--repeat`` calls on fresh copies of the inputs (after
one call that loads the numba cache). The decisions of the two warm passes are compared too.

Run: ``python benchmarks/bench_conservative_nodes.py [--pending 10000] [--repeat 5]
[--cases 'nodes cold,counts cold (reference)'] [--cpu]`` (``--cases``: only those, by label;
``--cpu``: CPU time, for a shared host; wall-clock otherwise)

The first pass (issue 31, round 8), measured before changing it (an instrumented copy of the
kernel, 10 000 pending on 1 000 nodes, 0.45 s CPU for the compiled pass): 65.5 million booking
entries applied to the jobs' rooms, 20.0 million building each job's first window and 45.5
million sliding it over 1.9 million candidate starts (190 a job); 1.4 million of those pass the
count profile, so the counts are not what is loose, the nodes are. The slide is skewed: a tenth
of the jobs (short ones, median estimate 4.8 h against 11.9 h for the queue) apply 71 % of the
entries, each walking about 1 000 candidates from an early count fit through a booked,
fragmented stretch to near the frontier of the plan. Hypothesis tested this round: the cost is
per entry, not per candidate, and each entry pays the general offer rule twice (the request's
kind is re-dispatched and six per-node arrays read per entry); a room update specialised per
kind of request, reading one per-node threshold pair set once per job, halves the cost of an
entry and so of the pass, with the same candidates in the same order (the same decisions).
Refuted (docs/research.md, "conservative first pass on nodes"): same decisions, but 420-830 ms
against main's 426-456 ms in the same sitting, so the kernel was kept. Not tested: an index of each node's gaps by length so that a job skips gaps too short for it (the
longer fix for the skewed walks; exact for whole nodes, not yet formulated for shared ones).
Round 10 measured the ceiling of any such index (``conservative_search_ceiling.py``: every
search started where it ends leaves 46 % of the pass; whole-node requests alone save 10 %) and
carries each job's room to the next job's first window (``rush/core/carried_room.py``, -7 to
-9 %, the same decisions); docs/research.md has the figures. Round 11 profiled the first pass
by phase (``conservative_phase_profile.py``: the rooms built, carried and slid are 74 % of it,
the count profiles' inserts 7 %) and tried the count profiles in blocks: the same
decisions, no gain beyond a sitting's noise, so not merged. Round 18 deferred a candidate's
entering bookings while the room without them offered too few units: the same decisions, but
1.01-1.03x main (45.5 M entries slid against 45.6 M: the booking ending at a candidate nearly
always frees enough), so not merged either. Round 19 read the slide's bookings in order with
their entries interleaved (1.01-1.03x main: the loads are not the cost) and, after timing an
entry apart (``slide_entry_cost.py``: its offer tests and GPU column are two thirds of it), kept
the GPU test as a per-node flag written only by GPU-taking entries: exact, 0.88-0.90x main,
short of the 0.80x fixed beforehand, so not merged either. Round 24 tests the offer rule only
where an entry can change a node's offer (per-node offer states for whole-node and shared
requests): exact, 0.83-0.88x main, kept (its criterion was 0.90x). Round 25 stacked round
19's GPU flag on those states (the GPU part in each node's state): exact, but 0.95-1.06x round
24's kernel against a 0.93x criterion, so not merged (commit dcf1007).
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time

import bench_args
import numpy as np
from bench_nodes import _fresh, captured_pass, make_snapshots

from rush.core import CoreConfig
from rush.core.node_pool import Slots, new_slots
from rush.core.pass_data import RunningSet
from rush.core.schedule import schedule
from rush.core.scheduling_pass import drop_started, scheduling_pass

print = functools.partial(print, flush=True)  # noqa: A001 - progress shows while the slow cases run


def first_pass_inputs(snapshot, config: CoreConfig) -> tuple:
    """schedule()'s inputs to the compiled pass, with a ``reserved`` buffer large enough to
    keep every reservation's nodes (as the simulator sizes it)."""
    with captured_pass() as calls:
        schedule(snapshot, config, explain_priorities=False, estimate_starts_too=False)
    args = calls[0]
    nodes = args[7]
    n = len(args[2].procs)
    # Each node's bookings as the simulator starts them (the pass keeps them up to date).
    memory = np.zeros((nodes.pool.count, 5))
    memory[:, 1:] = (-np.inf, 0.0, np.inf, -np.inf)
    memory[:, 2] = nodes.pool.usable
    state = args[3]._replace(node_memory=memory)
    reserved = new_slots(n + 1, n * max(nodes.pool.count, 1) + 1)
    return (*args[:3], state, *args[4:7], nodes._replace(reserved=reserved))


def _append_rows(held: Slots, rows: int, placed: Slots, count: int) -> Slots:
    """``held``'s first ``rows`` rows, then ``placed``'s first ``count`` rows."""
    a = held.offset[rows]
    b = placed.offset[count]
    offset = np.concatenate([held.offset[: rows + 1], a + placed.offset[1 : count + 1]])
    return Slots(
        offset,
        np.concatenate([held.node[:a], placed.node[:b]]),
        np.concatenate([held.cores[:a], placed.cores[:b]]),
        np.concatenate([held.gpus[:a], placed.gpus[:b]]),
    )


def run_pair(args: tuple, ended: int) -> tuple[tuple, tuple, tuple]:
    """Run the first pass on a copy of ``args``; return the next pass's inputs (``ended``
    running jobs ended early since) with kept nodes, with times only, and kept but blind."""
    first = tuple(_fresh(a) for a in args)
    moment, config, jobs, state, queues, running, out, nodes = first
    result = scheduling_pass(*first)
    ns = result.started
    started = np.zeros(len(jobs.procs), dtype=np.bool_)
    started[out.start[:ns]] = True
    queued = drop_started(queues, moment.queued, started, config.same_scan)
    rows = running.count
    held = _append_rows(nodes.held, rows, nodes.placed, ns)
    ends = np.concatenate([running.end[:rows], moment.now + np.maximum(jobs.est[out.start[:ns]], 1e-6)])
    procs = np.concatenate([running.procs[:rows], rows + np.arange(ns)])
    # The first ``ended`` running jobs (the soonest to end) ended early.
    running2 = RunningSet(ends[ended:], procs[ended:], rows + ns - ended, ends[ended:], procs[ended:])
    moment2 = moment._replace(queued=queued)
    kept = (moment2, config, jobs, state, queues, running2, out, nodes._replace(held=held))
    # Times only, as every shell before issue 31; blind: kept nodes
    # but nothing known of what was freed since (every kept reservation searched from now).
    times_only = tuple(_fresh(a) for a in kept)
    times_only[3].reserved_row[:] = -1
    blind = tuple(_fresh(a) for a in kept)
    blind = (*blind[:3], blind[3]._replace(node_memory=np.zeros((0, 5))), *blind[4:])
    return kept, times_only, blind


def timed(args: tuple, repeat: int, clock=time.perf_counter) -> tuple[float, float, tuple]:
    scheduling_pass(*(_fresh(a) for a in args))  # load the numba cache
    seconds = []
    for _ in range(repeat):
        fresh = tuple(_fresh(a) for a in args)
        t0 = clock()
        result = scheduling_pass(*fresh)
        seconds.append(clock() - t0)
    out = fresh[6]
    plan = (
        out.start[: result.started].tolist(),
        dict(
            zip(
                out.reserved[: result.reserved].tolist(),
                out.reserved_at[: result.reserved].tolist(),
                strict=True,
            )
        ),
    )
    return statistics.median(seconds) * 1e3, max(seconds) * 1e3, plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--repeat", type=bench_args.positive, default=5)
    parser.add_argument(
        "--ended",
        type=bench_args.non_negative,
        default=5,
        help="running jobs ended early before the next pass",
    )
    parser.add_argument("--cpu", action="store_true", help="CPU time (process_time), not wall-clock")
    parser.add_argument(
        "--cases",
        type=bench_args.names(),
        default=(),
        help="only these cases, comma-separated (e.g. 'nodes cold')",
    )
    args = parser.parse_args()
    cases = list(args.cases)
    clock = time.process_time if args.cpu else time.perf_counter
    on_nodes, as_procs = make_snapshots(args.pending)
    config = CoreConfig(backfill="conservative")
    print(
        f"{args.pending} pending jobs, {len(on_nodes.running)} running ({args.ended} end early before "
        f"the next pass), {len(on_nodes.nodes)} nodes; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    counts = first_pass_inputs(as_procs, config)
    cold = first_pass_inputs(on_nodes, config)
    kept, times_only, blind = run_pair(cold, args.ended)
    print(f"{'case':28s} {'median ms':>10s} {'max ms':>8s}  ({'CPU' if args.cpu else 'wall-clock'})")
    plans = {}
    for label, inputs in (
        ("counts cold (reference)", counts),
        ("nodes cold", cold),
        ("nodes warm, kept nodes", kept),
        ("nodes warm, kept, blind", blind),
        ("nodes warm, times only", times_only),
    ):
        if cases and label not in cases:
            continue
        median, worst, plans[label] = timed(inputs, args.repeat, clock)
        print(f"{label:28s} {median:10.1f} {worst:8.1f}")
    if cases:
        print(f"load average {os.getloadavg()[0]:.2f} after the run")
        return
    same = plans["nodes warm, kept nodes"] == plans["nodes warm, kept, blind"]
    print(f"kept nodes with and without node memory decide the same: {'yes' if same else 'NO'}")
    a, b = plans["nodes warm, kept nodes"], plans["nodes warm, times only"]
    later = sum(1 for j, t in a[1].items() if t > b[1].get(j, np.inf))
    earlier = sum(1 for j, t in a[1].items() if t < b[1].get(j, np.inf))
    print(
        f"warm passes: {len(a[0])} / {len(b[0])} starts, {len(a[1])} / {len(b[1])} reservations "
        f"(kept nodes / times only); kept nodes reserve {earlier} jobs earlier, {later} later"
    )
    print(f"load average {os.getloadavg()[0]:.2f} after the run")


if __name__ == "__main__":
    main()
