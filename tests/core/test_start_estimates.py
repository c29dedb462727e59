"""Start-time estimates: the core's projection of the queue, checked against the simulator
(the same core run forward) where the two must agree, and against the plan itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.policies import parse_policy
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, RuntimeClass, Snapshot
from rush.core.start_estimates import project_starts
from rush.simulator.engine import simulate
from rush.workload.model import Workload

MACHINE = 64


def _queue(seed: int, n: int = 40) -> Workload:
    rng = np.random.default_rng(seed)
    procs = rng.choice([1, 2, 4, 8, 16, 32, 64], size=n)
    runtime = rng.integers(10, 5000, size=n).astype(float)
    return Workload(
        job_id=np.arange(1, n + 1),
        submit=np.zeros(n),
        runtime=runtime,
        requested_time=runtime.copy(),
        procs=procs.astype(np.int64),
        user=np.full(n, -1),
        machine_procs=MACHINE,
    )


def _snapshot(w: Workload) -> Snapshot:
    pending = tuple(
        PendingJob(int(w.job_id[k]), float(w.submit[k]), int(w.procs[k]), float(w.requested_time[k]))
        for k in range(len(w))
    )
    return Snapshot(now=0.0, total_procs=MACHINE, free_procs=MACHINE, pending=pending)


@pytest.mark.parametrize("mode", ["conservative", "none"])
@pytest.mark.parametrize("policy", ["FCFS", "SPF", "LQF"])
@pytest.mark.parametrize("seed", range(8))
def test_with_exact_runtimes_and_no_arrivals_every_estimate_comes_true(
    mode: str, policy: str, seed: int
) -> None:
    # Conservative backfilling never delays a reservation, and list scheduling starts in order,
    # so a queue whose jobs run exactly their estimates starts exactly as projected.
    w = _queue(seed)
    config = CoreConfig(policy=parse_policy(policy), backfill=mode, threshold=None)
    decided = schedule(_snapshot(w), config)
    simulated = simulate(w, config)
    for k in range(len(w)):
        assert decided.estimated_start[int(w.job_id[k])] == pytest.approx(simulated.start[k]), k


@pytest.mark.parametrize("seed", range(8))
def test_easy_projection_keeps_the_head_by_its_shadow_time(seed: int) -> None:
    w = _queue(seed)
    config = CoreConfig(policy=parse_policy("FCFS"), backfill="easy", threshold=None)
    decided = schedule(_snapshot(w), config)
    heads = [d for d in decided.of("reserve")]
    assert len(heads) == 1
    # The head is booked before anything behind it: its projection is its shadow time.
    assert decided.estimated_start[heads[0].job_id] == pytest.approx(heads[0].value)
    started = set(decided.job_ids("start")) | set(decided.job_ids("backfill"))
    assert {j for j, b in decided.estimate_basis.items() if b == "now"} == started


def _peak_use(starts: np.ndarray, procs: np.ndarray, duration: np.ndarray, base) -> int:
    """Largest number of processors the bookings plus the running jobs hold at any time."""
    run_end, run_procs = base
    times = np.concatenate([starts[np.isfinite(starts)], run_end, [0.0]])
    peak = 0
    for t in times:
        on = np.isfinite(starts) & (starts <= t) & (starts + duration > t)
        held = run_procs[run_end > t].sum()
        peak = max(peak, int(procs[on].sum() + held))
    return peak


@pytest.mark.parametrize("in_order", [False, True])
@pytest.mark.parametrize("seed", range(10))
def test_projection_never_books_more_than_the_machine(in_order: bool, seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    n, nr = 60, 12
    procs = rng.integers(1, 40, size=n).astype(np.int64)
    procs[0] = 200  # wider than the machine: never
    duration = rng.uniform(1, 1000, size=n)
    run_end = np.sort(rng.uniform(1, 800, size=nr))
    run_procs = np.full(nr, 8, dtype=np.int64)
    free = 100 - int(run_procs.sum())
    order = rng.permutation(n).astype(np.int64)
    starts = project_starts(0.0, free, run_end, run_procs, order, procs, duration, in_order)
    assert starts[0] == math.inf
    assert np.all(np.isfinite(starts[1:]))
    assert _peak_use(starts, procs, duration, (run_end, run_procs)) <= 100
    if in_order:
        ordered = starts[order[order != 0]]
        assert np.all(np.diff(ordered) >= 0)


def test_a_small_predicted_job_is_expected_to_end_by_the_divider() -> None:
    running = (
        RunningJob(10, 0.0, 8, 10_000.0, runtime_class=RuntimeClass.SMALL),
        RunningJob(11, 0.0, 8, 10_000.0, runtime_class=RuntimeClass.LARGE),
    )
    pending = (PendingJob(1, 50.0, 8, 100.0),)
    snapshot = Snapshot(now=100.0, total_procs=16, free_procs=0, pending=pending, running=running)
    with_model = schedule(snapshot, CoreConfig(divider=600.0))
    # Job 10 is predicted small: it frees its processors at the divider, not at its limit.
    assert with_model.estimated_start[1] == 600.0
    assert with_model.waits_behind[1] == 10
    without = schedule(snapshot, CoreConfig())
    assert without.estimated_start[1] == 10_000.0


def test_a_job_that_can_never_fit_has_no_estimate() -> None:
    pending = (PendingJob(1, 0.0, 32, 100.0), PendingJob(2, 1.0, 4, 100.0))
    decided = schedule(Snapshot(now=0.0, total_procs=16, free_procs=16, pending=pending), CoreConfig())
    assert decided.estimated_start[1] == math.inf
    assert decided.estimate_basis[1] == "never"
    assert decided.estimated_start[2] == 0.0
