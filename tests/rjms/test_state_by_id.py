"""``ClusterState.by_id``: the read's job map, made once per read and shared by the daemon's steps
(issue 31 round 28, r31post). It must be the map each step built for itself before
(``{j.job_id: j for j in state.jobs}``), read-only, and the state's own."""

from __future__ import annotations

import dataclasses

import pytest

from rush.rjms.base import ClusterState, RJMSJob


def job(job_id: int, state: str = "PENDING", procs: int = 1) -> RJMSJob:
    return RJMSJob(job_id, state, 100.0, procs, 600.0, start=150.0 if state == "RUNNING" else None)


def state_of(*jobs: RJMSJob) -> ClusterState:
    return ClusterState(200.0, 64, 32, tuple(jobs))


def test_the_map_each_step_built() -> None:
    jobs = (job(3), job(1, "RUNNING"), job(7), job(2, "COMPLETING"))
    state = state_of(*jobs)
    assert dict(state.by_id) == {j.job_id: j for j in jobs}
    assert list(state.by_id) == [3, 1, 7, 2]  # read order, as the comprehension's
    assert all(state.by_id[j.job_id] is j for j in jobs)


def test_a_repeated_id_gives_the_last_job_read() -> None:
    first, last = job(5, procs=1), job(5, procs=4)
    state = state_of(job(1), first, last)
    assert state.by_id[5] is last
    assert dict(state.by_id) == {j.job_id: j for j in state.jobs}


def test_made_once_per_state() -> None:
    state = state_of(job(1), job(2))
    assert state.by_id is state.by_id


def test_read_only() -> None:
    state = state_of(job(1))
    with pytest.raises(TypeError):
        state.by_id[2] = job(2)  # type: ignore[index]
    with pytest.raises(TypeError):
        del state.by_id[1]  # type: ignore[attr-defined]
    assert list(state.by_id) == [1]


def test_each_state_its_own_map() -> None:
    state = state_of(job(1), job(2))
    assert 2 in state.by_id
    later = dataclasses.replace(state, jobs=(job(1), job(9)))
    assert 2 not in later.by_id and 9 in later.by_id
    assert 2 in state.by_id and 9 not in state.by_id
    assert state_of(job(4)).by_id.keys() == {4}


def test_the_state_compares_as_before() -> None:
    read, unread = state_of(job(1), job(2)), state_of(job(1), job(2))
    assert read.by_id[1] is read.jobs[0]
    assert read == unread and repr(read) == repr(unread)
    assert [f.name for f in dataclasses.fields(ClusterState)] == [
        "taken_at",
        "total_procs",
        "free_procs",
        "jobs",
        "partitions",
        "nodes",
    ]
    assert dataclasses.replace(read, free_procs=0).by_id.keys() == {1, 2}
