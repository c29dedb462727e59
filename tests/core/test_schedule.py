"""The daemon's entry point gives the simulator's decisions, with reasons."""

from __future__ import annotations

import numpy as np

from rush.core import CoreConfig, PendingJob, RunningJob, RuntimeClass, Snapshot, schedule
from rush.sim.engine import simulate
from tests.core.helpers import workload


def test_schedule_matches_simulator_first_pass():
    # The EXTRA case at t=4: the same starts/backfills as the simulator makes at t=4.
    snap = Snapshot(
        now=4,
        total_procs=10,
        free_procs=2,
        pending=(
            PendingJob(2, 1, 8, 50),
            PendingJob(4, 3, 2, 500),
            PendingJob(5, 4, 1, 90),
        ),
        running=(RunningJob(1, 0, 6, 100), RunningJob(3, 2, 2, 500)),
    )
    decisions = schedule(snap, CoreConfig())
    assert decisions.order == [2, 4, 5]
    assert decisions.priority == {2: 3, 4: 2, 5: 1}
    assert decisions.job_ids("backfill") == [5]
    assert decisions.job_ids("start") == []
    (reserve,) = decisions.of("reserve")
    assert reserve.job_id == 2 and reserve.value == 100
    assert "shadow time t=100" in reserve.reason
    assert "ends by its estimate" in decisions.of("backfill")[0].reason


def test_kill_decision_only_for_opted_in_predicted_small_past_divider():
    running = (
        RunningJob(1, 0, 1, 1000, runtime_class=RuntimeClass.SMALL, idempotent=True),
        RunningJob(2, 0, 1, 1000, runtime_class=RuntimeClass.SMALL, idempotent=False),
        RunningJob(3, 0, 1, 1000, runtime_class=RuntimeClass.LARGE, idempotent=True),
        RunningJob(4, 500, 1, 1000, runtime_class=RuntimeClass.SMALL, idempotent=True),
        RunningJob(5, 0, 1, 1000, runtime_class=RuntimeClass.SMALL, idempotent=True, requeues=1),
    )
    snap = Snapshot(now=700, total_procs=8, free_procs=3, running=running)
    decisions = schedule(snap, CoreConfig(kill_false_small=True, divider=600.0))
    assert decisions.job_ids("kill") == [1]
    assert "requeue as large" in decisions.of("kill")[0].reason
    assert schedule(snap, CoreConfig()).job_ids("kill") == []


def test_skip_all_flagged_pending_jobs_below_limit():
    pending = (
        PendingJob(1, 0, 1, 10, variable=True, skips=0),
        PendingJob(2, 0, 1, 10, variable=True, skips=3),
        PendingJob(3, 0, 64, 10, variable=True, skips=1),  # does not fit now: held anyway
        PendingJob(4, 0, 1, 10),
    )
    snap = Snapshot(now=10, total_procs=64, free_procs=4, pending=pending)
    decisions = schedule(snap, CoreConfig(skip_limit=3))
    assert sorted(decisions.job_ids("skip")) == [1, 3]
    assert decisions.job_ids("start") == [2]
    # J3 heads the queue (it does not fit), so J4 starts as a backfill.
    assert decisions.job_ids("backfill") == [4]


def test_classes_order_small_first_after_starved():
    pending = (
        PendingJob(1, 0, 1, 10, runtime_class=RuntimeClass.LARGE),
        PendingJob(2, 5, 1, 10, runtime_class=RuntimeClass.SMALL),
        PendingJob(3, -300_000, 1, 10, runtime_class=RuntimeClass.LARGE),
    )
    snap = Snapshot(now=10, total_procs=1, free_procs=0, pending=pending)
    decisions = schedule(snap, CoreConfig(use_classes=True))
    assert decisions.order == [3, 2, 1]


def test_schedule_and_simulator_agree_on_a_random_queue():
    rng = np.random.default_rng(7)
    n = 60
    submit = np.sort(rng.integers(0, 50, n)).astype(float)
    procs = rng.integers(1, 9, n)
    req = rng.integers(10, 500, n).astype(float)
    w = workload(16, list(zip(submit, procs, req, req, strict=True)))
    sim = simulate(w, CoreConfig.from_names("SAF", "easy"))
    # Rebuild the snapshot at t=50 from the simulation and ask the core what to start.
    t = 50.0
    running = tuple(
        RunningJob(int(w.job_id[j]), sim.start[j], int(w.procs[j]), w.requested_time[j])
        for j in range(n)
        if sim.start[j] < t <= sim.end[j] - 1e-9 or (sim.start[j] < t < sim.end[j])
    )
    pending = tuple(
        PendingJob(int(w.job_id[j]), w.submit[j], int(w.procs[j]), w.requested_time[j])
        for j in range(n)
        if w.submit[j] <= t and sim.start[j] >= t
    )
    free = 16 - sum(r.procs for r in running)
    decisions = schedule(
        Snapshot(now=t, total_procs=16, free_procs=free, pending=pending, running=running),
        CoreConfig.from_names("SAF", "easy"),
    )
    started_by_sim = {int(w.job_id[j]) for j in range(n) if sim.start[j] == t}
    started_by_core = set(decisions.job_ids("start")) | set(decisions.job_ids("backfill"))
    # The simulator's pass at t=50 sees the same state only if no event happened exactly at t;
    # jobs ending at t have already left `running` above, as completions precede the pass.
    assert started_by_core == started_by_sim
