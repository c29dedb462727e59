"""Slurm's main scheduler and backfill (rush/core/slurm_backfill.py) on hand-made cases whose
outcome follows from backfill.c's rules: whole-node reservations, the reservation count,
bf_resolution's rounding, bf_window, bf_max_job_test, and the one-second tick."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.slurm_backfill import (
    PendingJob,
    RunningJob,
    SlurmScheduler,
    backfill_pass,
    main_pass,
    next_tick,
    place,
    will_run,
)
from rush.errors import PolicyError

# Two nodes of 4 CPUs; plans to the second unless a test says otherwise.
TWO = SlurmScheduler(nodes=2, cpus_per_node=4, bf_resolution=1)


def free(*cpus: int) -> np.ndarray:
    return np.array(cpus, dtype=np.int64)


def test_place_fills_the_lowest_nodes_first_and_refuses_what_does_not_fit() -> None:
    assert place(free(2, 4), 5).tolist() == [2, 3]
    assert place(free(2, 4), 7) is None
    assert place(free(2, 4), 3, np.array([False, True])).tolist() == [0, 3]
    assert place(free(4, 4), 5, np.array([False, True])) is None


def test_main_scheduler_stops_at_the_first_job_that_does_not_fit() -> None:
    cpus = free(4, 0)
    jobs = [PendingJob(1, 2, 60), PendingJob(2, 4, 60), PendingJob(3, 1, 60)]
    started = main_pass(cpus, jobs)
    # Job 3 would fit beside job 1, but FCFS blocks the partition at job 2.
    assert [job.job for job, _ in started] == [1]
    assert cpus.tolist() == [2, 0]


def test_a_reservation_holds_whole_nodes() -> None:
    # Node 1 is busy until t=100 (3 of 4 CPUs); node 2 is free. Job 1 wants 6 CPUs: it
    # starts at 100 on both nodes, and its reservation holds both whole nodes.
    running = [RunningJob(0, free(3, 0), 100.0)]
    jobs = [PendingJob(1, 6, 60), PendingJob(2, 1, 60), PendingJob(3, 1, 200)]
    started, plan = backfill_pass(0.0, free(1, 4), running, jobs, TWO)
    assert plan.planned_start[1] == 100.0
    assert plan.reservations[0].nodes.tolist() == [True, True]
    # Job 2 ends at 60, before the reservation: it starts. Job 3 (200 s) would overlap the
    # reservation on both nodes: it may not start now, though 3 CPUs are idle.
    assert [job.job for job, _ in started] == [2]
    assert 3 in plan.planned_start and plan.planned_start[3] > 100.0


def test_every_tested_job_reserves_unless_bf_job_part_count_reserve() -> None:
    running = [RunningJob(0, free(4, 4), 100.0)]
    jobs = [PendingJob(1, 8, 60), PendingJob(2, 8, 60), PendingJob(3, 1, 30)]
    _, plan = backfill_pass(0.0, free(0, 0), running, jobs, TWO)
    assert len(plan.reservations) == 3  # conservative: every job gets its place
    assert plan.planned_start == {1: 100.0, 2: 160.0, 3: 220.0}
    one = SlurmScheduler(nodes=2, cpus_per_node=4, bf_resolution=1, bf_job_part_count_reserve=1)
    _, plan = backfill_pass(0.0, free(0, 0), running, jobs, one)
    assert len(plan.reservations) == 1 and plan.planned_start == {1: 100.0}


def test_bf_resolution_rounds_the_reservation_outwards() -> None:
    minute = SlurmScheduler(nodes=2, cpus_per_node=4, bf_resolution=60)
    running = [RunningJob(0, free(4, 4), 1000.0 + 70)]
    _, plan = backfill_pass(1000.0, free(0, 0), running, [PendingJob(1, 8, 60)], minute)
    resv = plan.reservations[0]
    # Start 1070 rounded down to 1020; end 1070 + 60 rounded up to 1140.
    assert (resv.start, resv.end) == (1020.0, 1140.0)


def test_no_plan_past_bf_window_and_at_most_bf_max_job_test_jobs() -> None:
    short = SlurmScheduler(nodes=2, cpus_per_node=4, bf_resolution=1, bf_window=600)
    running = [RunningJob(0, free(4, 4), 3600.0)]
    _, plan = backfill_pass(0.0, free(0, 0), running, [PendingJob(1, 8, 60)], short)
    assert plan.planned_start == {} and plan.reservations == []
    capped = SlurmScheduler(nodes=2, cpus_per_node=4, bf_resolution=1, bf_max_job_test=1)
    jobs = [PendingJob(1, 8, 60), PendingJob(2, 1, 10)]
    started, plan = backfill_pass(0.0, free(4, 0), [RunningJob(0, free(0, 4), 100.0)], jobs, capped)
    assert started == [] and list(plan.planned_start) == [1]


def test_will_run_takes_running_jobs_away_in_batches() -> None:
    """cons_tres's will-run test: the jobs ending within one window go together (first end
    100 rounded up to the 30 s barrier 120, window 30: every end up to 150), the job is placed
    on what is then free, and starts when the last removed job on its nodes ends."""
    capacity = free(4, 4, 4)
    running = [
        RunningJob(1, free(4, 0, 0), 100.0),
        RunningJob(2, free(0, 2, 0), 110.0),
        RunningJob(3, free(0, 0, 4), 115.0),
        RunningJob(4, free(0, 2, 0), 500.0),
    ]
    usable = np.ones(3, dtype=bool)
    start, alloc = will_run(0.0, usable, capacity, running, 6)
    # One at a time it would start at 100 on nodes 1 and 2; batched, job 2 (node 2, 110) counts.
    assert (start, alloc.tolist()) == (110.0, [4, 2, 0])
    # Past the window: job 4's end is reached by doubling it.
    start, alloc = will_run(0.0, usable, capacity, running, 12)
    assert (start, alloc.tolist()) == (500.0, [4, 4, 4])
    assert will_run(0.0, usable, capacity, running, 13) is None


def test_a_blocked_job_is_planned_by_the_will_run_from_now() -> None:
    """backfill.c tests a job first from now (``start_res = now``): cons_tres's will-run takes
    the running jobs away in batches and places the job on what they free together (nodes 0-2
    here, from 110 when the last of them ends), not on the CPUs free at the first running job's
    end (100: 10 + 8 + 5 + 7 over all four nodes), which would reserve every node. So a small
    job whose limit reaches into the reservation fits now on node 3, outside it."""
    four = SlurmScheduler(nodes=4, cpus_per_node=10, bf_resolution=1)
    running = [
        RunningJob(1, free(10, 0, 0, 0), 100.0),
        RunningJob(2, free(0, 2, 0, 0), 110.0),
        RunningJob(3, free(0, 0, 5, 0), 110.0),
    ]
    cpus = free(0, 8, 5, 10)
    started, plan = backfill_pass(0.0, cpus, running, [PendingJob(7, 30, 60), PendingJob(8, 10, 120)], four)
    assert plan.planned_start == {7: 110.0}
    assert plan.reservations[0].nodes.tolist() == [True, True, True, False]
    assert [(job.job, alloc.tolist()) for job, alloc in started] == [(8, [0, 0, 0, 10])]


def test_next_tick_is_strictly_after() -> None:
    assert next_tick(10.0, 1.0) == 11.0
    assert next_tick(10.2, 1.0) == 11.0
    assert next_tick(10.2, 30.0) == 30.0


@pytest.mark.parametrize(
    ("field", "value"),
    [("nodes", 0), ("cpus_per_node", 2.5), ("bf_resolution", 0), ("bf_window", float("nan")),
     ("bf_job_part_count_reserve", -1), ("bf_max_job_test", True)],
)  # fmt: skip
def test_bad_settings_are_refused_naming_the_field(field: str, value: object) -> None:
    settings = {"nodes": 2, "cpus_per_node": 4, field: value}
    with pytest.raises(PolicyError, match=field):
        SlurmScheduler(**settings)  # type: ignore[arg-type]
