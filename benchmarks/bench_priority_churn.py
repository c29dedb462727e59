"""SiteFactor updates per daemon cycle: absolute priority values against rank-based ones.

A 10 000-job queue; each 60 s cycle, 100 jobs arrive and the 100 at the top of the core's
order leave (they start). An update is a job whose value differs from the one last applied
(a new job counts as one). The target (issue 8): updates per cycle <= arrivals + the jobs
whose score crossed a quantum (their quantised wait moved to the next grid point, or they
crossed the starvation threshold). The reference is the previous design, ``n - rank``.

Run: ``python benchmarks/bench_priority_churn.py [--queue 10000] [--arrivals 100] [--cycles 20]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import bench_args
import numpy as np

from rush.core import CoreConfig, PendingJob, Snapshot
from rush.core.policies import parse_policy, quantised_wait
from rush.core.schedule import schedule

ORIGIN = 1.7e9
CYCLE = 60.0


def _jobs(rng: np.random.Generator, n: int, now: float, first_id: int, spread: float) -> list[PendingJob]:
    submit = now - rng.uniform(0.0, spread, n)
    return [
        PendingJob(
            first_id + k,
            float(submit[k]),
            int(2 ** rng.integers(0, 9)),
            float(rng.integers(60, 86_400)),
        )
        for k in range(n)
    ]


def _crossings(jobs: list[PendingJob], before: float, after: float, config: CoreConfig) -> int:
    """Jobs whose own score moved to another quantum between two cycles."""
    dynamic = parse_policy(config.policy.name if config.policy.name != "LINEAR" else "FCFS").dynamic
    count = 0
    for j in jobs:
        starved = config.threshold is not None and (before - j.submit) <= config.threshold < (
            after - j.submit
        )
        moved = dynamic and (
            quantised_wait(before - j.submit, config.wait_quantum)
            != quantised_wait(after - j.submit, config.wait_quantum)
        )
        count += bool(starved or moved)
    return count


def run(policy: str, queue: int, arrivals: int, cycles: int, wait_quantum: float) -> dict[str, float]:
    rng = np.random.default_rng(1)
    config = CoreConfig.from_names(policy, "easy", threshold=200_000.0, wait_quantum=wait_quantum)
    now = ORIGIN + 10 * 86_400
    jobs = _jobs(rng, queue, now, 1, spread=250_000.0)
    next_id = queue + 1
    applied: dict[int, int] = {}
    applied_rank: dict[int, int] = {}
    updates, rank_updates, bound, seconds = [], [], [], []
    for cycle in range(cycles + 1):
        started = time.perf_counter()
        decisions = schedule(
            Snapshot(now=now, total_procs=4096, free_procs=0, pending=tuple(jobs), time_origin=ORIGIN), config
        )
        seconds.append(time.perf_counter() - started)
        ranks = {job_id: len(decisions.order) - r for r, job_id in enumerate(decisions.order)}
        changed = sum(applied.get(j) != v for j, v in decisions.priority.items())
        changed_rank = sum(applied_rank.get(j) != v for j, v in ranks.items())
        if cycle > 0:  # cycle 0 sets every value once
            updates.append(changed)
            rank_updates.append(changed_rank)
        applied, applied_rank = dict(decisions.priority), ranks
        # The top of the order starts; new jobs arrive during the next cycle.
        leaving = set(decisions.order[:arrivals])
        staying = [j for j in jobs if j.job_id not in leaving]
        later = now + CYCLE
        if cycle < cycles:
            bound.append(arrivals + _crossings(staying, now, later, config))
        arriving = _jobs(rng, arrivals, later, next_id, spread=CYCLE)
        next_id += arrivals
        jobs = staying + arriving
        now = later
    return {
        "updates": statistics.mean(updates),
        "bound": statistics.mean(bound[: len(updates)]),
        "within": all(u <= b for u, b in zip(updates, bound, strict=False)),
        "rank": statistics.mean(rank_updates),
        "core_ms": 1e3 * statistics.median(seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queue", type=bench_args.positive, default=10_000)
    parser.add_argument("--arrivals", type=bench_args.non_negative, default=100)
    parser.add_argument("--cycles", type=bench_args.positive, default=20)
    parser.add_argument("--wait-quantum", type=bench_args.positive_number, default=60.0)
    args = parser.parse_args()
    print(
        f"queue {args.queue} jobs, {args.arrivals} arrivals and {args.arrivals} starts per {CYCLE:.0f} s "
        f"cycle, {args.cycles} cycles, wait quantum {args.wait_quantum:g} s, starvation threshold 200000 s"
    )
    print(f"{'policy':8} {'updates/cycle':>14} {'arrivals+crossings':>19} {'<= bound':>9} "
          f"{'rank-based':>11} {'core ms':>8}")  # fmt: skip
    for policy in ("FCFS", "SPF", "SAF", "F1", "LIN", "WFP3", "UNICEF", "SEXP"):
        r = run(policy, args.queue, args.arrivals, args.cycles, args.wait_quantum)
        print(
            f"{policy:8} {r['updates']:14.1f} {r['bound']:19.1f} {'yes' if r['within'] else 'NO':>9} "
            f"{r['rank']:11.1f} {r['core_ms']:8.0f}"
        )


if __name__ == "__main__":
    main()
