"""The simulator's Slurm mode: a workload through Slurm's main scheduler and backfill as a
site's slurm.conf sets them (:mod:`rush.core.slurm_backfill` decides; this loop keeps time).

Events: submits, ends, and backfill cycles on Slurm's ``bf_interval`` ticks: the tick at or
after each change (backfill.c's ``_more_work``), after that tick's submits and ends. The main
scheduler runs after every submit and whenever finished jobs' CPUs return, which is at
slurmctld's next whole-second tick after the job's end (:func:`rush.core.slurm_backfill.next_tick`). Times are kept exactly; the start times reported
are what slurmctld records, whole seconds of its clock (``clock_offset``: the epoch second of
the workload's time 0, so that a replay's ticks and ``bf_resolution`` rounding fall where
Slurm's did). Jobs are ordered by the policy's time-independent keys (FCFS: submit time, then
job id, as Slurm with every priority weight 0).
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass

import numpy as np

from rush.core.config import CoreConfig
from rush.core.ordering import static_keys
from rush.core.slurm_backfill import (
    PendingJob,
    RunningJob,
    SlurmScheduler,
    backfill_pass,
    backfill_tick,
    main_pass,
    next_tick,
)
from rush.errors import RushError
from rush.simulator.result import SimResult
from rush.workload.model import Workload

END, SUBMIT, BACKFILL = 0, 1, 2


@dataclass(frozen=True)
class SlurmClock:
    """Where the workload's time 0 falls on Slurm's clock (epoch seconds): a replay's start."""

    offset: float = 0.0


def _order(workload: Workload, config: CoreConfig) -> np.ndarray:
    policy = config.policy
    if policy.dynamic:
        raise RushError(
            f"the Slurm mode orders jobs by a time-independent policy, not {policy.name}",
            where="policy",
            fix="simulate FCFS (Slurm with every priority weight 0) or a static policy such as SPF",
        )
    keys = static_keys(
        policy.code,
        policy.weight_array(),
        0.0,
        np.ascontiguousarray(workload.submit, dtype=np.float64),
        np.ascontiguousarray(workload.procs, dtype=np.int64),
        np.ascontiguousarray(workload.requested_time, dtype=np.float64),
    )
    return np.lexsort((workload.job_id, workload.submit, keys))


def simulate_slurm(
    workload: Workload,
    slurm: SlurmScheduler,
    config: CoreConfig | None = None,
    clock: SlurmClock = SlurmClock(),
) -> SimResult:
    """Run ``workload`` on ``slurm``'s partition; the result as the simulator's (recorded starts)."""
    config = config or CoreConfig()
    n = len(workload)
    if n and int(workload.procs.max()) > slurm.cpus:
        raise RushError(
            f"a job needs {int(workload.procs.max())} CPUs, the Slurm partition has {slurm.cpus}",
            where="--slurm-conf",
            fix="give the slurm.conf of the machine the trace ran on, or scale the trace to it",
        )
    rank = np.empty(n, dtype=np.int64)
    rank[_order(workload, config)] = np.arange(n)
    submit = workload.submit.astype(np.float64)
    runtime = np.minimum(workload.runtime, workload.requested_time).astype(np.float64)
    limit = workload.requested_time.astype(np.float64)
    procs = workload.procs.astype(np.int64)
    start = np.full(n, -1.0)
    end = np.full(n, -1.0)
    backfilled = np.zeros(n, dtype=bool)
    started = np.zeros(n, dtype=bool)
    free = np.full(slurm.nodes, slurm.cpus_per_node, dtype=np.int64)
    running: dict[int, RunningJob] = {}
    waiting: list[int] = []  # job indices, kept in rank order
    events: list[tuple[float, int, int]] = [(float(submit[k]), SUBMIT, k) for k in range(n)]
    heapq.heapify(events)
    next_cycle = math.inf
    last_cycle = -math.inf
    offset = clock.offset
    t0 = time.perf_counter()

    def record(k: int, at: float, by_backfill: bool) -> None:
        started[k] = True
        # slurmctld's whole-second start_time, never before the (recorded) submit.
        start[k] = max(math.floor(at + offset) - offset, submit[k])
        end[k] = at + runtime[k]
        backfilled[k] = by_backfill
        heapq.heappush(events, (release(float(end[k])), END, k))

    def release(at: float) -> float:
        # A finished job's CPUs return to the scheduler at slurmctld's next tick after its end.
        return next_tick(at + offset, slurm.tick) - offset

    def limit_end(k: int) -> float:
        return start[k] + offset + limit[k]

    def pending() -> list[PendingJob]:
        return [PendingJob(k, int(procs[k]), float(limit[k])) for k in waiting]

    def schedule_cycle(now: float) -> float:
        # The backfill cycle that sees a change at ``now``: the bf_interval tick at or after
        # it on Slurm's clock (after that tick's submits and returning CPUs: events sort so),
        # one cycle per tick (a cycle's own starts wait for the next).
        return max(backfill_tick(now + offset, slurm.bf_interval, last_cycle + offset) - offset, now)

    while events:
        now, kind, k = heapq.heappop(events)
        changed = False
        if kind == BACKFILL:
            if now != next_cycle:
                continue  # superseded
            next_cycle = math.inf
            last_cycle = now
            if waiting:
                runs = [RunningJob(j, r.alloc, limit_end(j)) for j, r in running.items()]
                chosen, _ = backfill_pass(now + offset, free, runs, pending(), slurm)
                for job, alloc in chosen:
                    waiting.remove(job.job)
                    running[job.job] = RunningJob(job.job, alloc, 0.0)
                    record(job.job, now, True)
                    changed = True
        elif kind == END:
            free += running.pop(k).alloc
            changed = True
        else:
            waiting.append(k)
            waiting.sort(key=lambda j: rank[j])
            changed = True
        if kind != BACKFILL and waiting:
            for job, alloc in main_pass(free, pending()):
                waiting.remove(job.job)
                running[job.job] = RunningJob(job.job, alloc, 0.0)
                record(job.job, now, False)
        if changed and waiting and next_cycle == math.inf:
            next_cycle = schedule_cycle(now)
            heapq.heappush(events, (next_cycle, BACKFILL, -1))
    if not started.all():
        raise RushError(
            f"{int(np.sum(~started))} jobs never started in the Slurm mode",
            where="--slurm-conf",
            fix="check that every job fits the partition (CPUs, time limits within bf_window)",
        )
    return SimResult(
        job_id=workload.job_id,
        submit=submit,
        start=start,
        end=end,
        procs=procs,
        requested_time=limit,
        runtime=runtime,
        backfilled=backfilled,
        killed=workload.runtime > workload.requested_time,
        machine_procs=int(slurm.cpus),
        info={
            "trace": workload.name,
            "policy": config.policy.name,
            "backfill": "slurm",
            "slurm": {k: getattr(slurm, k) for k in slurm.__dataclass_fields__},
            "simulation_seconds": time.perf_counter() - t0,
            "unstarted": 0,
        },
    )
