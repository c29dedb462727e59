"""The daemon's entry point gives the simulator's decisions, with reasons."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from rush.core import CoreConfig, PendingJob, RunningJob, RuntimeClass, Snapshot
from rush.core.schedule import schedule
from rush.errors import RushError
from rush.simulator.engine import simulate
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
    # Values run in the core's order, highest first (FCFS: earlier submit, higher value).
    assert decisions.priority[2] > decisions.priority[4] > decisions.priority[5] >= 1
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


def test_skip_only_jobs_the_pass_would_start_now():
    pending = (
        PendingJob(1, 0, 1, 10, variable=True, skips=0),
        PendingJob(2, 0, 1, 10, variable=True, skips=3),  # at the limit: starts
        PendingJob(3, 0, 64, 10, variable=True, skips=1),  # does not fit now: reserved, not skipped
        PendingJob(4, 0, 1, 10),
    )
    running = (RunningJob(9, 0, 60, 100),)
    snap = Snapshot(now=10, total_procs=64, free_procs=4, pending=pending, running=running)
    decisions = schedule(snap, CoreConfig(skip_limit=3))
    assert decisions.job_ids("skip") == [1]
    assert decisions.of("skip")[0].value == 1.0
    assert decisions.job_ids("start") == [2]
    (reserve,) = decisions.of("reserve")
    assert reserve.job_id == 3 and reserve.value == 100
    # J4 ends by the shadow time: backfilled; J1, flagged, would have been and is skipped.
    assert decisions.job_ids("backfill") == [4]


def test_flagged_backfill_candidate_is_skipped_not_started():
    pending = (
        PendingJob(1, 0, 8, 10),  # head: does not fit
        PendingJob(2, 1, 2, 10, variable=True),  # would backfill
        PendingJob(3, 2, 2, 10),
    )
    running = (RunningJob(9, 0, 6, 100),)
    snap = Snapshot(now=10, total_procs=8, free_procs=2, pending=pending, running=running)
    decisions = schedule(snap, CoreConfig(skip_limit=5))
    assert decisions.job_ids("skip") == [2]
    assert decisions.job_ids("backfill") == [3]


def test_kill_decision_carries_requeue_as_large():
    running = (RunningJob(1, 0, 1, 1000, runtime_class=RuntimeClass.SMALL, idempotent=True),)
    snap = Snapshot(now=700, total_procs=8, free_procs=7, running=running)
    (kill,) = schedule(snap, CoreConfig(kill_false_small=True, divider=600.0)).of("kill")
    assert kill.requeue_class == RuntimeClass.LARGE and kill.requeues == 1
    # Still running at the divider: killed (a run of exactly the divider would have completed
    # and left the running set, as the simulator's run_outcome has it); before it, not.
    at_divider = Snapshot(now=600, total_procs=8, free_procs=7, running=running)
    assert schedule(at_divider, CoreConfig(kill_false_small=True, divider=600.0)).job_ids("kill") == [1]
    before = Snapshot(now=599, total_procs=8, free_procs=7, running=running)
    assert schedule(before, CoreConfig(kill_false_small=True, divider=600.0)).of("kill") == []


def test_killed_job_competes_in_the_same_pass_as_large():
    # As in the simulator: the job killed now is back in the queue (original submit, large)
    # and its processor is free, so this very pass starts it again.
    running = (RunningJob(1, 100, 2, 1000, runtime_class=RuntimeClass.SMALL, idempotent=True, submit=50),)
    pending = (PendingJob(2, 60, 2, 1000, runtime_class=RuntimeClass.SMALL),)
    snap = Snapshot(now=700, total_procs=2, free_procs=0, pending=pending, running=running)
    decisions = schedule(snap, CoreConfig(kill_false_small=True, divider=600.0, use_classes=True))
    assert decisions.job_ids("kill") == [1]
    # Job 2 is small and goes first; job 1, now large, waits behind it.
    assert decisions.job_ids("start") == [2] and decisions.order == [2, 1]


def test_requeued_pending_job_is_large_and_not_killable_again():
    pending = (
        PendingJob(1, 0, 1, 1000, runtime_class=RuntimeClass.SMALL, idempotent=True, requeues=1),
        PendingJob(2, 5, 1, 1000, runtime_class=RuntimeClass.SMALL),
    )
    snap = Snapshot(now=10, total_procs=1, free_procs=0, pending=pending)
    decisions = schedule(snap, CoreConfig(use_classes=True))
    # Predicted small, but requeued: the core ranks it with the large jobs.
    assert decisions.order == [2, 1]


def test_classes_order_small_first_after_starved():
    pending = (
        PendingJob(1, 0, 1, 10, runtime_class=RuntimeClass.LARGE),
        PendingJob(2, 5, 1, 10, runtime_class=RuntimeClass.SMALL),
        PendingJob(3, -300_000, 1, 10, runtime_class=RuntimeClass.LARGE),
    )
    snap = Snapshot(now=10, total_procs=1, free_procs=0, pending=pending)
    decisions = schedule(snap, CoreConfig(use_classes=True))
    assert decisions.order == [3, 2, 1]


def _snapshot_at(w, sim, t: float, machine: int) -> Snapshot:
    """The queue as the simulator's pass at ``t`` sees it (completions at t already done)."""
    n = len(w)
    running = tuple(
        RunningJob(int(w.job_id[j]), sim.start[j], int(w.procs[j]), w.requested_time[j])
        for j in range(n)
        if 0 <= sim.start[j] < t < sim.end[j]
    )
    pending = tuple(
        PendingJob(int(w.job_id[j]), w.submit[j], int(w.procs[j]), w.requested_time[j])
        for j in range(n)
        if w.submit[j] <= t and sim.start[j] >= t
    )
    free = machine - sum(r.procs for r in running)
    return Snapshot(now=t, total_procs=machine, free_procs=free, pending=pending, running=running)


def test_schedule_and_simulator_agree_at_every_pass_of_a_random_queue():
    rng = np.random.default_rng(7)
    n = 80
    submit = np.sort(rng.integers(0, 400, n)).astype(float)
    procs = rng.integers(1, 9, n)
    runtime = rng.integers(5, 300, n).astype(float)
    req = runtime * rng.uniform(1.0, 3.0, n)
    w = workload(16, list(zip(submit, procs, runtime, req, strict=True)))
    for policy in ("SAF", "FCFS", "WFP3"):
        config = CoreConfig.from_names(policy, "easy")
        sim = simulate(w, config)
        checked = 0
        for t in np.unique(sim.start):
            started_by_sim = {int(w.job_id[j]) for j in range(n) if sim.start[j] == t}
            decisions = schedule(_snapshot_at(w, sim, float(t), 16), config)
            started_by_core = set(decisions.job_ids("start")) | set(decisions.job_ids("backfill"))
            assert started_by_core == started_by_sim, (policy, t)
            checked += len(started_by_sim)
        # Every job's start was reproduced by the live entry point (not a vacuous comparison).
        assert checked == n


def test_hostile_snapshots_are_refused_with_the_job_named():
    import math

    import pytest

    from rush.errors import RushError

    good = PendingJob(1, 0, 1, 10)
    cases = [
        Snapshot(now=math.nan, total_procs=4, free_procs=4, pending=(good,)),
        Snapshot(now=10, total_procs=4, free_procs=5, pending=(good,)),
        Snapshot(now=10, total_procs=4, free_procs=-1, pending=(good,)),
        Snapshot(now=10, total_procs=4, free_procs=4, pending=(good, PendingJob(1, 1, 1, 10))),
        Snapshot(now=10, total_procs=4, free_procs=4, pending=(PendingJob(2, math.nan, 1, 10),)),
        Snapshot(now=10, total_procs=4, free_procs=4, pending=(PendingJob(2, 0, 0, 10),)),
        Snapshot(now=10, total_procs=4, free_procs=4, pending=(PendingJob(2, 0, 1, math.nan),)),
        Snapshot(now=10, total_procs=4, free_procs=4, pending=(PendingJob(2, 0, 1, -5),)),
        Snapshot(now=10, total_procs=4, free_procs=4, pending=(PendingJob(2, 0, 1, 5, estimate=math.nan),)),
        Snapshot(now=10, total_procs=4, free_procs=0, running=(RunningJob(3, math.inf, 4, 10),)),
    ]
    for snap in cases:
        with pytest.raises(RushError) as err:
            schedule(snap, CoreConfig())
        assert "snapshot" in str(err.value)
    # An unlimited request is legitimate: it runs, and reserves nothing behind it.
    unlimited = Snapshot(now=10, total_procs=4, free_procs=4, pending=(PendingJob(2, 0, 1, math.inf),))
    assert schedule(unlimited, CoreConfig()).job_ids("start") == [2]


def test_only_event_passes_count_skips():
    """RUSH counts a skip when Fluxion's event-driven loop considers the job: a periodic pass
    skips the same flagged job but leaves its count, and still starts an unflagged one."""
    pending = (PendingJob(1, 0, 1, 10, variable=True, skips=2), PendingJob(2, 0, 1, 10))
    running = (RunningJob(9, 0, 60, 100),)
    config = CoreConfig(skip_limit=3)
    event = Snapshot(now=10, total_procs=64, free_procs=4, pending=pending, running=running)
    periodic = dataclasses.replace(event, trigger="periodic")
    (counted,) = schedule(event, config).of("skip")
    (kept,) = schedule(periodic, config).of("skip")
    assert counted.value == 3.0 and kept.value == 2.0
    assert "not counted" in kept.reason and "not counted" not in counted.reason
    assert schedule(periodic, config).job_ids("start") == [2]
    # At its limit a flagged job starts in a periodic pass too.
    at_limit = dataclasses.replace(periodic, pending=(dataclasses.replace(pending[0], skips=3),))
    assert schedule(at_limit, config).job_ids("start") == [1]


def test_periodic_pass_counts_when_no_event_can_come():
    """With nothing running that has a limit (an idle machine, or only an unlimited job such as
    the contention simulator's noise), no event will ever come: a periodic pass counts."""
    flagged = (PendingJob(1, 0, 1, 10, variable=True, skips=0),)
    config = CoreConfig(skip_limit=3)
    for running in ((), (RunningJob(9, 0, 4, math.inf),)):
        snap = Snapshot(
            now=10, total_procs=8, free_procs=4, pending=flagged, running=running, trigger="periodic"
        )
        assert schedule(snap, config).of("skip")[0].value == 1.0


def test_unknown_trigger_is_refused():
    snap = Snapshot(now=10, total_procs=8, free_procs=8, pending=(PendingJob(1, 0, 1, 10),), trigger="timer")
    with pytest.raises(RushError, match="Snapshot.trigger"):
        schedule(snap, CoreConfig())
