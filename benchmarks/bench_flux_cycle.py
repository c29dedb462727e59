"""The Flux daemon's whole steady cycle, read included (issue 31 item 3, round 28, r31flux):
from Flux's answers to the daemon's plan, at 10 000 pending jobs on 1 000 nodes: the tree's
:meth:`rush.rjms.flux.FluxBackend.read_state` on answers in flux-core 0.88's shapes
(:mod:`flux_answers`, replayed by a handle that decodes each answer's JSON as flux's
``RPC.get`` does), then ``bench_live_cycle.py``'s daemon cycle (:class:`bench_live_cycle.LivePath`:
builder, kept columns, ``schedule()`` with start estimates, the plan and its words).

The queue is ``bench_live_cycle``'s (:mod:`bench_nodes`; queues ``batch`` and ``gpu``, the GPU
nodes carrying property ``gpu``). Between cycles the answers change as an instance's do: the
last cycle's starts run where the pass put them (their R kept from then on), ``--ended``
running jobs end, ``--arrivals`` jobs are queued, 1 % of the pending jobs get a new urgency
(``flux job urgency``), the priorities the plan set come back as the jobs' Flux priorities
(rush's jobtap plugin) and sched-simple's ``t_estimate`` annotations move. The read's clock
(``taken_at``) is the cycle's recorded time.

A reference run (untimed) makes the answers and records each cycle's decisions and plan
(``bench_slurm_cycle.outcome``); on each cycle it also checks that the backend read equals a
new backend's read (nothing kept), job by job. Every timed run (a new backend and
``LivePath``, ``--cycles`` cycles in a row, the collector settled as the daemon settles it)
is checked against it after each cycle. Printed per round: CPU ms, medians of cycles 2 to N,
of the read, the builder, the rest (kept columns, ``schedule()``, the plan) and the whole.
``--profile N``: cProfile over one more run's cycles 2 to N, the top N functions by own time.
Two trees alternated in one process: ``ab_flux_cycle.py``.

Run: ``python benchmarks/bench_flux_cycle.py [--pending 10000] [--rounds 5] [--cycles 12]
[--profile 30]``.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import os
import pstats
import random
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field

import bench_args
import bench_live_cycle as live_cycle
import bench_nodes
from bench_slurm_cycle import PLANS, config, outcome
from flux_answers import FluxAnswers, ReplayHandle
from live_next_pass import next_snapshot

import rush
import rush.rjms.flux.backend as flux_backend
from rush.core import Snapshot
from rush.core.resources import Request
from rush.planner.collector import settle_collector
from rush.rjms.base import ClusterState
from rush.rjms.flux import FluxBackend

print = functools.partial(print, flush=True)  # noqa: A001 - rounds show as they end
PARTS = ("read", "build", "rest", "whole")


class Clock:
    """The read's clock (``read_state``'s ``taken_at``): the cycle's recorded time."""

    now = 0.0

    def time(self) -> float:
        return self.now


CLOCK = Clock()
flux_backend.time = CLOCK  # type: ignore[assignment]  # the backend's only use of time is time.time()


@dataclass
class Cycles:
    """The cycles' answers (texts by topic), clocks, and the reference run's outcomes."""

    answers: FluxAnswers = field(default_factory=FluxAnswers)
    texts: list[dict[str, str]] = field(default_factory=list)
    nows: list[float] = field(default_factory=list)
    outcomes: list[tuple] = field(default_factory=list)


def new_backend(answers: FluxAnswers) -> tuple[FluxBackend, ReplayHandle]:
    handle = ReplayHandle(answers)
    return FluxBackend(handle=handle, priority_lever="plugin"), handle


def check_written(snapshot: Snapshot, state: ClusterState) -> None:
    """The answers say what the snapshot holds: each job's request, processors, limit, submit
    (pending) or start and allocation (running), and the nodes, as the backend reads them."""
    by_id = {j.job_id: j for j in state.jobs}
    assert len(by_id) == len(snapshot.pending) + len(snapshot.running)
    assert [(n.name, n.cores, n.gpus, n.partitions) for n in state.nodes] == [
        (n.name, n.cores, n.gpus, n.partitions) for n in snapshot.nodes
    ]
    assert [n.free_cores for n in state.nodes] == [
        n.cores - sum(s.cores for r in snapshot.running for s in r.allocation if s.node == i)
        for i, n in enumerate(snapshot.nodes)
    ]
    for p in snapshot.pending:
        j = by_id[p.job_id]
        request = p.request
        if not request.partition:  # a processor count, in the default queue (one core: one node)
            request = Request(1 if p.procs == 1 else 0, p.procs, partition="batch")
        assert (j.request, j.procs, j.requested_time, j.submit) == (
            request,
            p.procs,
            p.requested_time,
            p.submit,
        )
    names = [n.name for n in snapshot.nodes]
    for r in snapshot.running:
        j = by_id[r.job_id]
        assert (j.request, j.procs, j.requested_time, j.start) == (
            r.request,
            r.procs,
            r.requested_time,
            r.start,
        )
        # R lists a job's ranks in order (allocation_from_r): the snapshot's slots by node.
        assert j.allocation == tuple(
            (names[s.node], s.cores, s.gpus) for s in sorted(r.allocation, key=lambda s: s.node)
        )


def make_cycles(args: argparse.Namespace) -> Cycles:
    """The reference run (untimed): each cycle's answers written, read, checked against a read
    by a new backend, the cycle run and its outcome kept, the next snapshot made."""
    snapshot = bench_nodes.make_snapshot(args.pending, 1, live_cycle.NODES, live_cycle.PODS)
    rng = random.Random(28)
    urgency: dict[int, int] = {}
    priority: dict[int, int] = {}
    out = Cycles()
    backend, handle = new_backend(out.answers)
    live = live_cycle.LivePath(config(), explain=True, collect=False, actions=args.actions)
    for cycle in range(args.cycles):
        handle.texts = out.answers.update(snapshot, urgency, priority, snapshot.now + 600.0)
        CLOCK.now = snapshot.now
        state = backend.read_state()
        fresh = new_backend(out.answers)[0]
        fresh._handle.texts = handle.texts
        assert fresh.read_state() == state, f"cycle {cycle}: the backend's read differs from a new backend's"
        if cycle == 0:
            check_written(snapshot, state)
        decided = live.cycle(state, defaultdict(float))
        out.texts.append(handle.texts)
        out.nows.append(snapshot.now)
        out.outcomes.append(outcome(decided, PLANS.plan))
        for action in PLANS.plan.actions:  # rush's values come back as the jobs' Flux priorities
            if action.kind == "priority":
                priority[action.job_id] = min(max(int(action.value), 1), 2**32 - 2)
        later = next_snapshot(snapshot, decided, args.ended, kept=False)
        snapshot = live_cycle.with_arrivals(later, args.arrivals, args.pending + cycle)
        pending = [p.job_id for p in snapshot.pending]
        for job_id in rng.sample(pending, len(pending) // 100):  # users' flux job urgency, 1 % a cycle
            urgency[job_id] = rng.randint(1, 30)
    return out


def run_cycles(
    cycles: Cycles, args: argparse.Namespace, profile: cProfile.Profile | None = None
) -> list[tuple]:
    """``args.cycles`` cycles in a row with a new backend: (read, build, rest, whole) CPU
    seconds of each; each cycle's outcome checked against the reference after it."""
    backend, handle = new_backend(cycles.answers)
    live = live_cycle.LivePath(config(), explain=True, collect=False, actions=args.actions)
    seconds = []
    gc.collect()
    for k, (texts, now, want) in enumerate(zip(cycles.texts, cycles.nows, cycles.outcomes, strict=True)):
        handle.texts, CLOCK.now = texts, now
        if profile is not None and k == 1:
            profile.enable()
        t0 = time.process_time()
        state = backend.read_state()
        t1 = time.process_time()
        parts: dict[str, float] = defaultdict(float)
        decided = live.cycle(state, parts)
        t2 = time.process_time()
        seconds.append((t1 - t0, parts["build"], t2 - t1 - parts["build"], t2 - t0))
        assert outcome(decided, PLANS.plan) == want, (
            f"cycle {k}: a decision or action differs from the reference"
        )
    if profile is not None:
        profile.disable()
    return seconds


def medians(seconds: list[tuple]) -> dict[str, float]:
    """CPU ms of each part, the median of cycles 2 to N; the first cycle's read and build."""
    row = {p: 1e3 * statistics.median(s[k] for s in seconds[1:]) for k, p in enumerate(PARTS)}
    row["first read"], row["first build"] = 1e3 * seconds[0][0], 1e3 * seconds[0][1]
    return row


def warm() -> None:
    """numba's cache loaded and the first calls made, not timed."""
    small = bench_nodes.make_snapshot(100, 1, live_cycle.NODES, live_cycle.PODS)
    live_cycle.LivePath(config(), True).cycle(live_cycle.rjms_state(small, None), defaultdict(float))


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--rounds", type=bench_args.positive, default=5)
    parser.add_argument(
        "--cycles", type=bench_args.count(2), default=12, help="cycles a round (the first is not timed)"
    )
    parser.add_argument("--ended", type=bench_args.non_negative, default=5)
    parser.add_argument("--arrivals", type=bench_args.non_negative, default=5)
    parser.add_argument("--actions", type=bench_args.non_negative, default=live_cycle.DAEMON_ACTIONS)
    parser.add_argument(
        "--profile",
        type=bench_args.non_negative,
        default=0,
        help="top N functions of a profiled run (0: none)",
    )
    return parser.parse_args()


def main() -> None:
    args = arguments()
    print(f"rush from {rush.__file__}; load {os.getloadavg()}")
    warm()
    cycles = make_cycles(args)
    sizes = [len(t["job-list.list"]) for t in cycles.texts]
    print(
        f"{args.pending} pending; job-list answers {min(sizes) / 1e6:.1f}-{max(sizes) / 1e6:.1f} MB; "
        f"reference made, each read equal to a new backend's; {settle_collector()}"
    )
    print("CPU ms, medians of cycles 2 to N: read / build / rest / whole; first read / first build")
    rows = []
    for r in range(args.rounds):
        row = medians(run_cycles(cycles, args))
        rows.append(row)
        print(
            f"round {r + 1}: "
            + " / ".join(f"{row[p]:6.1f}" for p in PARTS)
            + f"; first {row['first read']:.1f} / {row['first build']:.1f}; load {os.getloadavg()[0]:.2f}"
        )
    if rows:
        print(
            "medians of rounds: "
            + ", ".join(f"{p} {statistics.median(r[p] for r in rows):.1f}" for p in PARTS)
        )
    if args.profile:
        profile = cProfile.Profile()
        run_cycles(cycles, args, profile)
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.profile)
    print(f"load {os.getloadavg()}")


if __name__ == "__main__":
    main()
