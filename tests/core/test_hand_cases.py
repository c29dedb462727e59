"""Hand-computed schedules: every start time below was worked out on paper."""

from __future__ import annotations

import numpy as np
import pytest

from rush.simulator.engine import SimInputs
from tests.core.helpers import run, workload

# M=10. J1 holds 6 procs until 100; J2 (8) is the head, shadow 100, extra 2.
# J3 (2 procs, long) backfills on the extra processors; J4 (2, long) no longer fits extra;
# J5 (1 proc, 90 s) ends before the shadow time and backfills.
EXTRA_CASE = [(0, 6, 100, 100), (1, 8, 50, 50), (2, 2, 500, 500), (3, 2, 500, 500), (4, 1, 90, 90)]

# M=10. EASY protects only the head: J4 backfills on the extra processors at t=3 and
# delays the second queued job J3 to 503. Conservative gives J3 its reservation at 200.
SECOND_JOB_CASE = [(0, 6, 100, 100), (1, 8, 100, 100), (2, 10, 100, 100), (3, 2, 500, 500)]


def test_easy_backfills_short_job_before_reserved_head():
    w = workload(4, [(0, 2, 10, 10), (0, 4, 5, 5), (1, 2, 3, 3), (2, 1, 2, 2)])
    r = run(w, policy="FCFS", backfill="easy")
    assert r.start.tolist() == [0, 10, 1, 4]
    assert r.backfilled.tolist() == [False, False, True, True]
    assert r.end.tolist() == [10, 15, 4, 6]


def test_easy_extra_processors_rule():
    r = run(workload(10, EXTRA_CASE), policy="FCFS", backfill="easy")
    assert r.start.tolist() == [0, 100, 2, 150, 4]
    assert r.backfilled.tolist() == [False, False, True, False, True]
    # The head's reservation (shadow time 100) was kept.
    assert r.attributes["first_reservation"][1] == 100


def test_no_backfilling_is_strict_list_scheduling():
    r = run(workload(10, EXTRA_CASE), policy="FCFS", backfill="none")
    assert r.start.tolist() == [0, 100, 100, 150, 150]
    assert not r.backfilled.any()


def test_easy_can_delay_second_job_conservative_cannot():
    w = workload(10, SECOND_JOB_CASE)
    easy = run(w, policy="FCFS", backfill="easy")
    assert easy.start.tolist() == [0, 100, 503, 3]
    conservative = run(w, policy="FCFS", backfill="conservative")
    assert conservative.start.tolist() == [0, 100, 200, 300]
    assert conservative.attributes["first_reservation"][2] == 200


def test_conservative_backfills_without_delaying_reservations():
    r = run(workload(10, EXTRA_CASE), policy="FCFS", backfill="conservative")
    assert r.start.tolist() == [0, 100, 2, 150, 4]
    assert r.backfilled.tolist() == [False, False, True, False, True]


STARVATION_CASE = [(0, 1, 100, 100), (1, 1, 1000, 1000), (50, 1, 10, 10), (99, 1, 10, 10)]


@pytest.mark.parametrize(
    ("threshold", "starts"),
    [
        # at t=110 J2 has waited 109 s > 100: it goes first although J4 is shorter
        ("100", [0, 110, 100, 1110]),
        # "strictly more than T": 109 is not more than 109
        ("109", [0, 120, 100, 110]),
        ("none", [0, 120, 100, 110]),
    ],
)
def test_starvation_threshold(threshold, starts):
    r = run(workload(1, STARVATION_CASE), policy="SPF", backfill="easy", threshold=threshold)
    assert r.start.tolist() == starts


def test_walltime_kill_at_requested_time():
    r = run(workload(2, [(0, 1, 50, 20), (0, 2, 5, 5)]), policy="FCFS")
    assert r.end[0] == 20 and r.killed.tolist() == [True, False]
    assert r.start[1] == 20


def test_separate_backfill_order():
    # M=3: J2 (3 procs) is the head with shadow 100 and no extra processors. J3 (90 s) and
    # J4 (20 s) both end before the shadow time but only one processor is free: the scan
    # order decides which one backfills at t=2.
    jobs = [(0, 2, 100, 100), (1, 3, 10, 10), (2, 1, 90, 90), (2, 1, 20, 20)]
    w = workload(3, jobs)
    assert run(w, policy="FCFS").start.tolist() == [0, 100, 2, 110]
    assert run(w, policy="FCFS", backfill_policy="SPF").start.tolist() == [0, 100, 110, 2]


def test_skip_with_limit():
    w = workload(1, [(0, 1, 10, 10), (5, 1, 1, 1), (6, 1, 10, 10)])
    inputs = SimInputs(sensitive=np.array([True, False, False]), variable_intervals=np.array([[0.0, 1000.0]]))
    r = run(w, inputs, policy="FCFS", skip_limit=2)
    # J1 is skipped at t=0 and t=5 (limit 2), then starts at t=6 despite the variability.
    assert r.start.tolist() == [6, 5, 16]
    assert r.skips.tolist() == [2, 0, 0]


def test_skip_released_when_variability_ends():
    w = workload(1, [(0, 1, 10, 10)])
    inputs = SimInputs(sensitive=np.array([True]), variable_intervals=np.array([[0.0, 300.0]]))
    r = run(w, inputs, policy="FCFS", skip_limit=10)
    assert r.start.tolist() == [300] and r.skips.tolist() == [1]


def _kill_case(idempotent: bool):
    w = workload(2, [(0, 1, 25, 100), (1, 2, 5, 5)])
    inputs = SimInputs(runtime_class=np.array([0, 0]), idempotent=np.array([idempotent, True]))
    return run(w, inputs, policy="FCFS", use_classes=True, kill_false_small=True, divider=10.0)


def test_false_small_job_killed_at_divider_requeued_once_as_large():
    r = _kill_case(idempotent=True)
    # J1 runs 0..10, is killed at the divider, requeued as large behind small J2.
    assert r.start.tolist() == [15, 10]
    assert r.end.tolist() == [40, 15]
    assert r.submit.tolist() == [0, 1]  # original submit time kept
    assert r.requeues.tolist() == [1, 0]
    assert r.wasted_area.tolist() == [10.0, 0.0]
    assert r.attributes["runtime_class"].tolist() == [1, 0]


def test_opted_out_job_is_never_killed():
    r = _kill_case(idempotent=False)
    assert r.start.tolist() == [0, 25]
    assert r.requeues.tolist() == [0, 0]
    assert r.wasted_area.sum() == 0


def test_true_small_job_is_not_killed():
    w = workload(1, [(0, 1, 8, 100)])
    r = run(w, SimInputs(runtime_class=np.array([0])), kill_false_small=True, divider=10.0, use_classes=True)
    assert r.end.tolist() == [8] and r.requeues.tolist() == [0]
