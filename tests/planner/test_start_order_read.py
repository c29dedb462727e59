"""The start-order checks on one read of the queue (:class:`rush.planner.start_order.StartOrderRead`:
the read's ids and states walked once, the last plan ranked once) answer as the checks that each
walked the read themselves (tests/planner/start_order_reference.py): random last plans (start,
backfill, infeasible released or not, priorities, an order that may list a job twice) against
random reads (pending, running with and without a start, other states, jobs gone, new jobs, and
reads that list a job twice in different states)."""

from __future__ import annotations

import random

import pytest

from rush.core.snapshot import Decision, Decisions
from rush.planner import start_order
from rush.planner.start_order import StartOrderRead
from rush.rjms.base import ClusterState, RJMSJob
from tests.planner import start_order_reference as reference

STATES = ("PENDING", "PENDING", "RUNNING", "RUNNING", "COMPLETED", "CANCELLED", "SUSPENDED")


def _plan(rng: random.Random, ids: list[int]) -> Decisions:
    order = rng.sample(ids, k=rng.randrange(len(ids) + 1))
    if order and rng.random() < 0.3:  # an order that lists a job twice (its last position counts)
        order.insert(rng.randrange(len(order)), rng.choice(order))
    decisions = []
    for job_id in rng.sample(ids, k=rng.randrange(len(ids) // 2 + 1)):
        action = rng.choice(("start", "backfill", "infeasible", "infeasible", "priority", "reserve"))
        value = None if action == "infeasible" and rng.random() < 0.3 else float(rng.randrange(100))
        decisions.append(Decision(job_id, action, f"why {job_id}", value))
    return Decisions(now=100.0, order=order, decisions=decisions)


def _read(rng: random.Random, ids: list[int], twice: bool) -> ClusterState:
    listed = [j for j in ids if rng.random() < 0.8] + [1000 + k for k in range(rng.randrange(4))]
    if twice and listed:  # a job listed twice, in another state
        listed += rng.sample(listed, k=rng.randrange(1, min(4, len(listed)) + 1))
    rng.shuffle(listed)
    jobs = []
    for job_id in listed:
        state = rng.choice(STATES)
        start = None if state == "PENDING" or rng.random() < 0.25 else 50.0
        jobs.append(RJMSJob(job_id, state, 1.0, 1, 60.0, start=start))
    return ClusterState(taken_at=100.0, total_procs=8, free_procs=4, jobs=tuple(jobs))


def _answers(read: StartOrderRead) -> tuple:
    return (
        start_order.expected_and_gone(read),
        start_order.released_and_gone(read),
        start_order.released_left_pending(read),
        start_order.left_pending(read),
        start_order.rjms_started_any(read),
    )


def _reference(previous: Decisions, state: ClusterState) -> tuple:
    return (
        reference.expected_and_gone(previous, state),
        reference.released_and_gone(previous, state),
        reference.released_left_pending(previous, state),
        reference.left_pending(previous, state),
        reference.rjms_started_any(previous, state),
    )


def _lines(previous: Decisions, state: ClusterState) -> list[str]:
    """The reference's out-of-order findings in the words started_out_of_order uses."""
    lines = []
    for position, job_id, passed in reference.started_out_of_order(previous, state):
        shown = ", ".join(str(j) for j in passed[:5]) + (" ..." if len(passed) > 5 else "")
        lines.append(
            f"job {job_id} (rush's rank {position + 1}) started ahead of job(s) {shown}, which rush "
            "expected the RJMS to start; they are still pending (the RJMS reordered or refused them)"
        )
    return lines


@pytest.mark.parametrize("twice", [False, True], ids=["listed-once", "listed-twice"])
@pytest.mark.parametrize("seed", range(6))
def test_the_checks_on_one_read_answer_as_the_checks_that_walked_it_each(seed: int, twice: bool) -> None:
    rng = random.Random(seed)
    found = dict.fromkeys(("gone", "released gone", "released pending", "left", "started", "out of order"), 0)
    for _ in range(300):
        ids = list(range(1, rng.randrange(2, 30)))
        previous, state = _plan(rng, ids), _read(rng, ids, twice)
        read = StartOrderRead(previous, state)
        assert _answers(read) == _reference(previous, state)
        assert start_order.started_out_of_order(read) == _lines(previous, state)
        got = _answers(read)
        for name, answer in zip(found, (*got, start_order.started_out_of_order(read)), strict=False):
            found[name] += bool(answer)
    # Every check had something to say in some of the cases.
    assert all(found.values()), found


def test_a_job_listed_twice_is_pending_and_listed_by_any_listing_and_its_state_by_the_last() -> None:
    """The old checks' sets answered "pending" and "listed" by any listing of a job, and the
    out-of-order check's state map by its last listing: the one read keeps each."""
    jobs = (
        RJMSJob(1, "PENDING", 1.0, 1, 60.0),
        RJMSJob(1, "COMPLETED", 1.0, 1, 60.0, start=50.0),
        RJMSJob(2, "RUNNING", 1.0, 1, 60.0, start=50.0),
    )
    state = ClusterState(taken_at=100.0, total_procs=8, free_procs=4, jobs=jobs)
    previous = Decisions(now=90.0, order=[1, 2], decisions=[Decision(1, "start", "fits", 90.0)])
    read = StartOrderRead(previous, state)
    assert read.is_pending(1) and read.is_listed(1) and read.state_of[1] == "COMPLETED"
    assert start_order.left_pending(read) == reference.left_pending(previous, state) == []
    assert start_order.expected_and_gone(read) == reference.expected_and_gone(previous, state) == []
    assert start_order.started_out_of_order(read) == _lines(previous, state) == []
