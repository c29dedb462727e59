"""One daemon cycle's core time (and model time, when a runtime-class model is given)
with 10 000 pending jobs, RJMS I/O excluded. Target: <= 200 ms.

Run: ``python benchmarks/bench_cycle.py [--model MODEL] [--pending 10000]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import bench_args
import numpy as np

from rush.core import CoreConfig, PendingJob, RunningJob, RuntimeClass, Snapshot
from rush.core.schedule import schedule


def make_snapshot(pending: int, running: int, seed: int = 1) -> Snapshot:
    rng = np.random.default_rng(seed)
    now = 1_000_000.0
    jobs = tuple(
        PendingJob(
            job_id=i + 1,
            submit=now - float(rng.integers(0, 400_000)),
            procs=int(2 ** rng.integers(0, 8)),
            requested_time=float(rng.integers(60, 86_400)),
            runtime_class=RuntimeClass(int(rng.integers(0, 2))),
            idempotent=bool(rng.integers(0, 2)),
            variable=bool(rng.random() < 0.05),
            skips=int(rng.integers(0, 12)),
            user=int(rng.integers(0, 300)),
        )
        for i in range(pending)
    )
    run = tuple(
        RunningJob(
            job_id=100_000 + i,
            start=now - float(rng.integers(0, 80_000)),
            procs=int(2 ** rng.integers(0, 6)),
            requested_time=float(rng.integers(60, 86_400)),
            runtime_class=RuntimeClass(int(rng.integers(0, 2))),
            idempotent=bool(rng.integers(0, 2)),
        )
        for i in range(running)
    )
    used = sum(r.procs for r in run)
    return Snapshot(now=now, total_procs=used + 64, free_procs=64, pending=jobs, running=run)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--running", type=bench_args.non_negative, default=2_000)
    parser.add_argument("--repeat", type=bench_args.positive, default=7)
    args = parser.parse_args()
    snapshot = make_snapshot(args.pending, args.running)
    for policy, backfill in (("FCFS", "easy"), ("WFP3", "easy"), ("SAF", "conservative")):
        config = CoreConfig.from_names(
            policy, backfill, 200_000, use_classes=True, kill_false_small=True, divider=3600.0
        )
        schedule(snapshot, config)  # load compiled kernels
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            decisions = schedule(snapshot, config)
            times.append(time.perf_counter() - t0)
        kinds = {k: len(decisions.of(k)) for k in ("start", "backfill", "reserve", "skip", "kill")}
        print(
            f"core cycle {policy:5} {backfill:12} pending={args.pending} running={args.running}: "
            f"median {statistics.median(times) * 1e3:.1f} ms, max {max(times) * 1e3:.1f} ms "
            f"(target 200 ms)  decisions {kinds}"
        )


if __name__ == "__main__":
    main()
