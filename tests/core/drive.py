"""Drive the live schedule() pass by pass over a workload (shared by the live-equals-simulator tests)."""

from __future__ import annotations

import numpy as np

from rush.core import CoreConfig, PendingJob, RunningJob, Snapshot
from rush.core.schedule import schedule


def drive(w, config: CoreConfig, sensitive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(w)
    start = np.full(n, -1.0)
    end = np.full(n, np.inf)
    skips = np.zeros(n, dtype=int)
    index = {int(w.job_id[j]): j for j in range(n)}
    times = sorted(set(w.submit.tolist()))
    done_times: set[float] = set()
    while True:
        candidates = [t for t in times if t not in done_times]
        candidates += [e for e in end[start >= 0].tolist() if e not in done_times]
        # Like the simulator, the end of variability is an event when jobs still wait.
        if VARIABLE_UNTIL not in done_times:
            candidates.append(VARIABLE_UNTIL)
        if not candidates or np.all(start >= 0):
            break
        t = min(candidates)
        done_times.add(t)
        running = tuple(
            RunningJob(int(w.job_id[j]), start[j], int(w.procs[j]), w.requested_time[j])
            for j in range(n)
            if 0 <= start[j] and end[j] > t
        )
        pending = tuple(
            PendingJob(
                int(w.job_id[j]),
                w.submit[j],
                int(w.procs[j]),
                w.requested_time[j],
                variable=bool(sensitive[j]) and t < VARIABLE_UNTIL,
                skips=int(skips[j]),
            )
            for j in range(n)
            if w.submit[j] <= t and start[j] < 0
        )
        if not pending:
            continue
        free = int(w.machine_procs) - sum(r.procs for r in running)
        decisions = schedule(Snapshot(t, int(w.machine_procs), free, pending, running), config)
        for job_id in decisions.job_ids("start") + decisions.job_ids("backfill"):
            j = index[job_id]
            start[j] = t
            end[j] = t + min(w.runtime[j], w.requested_time[j])
        for job_id in decisions.job_ids("skip"):
            skips[index[job_id]] += 1
    return start, skips


VARIABLE_UNTIL = 1e12  # the variability interval [-1, VARIABLE_UNTIL) of the simulation
