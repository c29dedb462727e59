"""One pass for every shell: the live ``schedule()``, driven pass by pass, is the simulator.

The driver below is an idealised daemon on an exact RJMS: it polls at the simulator's event
times (arrivals, run ends, the end of a variability interval, and the moment a killable job
reaches the divider), builds a snapshot with the state the daemon keeps in its journal (skip
counts, standing conservative reservations, requeue counts, speculative attempts), and carries
out the core's decisions. The RJMS enforces each run's time limit (walltime or current
speculative reservation); a run killed at a reservation with a successor is requeued with
the next one (:mod:`rush.core.speculative_reservations`). Every backfilling mode, with runtime classes,
false-small kills, skip-with-limit and speculative reservations all on, must give the
simulator's starts, ends, kills, skips and first reservations job by job.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core import CoreConfig, PendingJob, RunningJob, RuntimeClass, Snapshot
from rush.core.false_small_kill import is_killable
from rush.core.schedule import schedule
from rush.core.speculative_reservations import next_attempt, requeue_after_kill, run_limit
from rush.simulator.engine import SimInputs, simulate
from tests.core.helpers import workload

VARIABLE_UNTIL = 2_000.0  # sensitive jobs are predicted to vary on [-1, VARIABLE_UNTIL)
DIVIDER = 150.0


class Driver:
    """The daemon's side: per-job state between passes, and the RJMS's runs."""

    def __init__(self, w, inputs: SimInputs, config: CoreConfig) -> None:
        self.w, self.inputs, self.config = w, inputs, config
        n = len(w)
        self.start = np.full(n, -1.0)
        self.end = np.full(n, -1.0)
        self.running_until = np.full(n, -math.inf)  # when the RJMS ends the current run
        self.skips = np.zeros(n, dtype=int)
        self.reserved_at = np.full(n, math.inf)
        self.first_reservation = np.full(n, math.inf)
        self.cls = inputs.runtime_class.copy()
        self.requeues = np.zeros(n, dtype=int)
        self.attempt = np.zeros(n, dtype=int)
        self.reservation_kills = np.zeros(n, dtype=int)
        self.pending = np.zeros(n, dtype=bool)
        self.running = np.zeros(n, dtype=bool)
        self.index = {int(w.job_id[j]): j for j in range(n)}

    def limit(self, j: int) -> float:
        return run_limit(
            self.inputs.reservations[j],
            self.inputs.reservation_counts[j],
            self.attempt[j],
            self.w.requested_time[j],
        )

    def killable(self, j: int) -> bool:
        c = self.config
        return is_killable(
            c.kill_false_small, self.cls[j], self.inputs.idempotent[j], self.requeues[j], c.max_requeues
        )

    def kill_point(self, j: int) -> float:
        """When the core will find this running job due for a false-small kill (inf: never)."""
        if self.killable(j) and self.running_until[j] > self.start[j] + DIVIDER:
            return self.start[j] + DIVIDER
        return math.inf

    def next_event(self, t_prev: float, next_submit: float) -> float:
        times = [next_submit]
        for j in np.flatnonzero(self.running):
            times += [self.running_until[j], self.kill_point(j)]
        if self.pending.any() and t_prev < VARIABLE_UNTIL:
            times.append(VARIABLE_UNTIL)
        return min(times)

    def finish_runs(self, t: float) -> None:
        """Runs the RJMS ends at t: completions, and kills at a time limit."""
        for j in np.flatnonzero(self.running & (self.running_until <= t)):
            self.running[j] = False
            limit = self.limit(j)
            if self.w.runtime[j] > limit and requeue_after_kill(
                self.attempt[j], self.inputs.reservation_counts[j]
            ):
                self.attempt[j] = next_attempt(self.attempt[j])
                self.reservation_kills[j] += 1
                self.start[j] = self.end[j] = -1.0
                self.pending[j] = True

    def snapshot(self, t: float, kill_due_now: bool) -> Snapshot:
        w, variable_now = self.w, t < VARIABLE_UNTIL
        sensitive = self.inputs.sensitive
        pending = tuple(
            PendingJob(
                int(w.job_id[j]),
                w.submit[j],
                int(w.procs[j]),
                self.limit(j),
                estimate=w.requested_time[j],
                runtime_class=RuntimeClass(int(self.cls[j])),
                idempotent=bool(self.inputs.idempotent[j]),
                variable=bool(sensitive[j]) and variable_now,
                skips=int(self.skips[j]),
                requeues=int(self.requeues[j]),
                reserved_at=float(self.reserved_at[j]),
            )
            for j in np.flatnonzero(self.pending)
        )
        running = tuple(
            RunningJob(
                int(w.job_id[j]),
                self.start[j],
                int(w.procs[j]),
                self.limit(j),
                estimate=w.requested_time[j],
                runtime_class=RuntimeClass(int(self.cls[j])),
                idempotent=bool(self.inputs.idempotent[j]),
                requeues=int(self.requeues[j]),
                submit=w.submit[j],
                skips=int(self.skips[j]),
                variable=bool(sensitive[j]) and variable_now,
            )
            for j in np.flatnonzero(self.running)
        )
        free = int(w.machine_procs) - int(w.procs[self.running].sum())
        return Snapshot(t, int(w.machine_procs), free, pending, running)

    def apply(self, t: float, decided) -> None:
        for d in decided.of("kill"):
            j = self.index[d.job_id]
            self.running[j] = False
            self.pending[j] = True
            self.cls[j] = int(d.requeue_class)
            self.requeues[j] = d.requeues
            self.start[j] = self.end[j] = -1.0
        queued = np.flatnonzero(self.pending)
        self.reserved_at[queued] = math.inf
        for job_id, at in decided.reserved_at.items():
            self.reserved_at[self.index[job_id]] = at
        for d in decided.of("reserve"):
            j = self.index[d.job_id]
            if self.first_reservation[j] == math.inf:  # evidence: the first promised start
                self.first_reservation[j] = d.value
        for d in decided.of("skip"):
            self.skips[self.index[d.job_id]] += 1
        for job_id in decided.job_ids("start") + decided.job_ids("backfill"):
            j = self.index[job_id]
            self.pending[j] = False
            self.running[j] = True
            self.start[j] = t
            # The RJMS ends the run at completion or at its time limit.
            self.running_until[j] = t + min(self.w.runtime[j], self.limit(j))
            self.end[j] = self.running_until[j]
        for j in np.flatnonzero(self.running):
            # A run the core will kill at the divider ends there.
            self.end[j] = min(self.running_until[j], self.kill_point(j))

    def run(self) -> None:
        w, n = self.w, len(self.w)
        nxt, t_prev = 0, -math.inf
        while True:
            t = self.next_event(t_prev, w.submit[nxt] if nxt < n else math.inf)
            if t == math.inf:
                break
            t_prev = t
            self.finish_runs(t)
            while nxt < n and w.submit[nxt] <= t:
                self.pending[nxt] = True
                nxt += 1
            kill_due_now = any(self.kill_point(j) <= t for j in np.flatnonzero(self.running))
            free = int(w.machine_procs) - int(w.procs[self.running].sum())
            # As the simulator: no pass on an empty queue, or on a full machine with no kill.
            if not (self.pending.any() or kill_due_now) or (free <= 0 and not kill_due_now):
                continue
            self.apply(t, schedule(self.snapshot(t, kill_due_now), self.config))


def _scenario(seed: int):
    rng = np.random.default_rng(seed)
    n = 70
    submit = np.sort(rng.integers(0, 2_500, n)).astype(float)
    procs = rng.integers(1, 7, n)
    runtime = rng.integers(5, 400, n).astype(float)
    req = np.ceil(runtime * rng.uniform(1.0, 2.5, n))
    w = workload(12, list(zip(submit, procs, runtime, req, strict=True)))
    k = 3
    seq = np.sort(rng.uniform(20, 300, (n, k)), axis=1) + np.arange(k)[None, :]
    counts = rng.integers(0, k + 1, n) * (rng.random(n) < 0.4)
    inputs = SimInputs(
        runtime_class=rng.integers(0, 2, n),
        idempotent=rng.random(n) < 0.6,
        sensitive=rng.random(n) < 0.3,
        variable_intervals=np.array([[-1.0, VARIABLE_UNTIL]]),
        reservations=seq,
        reservation_counts=counts,
    )
    return w, inputs


@pytest.mark.parametrize("seed", [3, 17])
@pytest.mark.parametrize("policy", ["FCFS", "SPF", "WFP3"])
@pytest.mark.parametrize("backfill", ["easy", "conservative", "none"])
def test_live_passes_equal_the_simulator_with_every_rule_on(backfill, policy, seed):
    w, inputs = _scenario(seed)
    config = CoreConfig.from_names(
        policy,
        backfill,
        threshold=1_500.0,
        use_classes=True,
        divider=DIVIDER,
        kill_false_small=True,
        skip_limit=3,
    )
    sim = simulate(w, config, inputs)
    live = Driver(w, inputs, config)
    live.run()
    np.testing.assert_array_equal(live.start, sim.start)
    np.testing.assert_array_equal(live.end, sim.end)
    np.testing.assert_array_equal(live.skips, sim.skips)
    np.testing.assert_array_equal(live.requeues, sim.requeues)
    np.testing.assert_array_equal(live.reservation_kills, sim.attributes["reservation_kills"])
    if backfill != "none":
        np.testing.assert_array_equal(live.first_reservation, sim.attributes["first_reservation"])
    # The scenario exercises every rule: skips up to the limit, false-small kills,
    # kills at a speculative reservation, and reservations (EASY heads or conservative).
    assert live.skips.max() == 3
    assert live.requeues.sum() > 0
    assert live.reservation_kills.sum() > 0
    if backfill != "none":
        assert np.isfinite(live.first_reservation).sum() > 5
