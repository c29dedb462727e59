"""The journal's queue rows (rush/planner/queue_view.py): what rush status and rush explain
read, written only when they change, with the first estimate kept and the priority terms
stored with the key."""

from __future__ import annotations

import json

from rush.core.config import CoreConfig
from rush.core.policies import parse_policy
from rush.core.priority_terms import JobInputs, priority_terms
from rush.core.schedule import schedule
from rush.planner.journal import Journal
from rush.planner.queue_view import QueueView, queue_rows
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob

CONFIG = CoreConfig(policy=parse_policy("LINEAR:q=1,wait=-0.01"), threshold=None)


def _state(now: float, jobs: list[RJMSJob]) -> ClusterState:
    busy = sum(j.procs for j in jobs if j.state == "RUNNING")
    return ClusterState(taken_at=now, total_procs=8, free_procs=8 - busy, jobs=tuple(jobs))


def _view(now: float, jobs: list[RJMSJob], cycle: int) -> QueueView:
    state = _state(now, jobs)
    built = SnapshotBuilder().build(state, {})
    return QueueView(
        cycle, now, state, built, schedule(built.snapshot, CONFIG), CONFIG, "LINEAR:q=1,wait=-0.01"
    )


JOBS = [
    RJMSJob(1, "RUNNING", 0.0, 8, 1000.0, start=10.0, user="alice"),
    RJMSJob(2, "PENDING", 20.0, 4, 600.0, user="bob"),
    RJMSJob(3, "PENDING", 30.0, 2, 300.0, user="alice"),
]


def test_rows_carry_owner_estimate_and_terms_and_change_only_when_they_change(tmp_path) -> None:
    first = queue_rows(_view(100.0, JOBS, 1), {})
    rows = {r.job_id: r for r in first}
    assert rows[1].state == "running" and rows[1].start == 10.0 and rows[1].estimated_start is None
    # Job 3 (q=2) goes first under q=1; both wait for job 1's end at its limit, t=1010.
    assert rows[3].estimated_start == 1010.0 and rows[3].estimate_basis == "projection"
    assert rows[3].waits_behind == 1 and rows[3].user == "alice"
    assert rows[3].priority > rows[2].priority
    assert rows[2].estimated_start == 1010.0 and rows[2].waits_behind == 1
    assert rows[2].first_estimated_start == 1010.0 and rows[2].first_estimated_at == 100.0
    stored = json.loads(rows[2].priority_terms)
    fresh = priority_terms(CONFIG, JobInputs(20.0, 4, 600.0), 100.0, 0.0)
    assert stored["key"] == fresh.key and stored["policy_text"] == "LINEAR:q=1,wait=-0.01"
    assert {t["name"] for t in stored["terms"]} == {"q", "wait"}
    # The same queue a cycle later: nothing to write.
    previous = {r.job_id: r for r in first}
    assert queue_rows(_view(100.0, JOBS, 2), previous) == []
    # Job 1 ends early: job 3 starts; job 2's estimate moves, its first estimate stays; 1 is gone.
    later = [RJMSJob(3, "RUNNING", 30.0, 2, 300.0, start=400.0, user="alice"), JOBS[1]]
    moved = {r.job_id: r for r in queue_rows(_view(400.0, later, 3), previous)}
    assert moved[1].state == "gone"
    assert moved[2].first_estimated_start == 1010.0
    assert moved[2].estimated_start == 400.0 and moved[2].estimate_basis == "now"
    journal = Journal(tmp_path / "journal.sqlite")
    journal.record_queue(list(moved.values()))
    assert journal.queue(("gone",))[1].job_id == 1
    assert journal.queue()[2].priority_terms == moved[2].priority_terms


def test_rows_with_the_last_passs_inputs_equal_rows_rebuilt_every_pass() -> None:
    """The memo of row inputs (the Flux module's pass per event keeps its job objects, so the
    builder's do not change either) gives the rows a rebuild of every row gives, pass after
    pass, while jobs arrive, start, end and change priority."""
    import random
    from dataclasses import replace

    rng = random.Random(3)
    builder = SnapshotBuilder()
    jobs = {i: RJMSJob(i, "PENDING", float(i), rng.choice([1, 2, 4]), 300.0, user="u") for i in range(1, 30)}
    rebuilt: dict = {}
    memoized: dict = {}
    inputs: dict = {}
    written = 0
    for cycle in range(1, 40):
        now = 100.0 + 37.0 * cycle
        busy = 0
        for job_id, job in sorted(jobs.items()):  # start what fits, end some, reprioritize some
            if job.state == "RUNNING" and rng.random() < 0.3:
                del jobs[job_id]
            elif job.state == "RUNNING":
                busy += job.procs
        for job_id, job in sorted(jobs.items()):
            if job.state == "PENDING" and busy + job.procs <= 8 and rng.random() < 0.5:
                jobs[job_id] = replace(job, state="RUNNING", start=now)
                busy += job.procs
            elif job.state == "PENDING" and rng.random() < 0.1:
                jobs[job_id] = replace(job, priority=float(rng.randrange(3)))
        jobs[100 + cycle] = RJMSJob(100 + cycle, "PENDING", now, rng.choice([1, 2]), 200.0, user="v")
        state = ClusterState(taken_at=now, total_procs=8, free_procs=8 - busy, jobs=tuple(jobs.values()))
        built = builder.build(state, {})
        view = QueueView(cycle, now, state, built, schedule(built.snapshot, CONFIG), CONFIG, "x")
        expected = queue_rows(view, rebuilt)
        got = queue_rows(view, memoized, inputs)
        assert got == expected
        written += len(got)
        for rows, previous in ((expected, rebuilt), (got, memoized)):
            for row in rows:
                if row.state == "gone":
                    previous.pop(row.job_id, None)
                else:
                    previous[row.job_id] = row
    # The memo keeps the row inputs of the jobs listed, and each outputs JSON with its object.
    # (The job objects aligned with the ids, and None last: the row of a new job is -1.)
    assert written > 0 and set(jobs) == set(inputs["cols"]["ids"].tolist())
    assert [j.job_id for j in inputs["job"][:-1]] == inputs["cols"]["ids"].tolist() and inputs["job"][
        -1
    ] is None
    assert all(id(o) == k for k, (o, _) in inputs["json"].items())
