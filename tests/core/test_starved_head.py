"""A starved head is reserved on limits (rush.core.starved_head, issue 29): under predicted
runtimes a job needing the whole machine no longer waits without bound, in the simulator and
in the live pass; while no head has starved, decisions are those of reservations on estimates."""

from __future__ import annotations

import dataclasses

import numpy as np

from rush.core.config import CoreConfig
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, Snapshot
from rush.simulator.engine import NODE_KERNELS, SimInputs, simulate
from tests.core.helpers import workload

THRESHOLD = 100.0
REQUEST = 1000.0


def _wide_job_behind_a_stream(stream: int = 400):
    """4 processors. A wide job (all 4, 10 s) arrives at t=1 behind one running job; a
    stream of one-processor jobs arrives every 5 s, each predicted to run 5 s but running to
    its request (1000 s). Returns the workload and the predictions."""
    jobs = [(0.0, 1, REQUEST, REQUEST), (1.0, 4, 10.0, 10.0)]
    jobs += [(5.0 * k, 1, REQUEST, REQUEST) for k in range(1, stream + 1)]
    predicted = np.full(len(jobs), 5.0)
    predicted[1] = 10.0
    return workload(4, jobs), predicted


def _run(w, predicted, threshold):
    config = CoreConfig.from_names(
        "FCFS", "easy", threshold, "SPF", prediction_correction="request", kill_false_small=False
    )
    return simulate(w, config, SimInputs(estimate=predicted))


def test_a_starved_wide_job_waits_no_longer_than_its_limits_allow() -> None:
    w, predicted = _wide_job_behind_a_stream()
    wide = 1
    result = _run(w, predicted, THRESHOLD)
    wait = result.start[wide] - result.submit[wide]
    # Starved at t=101; then every job running is gone by its limit (started by then, so
    # ended by 101 + 1000 s) and nothing backfilled after may outlast the reservation.
    assert wait <= THRESHOLD + REQUEST + 5.0
    assert not result.killed.any()  # kills stay at the request: nobody ran past it
    # Reserved on predictions for ever (no threshold), the stream keeps overtaking it: each
    # backfilled job is predicted to end before the shadow time and runs 1000 s.
    unbounded = _run(w, predicted, None)
    assert unbounded.start[wide] - unbounded.submit[wide] > 10 * (THRESHOLD + REQUEST)


def test_the_node_kernels_reserve_a_starved_head_on_limits_too() -> None:
    # One-core nodes decide as processor counts do: the EASY pass on nodes applies the same rule.
    w, predicted = _wide_job_behind_a_stream(120)
    config = CoreConfig.from_names(
        "FCFS", "easy", THRESHOLD, "SPF", prediction_correction="request", kill_false_small=False
    )
    counts = simulate(w, config, SimInputs(estimate=predicted))
    nodes = simulate(w, config, SimInputs(estimate=predicted), on_nodes=NODE_KERNELS)
    np.testing.assert_array_equal(nodes.start, counts.start)
    assert counts.start[1] - counts.submit[1] <= THRESHOLD + REQUEST + 5.0


def test_no_starved_head_no_change_in_the_simulator() -> None:
    # Random predictions (many below the runtime) and a threshold above every wait of the run
    # without one: no head ever starves, so the two runs decide alike.
    rng = np.random.default_rng(29)
    n = 300
    submit = np.sort(rng.integers(0, 20_000, n)).astype(float)
    runtime = rng.integers(5, 2_000, n).astype(float)
    request = runtime * rng.uniform(1.0, 4.0, n)
    w = workload(16, list(zip(submit, rng.integers(1, 17, n), runtime, request, strict=True)))
    predicted = runtime * rng.uniform(0.2, 1.5, n)
    free_run = _run(w, predicted, None)
    longest = float(np.max(free_run.start - free_run.submit))
    assert longest > 0
    bounded = _run(w, predicted, longest + 1.0)
    np.testing.assert_array_equal(bounded.start, free_run.start)
    np.testing.assert_array_equal(bounded.backfilled, free_run.backfilled)
    # With a threshold under the longest wait, some job starves and the run changes (its order at least).
    acting = _run(w, predicted, longest / 4)
    assert not np.array_equal(acting.start, free_run.start)


def _snapshot(now: float, head_submit: float) -> Snapshot:
    """4 processors, 3 busy with jobs predicted to end at t=110 (requests end at t=1000); the
    head needs all 4; a one-processor job predicted 5 s (request 1000 s) could backfill."""
    running = tuple(
        RunningJob(k, start=0.0, procs=1, requested_time=REQUEST, estimate=110.0) for k in (1, 2, 3)
    )
    pending = (
        PendingJob(10, submit=head_submit, procs=4, requested_time=50.0, estimate=50.0),
        PendingJob(11, submit=now - 1.0, procs=1, requested_time=REQUEST, estimate=5.0),
    )
    return Snapshot(now=now, total_procs=4, free_procs=1, running=running, pending=pending)


def _decided(snapshot: Snapshot):
    decided = schedule(
        snapshot, CoreConfig.from_names("FCFS", "easy", THRESHOLD, "SPF", prediction_correction="request")
    )
    (reserve,) = decided.of("reserve")
    return [d.job_id for d in decided.of("backfill")], float(reserve.value)


def test_live_pass_reserves_a_starved_head_on_limits() -> None:
    now = 100.0
    # Waited 50 s: reserved on the predictions (t=110), the 5 s job backfills.
    assert _decided(_snapshot(now, head_submit=50.0)) == ([11], 110.0)
    # Waited 150 s > threshold: reserved on the limits (t=1000); the 5 s job's limit (t=1100)
    # is later and it would take a processor the head needs: it waits.
    assert _decided(_snapshot(now, head_submit=-50.0)) == ([], REQUEST)


def test_live_pass_unchanged_without_a_starved_head() -> None:
    # Random snapshots, no pending job past the threshold and no running job past its
    # prediction: the decisions are those of the same snapshot whose limits are its estimates.
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(40):
        now = 1_000.0
        running = []
        busy = 0
        for k in range(int(rng.integers(1, 8))):
            p = int(rng.integers(1, 5))
            elapsed = float(rng.uniform(0, 300))
            estimate = elapsed + float(rng.uniform(1, 500))
            running.append(
                RunningJob(k, start=now - elapsed, procs=p, requested_time=estimate * 3, estimate=estimate)
            )
            busy += p
        total = busy + int(rng.integers(0, 4))
        pending = tuple(
            PendingJob(
                100 + k,
                submit=now - float(rng.uniform(0, THRESHOLD)),
                procs=int(rng.integers(1, total + 1)),
                requested_time=float(rng.uniform(100, 3_000)),
                estimate=float(rng.uniform(5, 600)),
            )
            for k in range(int(rng.integers(2, 12)))
        )
        snapshot = Snapshot(
            now=now, total_procs=total, free_procs=total - busy, running=tuple(running), pending=pending
        )
        on_estimates = dataclasses.replace(
            snapshot,
            running=tuple(dataclasses.replace(r, requested_time=r.estimate) for r in snapshot.running),
            pending=tuple(
                dataclasses.replace(p, requested_time=min(p.estimate, p.requested_time)) for p in pending
            ),
        )
        config = CoreConfig.from_names("SPF", "easy", THRESHOLD, "SPF", prediction_correction="request")
        a, b = schedule(snapshot, config), schedule(on_estimates, config)
        for kind in ("start", "backfill", "reserve"):
            assert [(d.job_id, d.value) for d in a.of(kind)] == [(d.job_id, d.value) for d in b.of(kind)]
        checked += bool(a.of("backfill"))
    assert checked > 0  # the scenarios backfill: the estimates were read
