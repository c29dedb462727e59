"""One skip semantics: a daemon-like loop around ``schedule()`` reproduces the simulator.

The loop below does what the daemon does with the core's decisions (start what it starts,
count one skip per ``skip`` decision, carry the count into the next snapshot), on exact
runtimes. It must give the simulator's start times and skip counts job by job.
"""

from __future__ import annotations

import numpy as np
import pytest

from rush.core import CoreConfig, PendingJob, RunningJob, Snapshot
from rush.core.schedule import schedule
from rush.sim.engine import SimInputs, simulate
from tests.core.helpers import workload

VARIABLE_UNTIL = 1e12  # the variability interval [-1, VARIABLE_UNTIL) of the simulation


def _drive(w, config: CoreConfig, sensitive: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


@pytest.mark.parametrize("policy", ["FCFS", "SPF", "WFP3"])
@pytest.mark.parametrize("backfill", ["easy", "none"])
def test_daemon_like_loop_gives_the_simulators_starts_and_skips(policy, backfill):
    rng = np.random.default_rng(11)
    n = 60
    submit = np.sort(rng.integers(0, 300, n)).astype(float)
    procs = rng.integers(1, 7, n)
    runtime = rng.integers(5, 200, n).astype(float)
    req = runtime * rng.uniform(1.0, 2.5, n)
    w = workload(12, list(zip(submit, procs, runtime, req, strict=True)))
    sensitive = rng.random(n) < 0.3
    config = CoreConfig.from_names(policy, backfill, skip_limit=3)
    sim = simulate(
        w, config, SimInputs(sensitive=sensitive, variable_intervals=np.array([[-1.0, VARIABLE_UNTIL]]))
    )
    start, skips = _drive(w, config, sensitive)
    np.testing.assert_array_equal(start, sim.start)
    np.testing.assert_array_equal(skips, sim.skips)
    # The scenario exercises the rule: some jobs were skipped, some up to the limit.
    assert skips.sum() > 0 and skips.max() == 3
    assert np.all(skips[~sensitive] == 0)
