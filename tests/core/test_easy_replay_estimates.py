"""Start estimates under EASY replay EASY itself (rush.core.start_estimates.project_easy_starts):
with exact runtimes and no arrivals they come true, against the simulator running the same core
EASY pass forward, also when jobs end long before their limits (the case where the conservative
projection of earlier rounds was wrong)."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.policies import parse_policy
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, Snapshot
from rush.core.start_estimates import EasyRunning, project_easy_starts, project_starts
from rush.simulator.engine import simulate
from rush.workload.model import Workload

MACHINE = 64


def _queue(seed: int, n: int = 40, tight: bool = False) -> Workload:
    """All submitted at 0; runtimes from 1 % of the request up to the request (``tight``: equal)."""
    rng = np.random.default_rng(seed)
    procs = rng.choice([1, 2, 4, 8, 16, 32, 64], size=n).astype(np.int64)
    request = rng.integers(60, 5000, size=n).astype(float)
    runtime = request.copy() if tight else np.maximum(np.round(request * rng.uniform(0.01, 1.0, n)), 1.0)
    return _all_at_zero(procs, runtime, request, MACHINE)


def _all_at_zero(procs: np.ndarray, runtime: np.ndarray, request: np.ndarray, machine: int) -> Workload:
    n = len(procs)
    return Workload(
        job_id=np.arange(1, n + 1),
        submit=np.zeros(n),
        runtime=runtime,
        requested_time=request,
        procs=procs,
        user=np.full(n, -1),
        machine_procs=machine,
    )


def _none_running() -> EasyRunning:
    return EasyRunning(np.empty(0), np.empty(0), np.empty(0, np.int64))


def _easy() -> CoreConfig:
    return CoreConfig(policy=parse_policy("FCFS"), backfill="easy", threshold=None)


@pytest.mark.parametrize("seed", range(12))
def test_the_replay_with_exact_runtimes_is_the_simulated_schedule(seed: int) -> None:
    w = _queue(seed)
    simulated = simulate(w, _easy())
    order = np.arange(len(w), dtype=np.int64)
    starts = project_easy_starts(
        0.0,
        MACHINE,
        _none_running(),
        order,
        w.procs,
        w.runtime,
        w.requested_time,
    )
    assert np.array_equal(starts, simulated.start), seed


@pytest.mark.parametrize("seed", range(12))
def test_the_replay_from_a_running_state_is_the_simulated_rest(seed: int) -> None:
    # Run the queue to a moment, then replay from the jobs running and waiting then: the rest of
    # the simulated schedule (no job arrives after 0).
    w = _queue(seed, n=60)
    simulated = simulate(w, _easy())
    end = simulated.start + w.runtime
    now = float(np.sort(end)[len(w) // 4]) + 0.5
    running = (simulated.start <= now) & (end > now)
    waiting = np.flatnonzero(simulated.start > now)
    free = MACHINE - int(w.procs[running].sum())
    starts = project_easy_starts(
        now,
        free,
        EasyRunning(end[running], (simulated.start + w.requested_time)[running], w.procs[running]),
        waiting.astype(np.int64),
        w.procs,
        w.runtime,
        w.requested_time,
    )
    assert np.array_equal(starts[waiting], simulated.start[waiting]), seed


def test_the_conservative_projection_misses_what_the_replay_gets() -> None:
    # 56 processors busy until 100 (limit 1000), 8 free; a 64-wide head, then an 8-wide job
    # of 50 s with a limit of 2000. Its runtime fits in the hole before 100, so the conservative
    # projection starts it now; EASY does not backfill it (2000 > the shadow time 1000 and no
    # extra processors), so it starts after the head: at 200.
    procs = np.array([64, 8], dtype=np.int64)
    runtime = np.array([100.0, 50.0])
    request = np.array([100.0, 2000.0])
    args = (0.0, 8, EasyRunning(np.array([100.0]), np.array([1000.0]), np.array([56], np.int64)))
    order = np.array([0, 1], dtype=np.int64)
    easy = project_easy_starts(*args, order, procs, runtime, request)
    conservative = project_starts(
        0.0, 8, np.array([100.0]), np.array([56], np.int64), order, procs, runtime, False
    )
    assert easy[0] == 100.0 and easy[1] == 200.0  # after the head: EASY does not backfill it
    assert conservative[1] == 0.0  # the hole before 100 takes it


def test_jobs_wider_than_the_machine_never_start_and_do_not_block() -> None:
    order = np.array([0, 1], dtype=np.int64)
    starts = project_easy_starts(
        0.0,
        4,
        _none_running(),
        order,
        np.array([8, 2]),
        np.ones(2),
        np.ones(2),
    )
    assert np.isinf(starts[0]) and starts[1] == 0.0


def test_a_running_job_past_its_predicted_end_ends_one_second_from_now() -> None:
    starts = project_easy_starts(
        50.0,
        0,
        EasyRunning(
            np.array([10.0]), np.array([5.0]), np.array([4], np.int64)
        ),  # limit before the end: the end
        np.array([0], np.int64),
        np.array([4]),
        np.array([10.0]),
        np.array([10.0]),
    )
    assert starts[0] == 51.0


def test_the_schedule_publishes_the_replay_under_easy() -> None:
    # A pass under EASY with exact limits (runtime = request): every pending job's estimate is
    # its simulated start.
    w = _queue(3, n=30, tight=True)
    simulated = simulate(w, _easy())
    pending = tuple(
        PendingJob(int(w.job_id[k]), 0.0, int(w.procs[k]), float(w.requested_time[k])) for k in range(len(w))
    )
    decided = schedule(Snapshot(now=0.0, total_procs=MACHINE, free_procs=MACHINE, pending=pending), _easy())
    for k in range(len(w)):
        assert decided.estimated_start[int(w.job_id[k])] == pytest.approx(simulated.start[k]), k
    # With a job running, every estimate is a time from now on (none NaN, none in the past).
    running = (RunningJob(999, -100.0, 16, 700.0),)
    busy = schedule(
        Snapshot(now=0.0, total_procs=MACHINE, free_procs=MACHINE - 16, pending=pending, running=running),
        _easy(),
    )
    assert all(np.isfinite(v) and v >= 0.0 for v in busy.estimated_start.values())


def test_above_the_replay_bound_a_pass_projects_instead(monkeypatch: pytest.MonkeyPatch) -> None:
    # The replay's cost grows with the queue: past the bound the pass falls back to the
    # projection, which on some queues differs from the replay (EASY protects only the head).
    import rush.core.start_estimates as start_estimates

    differ = 0
    for seed in range(20):
        w = _queue(seed, n=30, tight=True)
        pending = tuple(
            PendingJob(int(w.job_id[k]), 0.0, int(w.procs[k]), float(w.requested_time[k]))
            for k in range(len(w))
        )
        snapshot = Snapshot(now=0.0, total_procs=MACHINE, free_procs=MACHINE, pending=pending)
        monkeypatch.setattr(start_estimates, "EASY_REPLAY_MAX_JOBS", 2000)
        replayed = schedule(snapshot, _easy()).estimated_start
        monkeypatch.setattr(start_estimates, "EASY_REPLAY_MAX_JOBS", 5)
        projected = schedule(snapshot, _easy()).estimated_start
        assert replayed.keys() == projected.keys()
        assert all(np.isfinite(v) and v >= 0.0 for v in projected.values())
        differ += replayed != projected
    assert differ > 0


def test_the_replay_is_the_simulated_rest_on_300_random_queues() -> None:
    # Machines of 16 to 512 processors, queues of 5 to 80 jobs, replayed from a random moment
    # of their simulated run: the replay's EASY passes are the simulator's, so every waiting
    # job starts when the simulator starts it.
    rng = np.random.default_rng(2026)
    for trial in range(300):
        machine = int(rng.choice([16, 64, 128, 512]))
        n = int(rng.integers(5, 81))
        procs = rng.choice([1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512], size=n)
        procs = np.minimum(procs, machine).astype(np.int64)
        request = rng.choice([100.0, 400.0, 3600.0, 7200.0], size=n) * rng.choice([0.5, 1.0], size=n)
        runtime = np.maximum(np.round(request * rng.uniform(0.01, 1.0, n)), 1.0)
        w = _all_at_zero(procs, runtime, request, machine)
        simulated = simulate(w, _easy())
        end = simulated.start + runtime
        now = float(rng.choice(np.sort(end))) - 0.5
        running = (simulated.start <= now) & (end > now)
        waiting = np.flatnonzero(simulated.start > now)
        starts = project_easy_starts(
            now,
            machine - int(procs[running].sum()),
            EasyRunning(end[running], (simulated.start + request)[running], procs[running]),
            waiting.astype(np.int64),
            procs,
            runtime,
            request,
        )
        assert np.array_equal(starts[waiting], simulated.start[waiting]), trial


def test_behind_a_job_of_infinite_length_the_queue_waits_for_ever() -> None:
    # Job 0 never ends: job 1 "starts" at inf and the replay stops (it once restarted it there
    # for ever).
    starts = project_easy_starts(
        0.0,
        4,
        _none_running(),
        np.array([0, 1, 2], np.int64),
        np.array([4, 4, 2]),
        np.array([np.inf, 1.0, 5.0]),
        np.array([np.inf, 1.0, np.inf]),
    )
    assert starts[0] == 0.0 and np.isinf(starts[1]) and np.isinf(starts[2])
