"""The journal's queue rows read from the decisions' columns (rush/planner/queue_view.py's
``queue_delta`` over ``Decisions.columns``, compared with the last pass's as arrays): a change
of anything a row shows is written, whichever way the RJMS gives its jobs (the daemon's fresh
objects, the Flux module's kept ones), and decisions made without columns (read from their
dictionaries) give the same rows as the core's columns."""

from __future__ import annotations

import dataclasses
import random

import pytest

from rush.core.config import CoreConfig
from rush.core.schedule import schedule
from rush.planner.journal import QueueRow
from rush.planner.queue_view import QueueView, queue_delta
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob
from tests.planner.set_answers import keep_latest

TOTAL = 16
CONFIG = CoreConfig(backfill="easy", threshold=None)


def _view(
    builder: SnapshotBuilder, jobs: dict[int, RJMSJob], now: float, cycle: int, fresh: bool
) -> QueueView:
    listed = tuple(dataclasses.replace(j) for j in jobs.values()) if fresh else tuple(jobs.values())
    busy = sum(j.procs for j in jobs.values() if j.state == "RUNNING")
    state = ClusterState(now, TOTAL, TOTAL - busy, listed)
    built = builder.build(state, {})
    return QueueView(cycle, now, state, built, schedule(built.snapshot, CONFIG), CONFIG, "FCFS")


@pytest.mark.parametrize("fresh", [True, False], ids=["daemon", "flux-module"])
@pytest.mark.parametrize(
    "change",
    [{"user": "mallory"}, {"account": "other"}, {"partition": "debug"}, {"requested_time": 1800.0}],
    ids=["user", "account", "partition", "request"],
)
def test_a_pending_jobs_changed_field_is_written(fresh: bool, change: dict) -> None:
    jobs = {i: RJMSJob(i, "PENDING", 100.0 * i, 4, 900.0, user="v", account="a") for i in range(1, 30)}
    jobs[1] = dataclasses.replace(jobs[1], state="RUNNING", start=500.0)
    builder = SnapshotBuilder()
    rows: dict[int, QueueRow] = {}
    memo: dict = {}
    for cycle in (1, 2):
        whole, moved = queue_delta(_view(builder, jobs, 1000.0, cycle, fresh), rows, memo)
        keep_latest(whole + moved, rows)
    assert queue_delta(_view(builder, jobs, 1000.0, 3, fresh), rows, memo) == ([], [])  # nothing moved
    jobs[17] = dataclasses.replace(jobs[17], **change)
    whole, moved = queue_delta(_view(builder, jobs, 1000.0, 4, fresh), rows, memo)
    changed = {row.job_id: row for row in whole + moved}
    assert 17 in changed
    for name, value in change.items():
        assert getattr(changed[17], name) == value


@pytest.mark.parametrize("seed", range(6))
def test_decisions_without_columns_give_the_same_rows(seed: int) -> None:
    rng = random.Random(seed)
    jobs = {
        i: RJMSJob(i, "PENDING", 1000.0 + 10 * i, rng.choice([1, 2, 4, 8]), 600.0, user="u")
        for i in range(1, 41)
    }
    builder = SnapshotBuilder()
    with_rows: dict[int, QueueRow] = {}
    without_rows: dict[int, QueueRow] = {}
    with_memo: dict = {}
    without_memo: dict = {}
    next_id = 100
    for cycle in range(1, 10):
        now = 2000.0 + 45.0 * cycle
        view = _view(builder, jobs, now, cycle, fresh=bool(seed % 2))
        assert view.decisions.columns is not None
        bare = dataclasses.replace(view, decisions=dataclasses.replace(view.decisions, columns=None))
        got = queue_delta(view, with_rows, with_memo)
        want = queue_delta(bare, without_rows, without_memo)
        assert got == want, cycle
        keep_latest(got.whole + got.moved, with_rows)
        keep_latest(want.whole + want.moved, without_rows)
        busy = sum(j.procs for j in jobs.values() if j.state == "RUNNING")
        for job_id, job in sorted(jobs.items()):
            if job.state == "RUNNING" and rng.random() < 0.3:
                del jobs[job_id]
            elif job.state == "PENDING" and busy + job.procs <= TOTAL and rng.random() < 0.2:
                jobs[job_id] = dataclasses.replace(job, state="RUNNING", start=now)
                busy += job.procs
        for _ in range(rng.randrange(4)):
            jobs[next_id] = RJMSJob(next_id, "PENDING", now, rng.choice([1, 2, 4]), 900.0, user="v")
            next_id += 1


@pytest.mark.parametrize("field", ["estimate_basis", "waits_behind", "estimated_start"])
def test_a_moving_value_changed_alone_is_written(field: str) -> None:
    jobs = {i: RJMSJob(i, "PENDING", 100.0 * i, 4, 900.0, user="v") for i in range(1, 30)}
    jobs[1] = dataclasses.replace(jobs[1], state="RUNNING", start=500.0)
    builder = SnapshotBuilder()
    rows: dict[int, QueueRow] = {}
    memo: dict = {}
    for cycle in (1, 2, 3):  # (terms given, nothing left due)
        view = _view(builder, jobs, 1000.0, cycle, fresh=False)
        whole, moved = queue_delta(view, rows, memo)
        keep_latest(whole + moved, rows)
    d = view.decisions
    job_id = d.order[-1]
    value = {"estimate_basis": "reservation", "waits_behind": 2, "estimated_start": 99_999.0}[field]
    assert getattr(d, field).get(job_id) != value
    changed = dataclasses.replace(d, columns=None, **{field: {**getattr(d, field), job_id: value}})
    whole, moved = queue_delta(dataclasses.replace(view, cycle=4, decisions=changed), rows, memo)
    assert [row.job_id for row in whole + moved] == [job_id]
    column = {"estimate_basis": "estimate_basis", "waits_behind": "waits_behind"}.get(
        field, "estimated_start"
    )
    assert getattr((whole + moved)[0], column) == value
