"""Speculative reservations in the simulator: kills at a reservation and requeues, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from rush.core.speculative_reservations import (
    next_attempt,
    requeue_after_kill,
    reservation_kill_due,
    run_limit,
)
from rush.errors import RushError
from rush.simulator.engine import SimInputs
from tests.core.helpers import run, workload

# M=2. J0 (2 procs, runs 25) under (10, 20, 40); J1 (1 proc, 5 s) without a sequence;
# J2 (1 proc, runs 50) under (10, 30), which its run exceeds.
HAND_CASE = [(0, 2, 25, 100), (1, 1, 5, 5), (2, 1, 50, 100)]
SEQUENCES = np.array([[10.0, 20.0, 40.0], [0.0, 0.0, 0.0], [10.0, 30.0, 0.0]])
COUNTS = np.array([3, 0, 2])


def test_rules():
    seq = np.array([10.0, 20.0])
    assert run_limit(seq, 2, 0, 99.0) == 10.0 and run_limit(seq, 2, 1, 99.0) == 20.0
    assert run_limit(seq, 0, 0, 99.0) == 99.0  # no sequence: the walltime
    assert reservation_kill_due(10.5, 10.0) and not reservation_kill_due(10.0, 10.0)
    assert requeue_after_kill(0, 2) and not requeue_after_kill(1, 2)
    assert next_attempt(0) == 1


def test_hand_trace_kill_and_requeue():
    r = run(
        workload(2, HAND_CASE), SimInputs(reservations=SEQUENCES, reservation_counts=COUNTS), policy="FCFS"
    )
    # J0: 0..10 killed, 10..30 killed, 30..55 done. J1 and J2 start at 55; J2 is killed at 65
    # (limit 10), rerun 65..95 under its last limit 30 and killed for good.
    assert r.start.tolist() == [30, 55, 65]
    assert r.end.tolist() == [55, 60, 95]
    assert r.submit.tolist() == [0, 1, 2]  # original submit times kept
    assert r.killed.tolist() == [False, False, True]
    assert r.wasted_area.tolist() == [60.0, 0.0, 10.0]  # 2*10 + 2*20; 1*10
    assert r.attributes["reservation_kills"].tolist() == [2, 0, 1]
    assert r.requeues.tolist() == [0, 0, 0]  # false-small requeues are counted apart


def test_without_sequences_the_walltime_rules():
    r = run(workload(2, HAND_CASE), policy="FCFS")
    assert r.start.tolist() == [0, 25, 25]
    assert r.end.tolist() == [25, 30, 75]
    assert r.wasted_area.sum() == 0 and r.attributes["reservation_kills"].sum() == 0


def test_run_of_exactly_its_reservation_ends_normally():
    w = workload(1, [(0, 1, 10, 100)])
    r = run(
        w, SimInputs(reservations=np.array([[10.0, 20.0]]), reservation_counts=np.array([2])), policy="FCFS"
    )
    assert r.end.tolist() == [10] and not r.killed[0]
    assert r.attributes["reservation_kills"].tolist() == [0]


def test_backfilling_sees_the_current_reservation():
    # M=2: J0 holds 1 proc until 100; J1 (2 procs) is the EASY head, shadow 100, extra 0;
    # J2 (1 proc, runs 5 s, walltime 1000) can backfill only if its limit ends by the shadow time.
    w = workload(2, [(0, 1, 100, 100), (1, 2, 10, 10), (2, 1, 5, 1000)])
    plain = run(w, policy="FCFS")
    assert plain.start.tolist()[2] == 110  # walltime 1000 would delay the head: no backfill
    seq = np.array([[0.0], [0.0], [50.0]])
    spec = run(w, SimInputs(reservations=seq, reservation_counts=np.array([0, 0, 1])), policy="FCFS")
    assert spec.start.tolist()[2] == 2 and spec.backfilled[2]  # 2 + 50 <= shadow 100


@pytest.mark.parametrize(
    ("seq", "counts", "message"),
    [
        (np.array([[10.0, 5.0]]), np.array([2]), "increasing"),
        (np.array([[-1.0, 5.0]]), np.array([1]), "increasing"),
        (np.array([[np.nan, 5.0]]), np.array([2]), "increasing"),
        (np.array([[10.0, 20.0]]), np.array([3]), r"\[0, 2\]"),
        (np.array([[10.0, 20.0]]), np.array([-1]), r"\[0, 2\]"),
        (np.array([10.0, 20.0]), np.array([1]), "shape"),
        (np.array([[10.0, 20.0]]), None, "go together"),
    ],
)
def test_bad_sequences_are_refused(seq, counts, message):
    w = workload(1, [(0, 1, 10, 100)])
    with pytest.raises(RushError, match=message):
        run(w, SimInputs(reservations=seq, reservation_counts=counts), policy="FCFS")


def test_padding_beyond_the_count_is_ignored():
    w = workload(1, [(0, 1, 15, 100)])
    seq = np.array([[10.0, 20.0, np.nan, -5.0]])
    r = run(w, SimInputs(reservations=seq, reservation_counts=np.array([2])), policy="FCFS")
    assert r.start.tolist() == [10] and r.end.tolist() == [25]
