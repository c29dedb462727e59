"""The core's node-level pass at scale (issue 20, "Speed and scale"): one ``schedule()`` call
with 10 000 pending jobs on 1 000 nodes in 32 pods, next to the same queue as processor
counts (a snapshot without nodes) in the same run. Target: <= 100 ms for EASY on nodes.

The machine: 1 000 nodes of 32 cores in 32 leaf switches (pods); the last node of every pod
has 4 GPUs and is also in partition ``gpu``. About half the nodes are busy: exclusive
multi-node jobs, shared one-node jobs and a few GPU jobs, each with its allocation. The queue
mixes one-node jobs (1-32 cores), multi-node jobs, exclusive jobs, a few GPU jobs and
processor-count requests. The processor-count twin has the same jobs with
``procs = Request.procs(32)``, the same free cores and no nodes.

Printed per case: the median and max of ``--repeat`` timed calls after one warm-up call
(``first call``: numba compile or on-disk cache load, reported separately), and the same for
the compiled kernel alone (:func:`rush.core.scheduling_pass.scheduling_pass` on the inputs
``schedule()`` built, copied fresh for each call), so ``schedule - kernel`` is the Python
around it (snapshot checks, the node view, decisions and their reasons).

Run: ``python benchmarks/bench_nodes.py [--pending 10000] [--repeat 7] [--profile]``
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace

import bench_args
import numpy as np

import rush.core.schedule as core_schedule
from rush.core import CoreConfig, PendingJob, RunningJob, RuntimeClass, Snapshot
from rush.core.resources import Node, Request, Slot
from rush.core.schedule import schedule

NODES = 1_000
PODS = 32
CORES = 32
GPUS = 4
NOW = 1_000_000.0


def make_nodes(count: int = NODES, pods: int = PODS) -> tuple[Node, ...]:
    """``count`` nodes in ``pods`` pods; the last node of each pod carries GPUs (partition gpu too)."""
    nodes = []
    width = max(4, len(str(count - 1)))
    for i in range(count):
        pod = i * pods // count
        last_of_pod = (i + 1) * pods // count != pod
        nodes.append(
            Node(
                f"n{i:0{width}d}",
                CORES,
                gpus=GPUS if last_of_pod else 0,
                partitions=("batch", "gpu") if last_of_pod else ("batch",),
                leaf=pod,
            )
        )
    return tuple(nodes)


def make_running(nodes: tuple[Node, ...], rng: np.random.Generator) -> tuple[RunningJob, ...]:
    """Running jobs with allocations on about half the nodes (chosen at random)."""
    busy = rng.permutation(len(nodes))[: len(nodes) // 2]
    gpu_nodes = [i for i, n in enumerate(nodes) if n.gpus]
    running: list[RunningJob] = []
    k = 0
    while k < len(busy):
        kind = rng.random()
        job_id = 1_000_000 + len(running)
        start = NOW - float(rng.integers(0, 80_000))
        limit = float(rng.integers(3_600, 172_800))
        if kind < 0.4:  # exclusive multi-node
            span = [int(i) for i in busy[k : k + int(rng.integers(2, 17))]]
            request = Request(len(span), CORES, exclusive=True, partition="batch")
            allocation = tuple(Slot(i, CORES) for i in span)
        else:  # shared one-node: two or three jobs on the node
            span = [int(busy[k])]
            allocation = ()
            for _ in range(int(rng.integers(2, 4))):
                cores = int(rng.integers(1, CORES // 3))
                request = Request(1, cores, partition="batch")
                running.append(_running(job_id, start, limit, request, (Slot(span[0], cores),)))
                job_id = 1_000_000 + len(running)
        if allocation:
            running.append(_running(job_id, start, limit, request, allocation))
        k += len(span)
    # A few GPU jobs on the GPU nodes that are still idle.
    held = {s.node for r in running for s in r.allocation}
    for i in [g for g in gpu_nodes if g not in held][:6]:
        request = Request(1, 8, gpus_per_node=2, partition="gpu")
        running.append(_running(1_000_000 + len(running), NOW - 100.0, 7_200.0, request, (Slot(i, 8, 2),)))
    return tuple(running)


def _running(
    job_id: int, start: float, limit: float, request: Request, allocation: tuple[Slot, ...]
) -> RunningJob:
    procs = sum(s.cores for s in allocation)
    return RunningJob(job_id, start, procs, limit, request=request, allocation=allocation)


def make_request(rng: np.random.Generator) -> tuple[Request | None, int]:
    """One pending job's request and processor count: one-node 50 %, multi-node 25 %,
    exclusive 15 %, processor-count 8 %, GPU 2 %."""
    kind = rng.random()
    if kind < 0.50:
        request = Request(1, int(rng.integers(1, CORES + 1)), partition="batch")
    elif kind < 0.75:
        request = Request(int(rng.integers(2, 65)), int(rng.choice([8, 16, 32])), partition="batch")
    elif kind < 0.90:
        request = Request(int(rng.integers(1, 33)), CORES, exclusive=True, partition="batch")
    elif kind < 0.98:
        procs = int(2 ** rng.integers(0, 10))
        return Request(0, procs), procs
    else:
        request = Request(
            int(rng.integers(1, 5)), 8, gpus_per_node=int(rng.integers(1, GPUS + 1)), partition="gpu"
        )
    return request, request.procs(CORES)


def make_snapshot(pending: int, seed: int = 1, nodes: int = NODES, pods: int = PODS) -> Snapshot:
    """The node-level snapshot: ``pending`` jobs on ``nodes`` nodes in ``pods`` pods."""
    rng = np.random.default_rng(seed)
    machine = make_nodes(nodes, pods)
    running = make_running(machine, rng)
    jobs = []
    for i in range(pending):
        request, procs = make_request(rng)
        jobs.append(
            PendingJob(
                job_id=i + 1,
                submit=NOW - float(rng.integers(0, 400_000)),
                procs=procs,
                requested_time=float(rng.integers(60, 86_400)),
                runtime_class=RuntimeClass(int(rng.integers(0, 2))),
                user=int(rng.integers(0, 300)),
                request=request,
            )
        )
    total = nodes * CORES
    busy = sum(r.procs for r in running)
    return Snapshot(NOW, total, total - busy, tuple(jobs), running, nodes=machine)


def make_snapshots(pending: int, seed: int = 1) -> tuple[Snapshot, Snapshot]:
    """The node-level snapshot and its processor-count twin (same jobs, no nodes)."""
    on_nodes = make_snapshot(pending, seed)
    as_procs = Snapshot(
        on_nodes.now,
        on_nodes.total_procs,
        on_nodes.free_procs,
        tuple(replace(j, request=None) for j in on_nodes.pending),
        tuple(replace(r, request=None, allocation=()) for r in on_nodes.running),
    )
    return on_nodes, as_procs


def _fresh(value):
    """A deep copy of the pass's inputs (named tuples of arrays), since the pass writes to them."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_fresh(v) for v in value))
    return value


@contextmanager
def captured_pass() -> Iterator[list[tuple]]:
    """Record (copies of) the arguments ``schedule()`` hands the compiled pass."""
    calls: list[tuple] = []
    original = core_schedule.scheduling_pass

    def recording(*args):
        calls.append(tuple(_fresh(a) for a in args))
        return original(*args)

    core_schedule.scheduling_pass = recording
    try:
        yield calls
    finally:
        core_schedule.scheduling_pass = original


def timed(call: Callable[[], object], repeat: int) -> tuple[float, float, float, object]:
    """First call (compile or cache load), then median and max of ``repeat`` calls, in ms."""
    t0 = time.perf_counter()
    result = call()
    first = time.perf_counter() - t0
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - t0)
    return first * 1e3, statistics.median(times) * 1e3, max(times) * 1e3, result


def kernel_timing(snapshot: Snapshot, config: CoreConfig, repeat: int) -> tuple[float, float]:
    """Median and max ms of the compiled pass alone on the inputs schedule() builds."""
    with captured_pass() as calls:
        schedule(snapshot, config, explain_priorities=False)
    args = calls[0]
    times = []
    for _ in range(repeat + 1):
        fresh = tuple(_fresh(a) for a in args)
        t0 = time.perf_counter()
        core_schedule.scheduling_pass(*fresh)
        times.append(time.perf_counter() - t0)
    times = times[1:]
    return statistics.median(times) * 1e3, max(times) * 1e3


def report(label: str, snapshot: Snapshot, config: CoreConfig, repeat: int, target: str) -> float:
    first, median, worst, decisions = timed(lambda: schedule(snapshot, config), repeat)
    k_median, k_worst = kernel_timing(snapshot, config, repeat)
    kinds = {k: len(decisions.of(k)) for k in ("start", "backfill", "reserve", "infeasible")}
    print(
        f"{label:44} {len(snapshot.pending):>6} {median:8.1f} {worst:8.1f} {k_median:8.1f} {k_worst:8.1f} "
        f"{first:9.0f}  {target:8} {kinds}"
    )
    return median


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--conservative-pending", type=bench_args.non_negative, default=1_000)
    parser.add_argument("--repeat", type=bench_args.positive, default=7)
    parser.add_argument("--profile", action="store_true", help="cProfile one EASY first-fit call on nodes")
    args = parser.parse_args()
    on_nodes, as_procs = make_snapshots(args.pending)
    small_nodes, small_procs = make_snapshots(args.conservative_pending, seed=2)
    print(
        f"load average {os.getloadavg()[0]:.2f}; {NODES} nodes x {CORES} cores in {PODS} pods, "
        f"{len(on_nodes.running)} running jobs on {len({s.node for r in on_nodes.running for s in r.allocation})} "
        f"nodes, {on_nodes.free_procs} of {on_nodes.total_procs} cores free"
    )
    print(
        f"{'case':44} {'jobs':>6} {'median':>8} {'max':>8} {'kernel':>8} {'k max':>8} {'first ms':>9}  "
        f"{'target':8} decisions"
    )
    easy = CoreConfig.from_names("FCFS", "easy", 200_000)
    wfp3 = CoreConfig.from_names("WFP3", "easy", 200_000)
    cons = CoreConfig.from_names("FCFS", "conservative", 200_000)
    report("EASY FCFS processor counts (reference)", as_procs, easy, args.repeat, "ref")
    report("EASY FCFS nodes first-fit", on_nodes, easy, args.repeat, "<=100 ms")
    report("EASY FCFS nodes topology", on_nodes, replace(easy, placement="topology"), args.repeat, "<=100 ms")
    report("EASY WFP3 processor counts (reference)", as_procs, wfp3, args.repeat, "ref")
    report("EASY WFP3 nodes first-fit", on_nodes, wfp3, args.repeat, "<=100 ms")
    report("conservative FCFS processor counts (ref)", small_procs, cons, args.repeat, "ref")
    report("conservative FCFS nodes first-fit", small_nodes, cons, args.repeat, "report")
    print(f"load average {os.getloadavg()[0]:.2f} after the run")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(schedule, on_nodes, easy)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(18)


if __name__ == "__main__":
    main()
