"""The journal's queue rows with the shells' held estimates (``queue_delta(...,
hold_estimates=True)``): a pass where estimated starts only drift (jobs waiting behind a running
job that outlived its limit, projected to end a second from now) writes nothing until a drift
leaves the core's granularity, then the pass's exact value; every other column as without; the
same rows with the memo or rebuilt, with the daemon's fresh objects or the Flux module's kept
ones. And what the row writer's identity checks rest on: the snapshot builder's kept objects."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.schedule import schedule
from rush.core.start_estimates import estimate_moved
from rush.planner.journal import QueueRow
from rush.planner.queue_view import QueueView, queue_delta
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob
from tests.planner.set_answers import SetRuntimes, keep_latest

TOTAL = 16
CONFIG = CoreConfig(backfill="easy", threshold=None)


def _queue() -> dict[int, RJMSJob]:
    """A running job on the whole machine past its limit, and whole-machine jobs behind it."""
    jobs = {i: RJMSJob(i, "PENDING", 10.0 * i, TOTAL, 600.0, user="v") for i in range(2, 12)}
    jobs[1] = RJMSJob(1, "RUNNING", 0.0, TOTAL, 100.0, start=5.0, user="v")
    return jobs


def _view(
    builder: SnapshotBuilder, jobs: dict[int, RJMSJob], now: float, cycle: int, fresh: bool
) -> QueueView:
    listed = tuple(dataclasses.replace(j) for j in jobs.values()) if fresh else tuple(jobs.values())
    busy = sum(j.procs for j in jobs.values() if j.state == "RUNNING")
    built = builder.build(ClusterState(now, TOTAL, TOTAL - busy, listed), {})
    state = ClusterState(now, TOTAL, TOTAL - busy, listed)
    return QueueView(cycle, now, state, built, schedule(built.snapshot, CONFIG), CONFIG, "FCFS")


@pytest.mark.parametrize("fresh", [True, False], ids=["daemon", "flux-module"])
def test_a_drift_of_a_second_a_pass_is_written_once_it_leaves_the_granularity(fresh: bool) -> None:
    jobs = _queue()
    builder = SnapshotBuilder()
    rows: dict[int, QueueRow] = {}
    memo: dict = {}
    written: list[int] = []
    for cycle in range(1, 130):
        now = 1_000.0 + cycle  # the running job ends "a second from now": every estimate drifts
        view = _view(builder, jobs, now, cycle, fresh)
        whole, moved = queue_delta(view, rows, memo, hold_estimates=True)
        keep_latest(whole + moved, rows)
        estimated = view.decisions.estimated_start
        if cycle > 3:  # (the priority terms given)
            written.append(len(whole) + len(moved))
            for row in whole + moved:  # a drift written: the pass's own estimate
                assert row.estimated_start == estimated[row.job_id]
        for job_id in range(2, 12):
            row = rows[job_id]
            assert row.estimated_start is not None and math_close(
                row.first_estimated_start, 1_000.0 + 1 + 1.0 + 600.0 * (job_id - 2)
            )
            assert abs(estimated[job_id] - row.estimated_start) <= estimate_moved(row.estimated_start, now)
            assert row.estimate_basis == view.decisions.estimate_basis[job_id]
            assert row.waits_behind == view.decisions.waits_behind.get(job_id)
    # Quiet passes write nothing; a drift past 60 s is written with the pass's values, then quiet.
    # Quiet passes write nothing: 126 passes drift every estimate by 126 s and write in 4 (the
    # nearest three at 61 s; the farther ones held within 5 % of their wait).
    assert 0 < len([n for n in written if n]) <= 8
    assert sum(written) >= 3


def math_close(a: float | None, b: float) -> bool:
    return a is not None and abs(a - b) < 1e-6


def test_without_holding_every_second_is_written() -> None:
    jobs = _queue()
    builder = SnapshotBuilder()
    rows: dict[int, QueueRow] = {}
    memo: dict = {}
    for cycle in range(1, 8):
        view = _view(builder, jobs, 1_000.0 + cycle, cycle, True)
        whole, moved = queue_delta(view, rows, memo)
        keep_latest(whole + moved, rows)
    assert len(whole) + len(moved) == 10


@pytest.mark.parametrize("fresh", [True, False], ids=["daemon", "flux-module"])
def test_a_changed_predecessor_is_written_at_once_with_the_passs_estimate(fresh: bool) -> None:
    jobs = _queue()
    builder = SnapshotBuilder()
    rows: dict[int, QueueRow] = {}
    memo: dict = {}
    for cycle in range(1, 6):
        view = _view(builder, jobs, 1_000.0 + cycle, cycle, fresh)
        keep_latest(sum(queue_delta(view, rows, memo, hold_estimates=True), []), rows)
    # Job 2 ends up held by a user: the jobs behind it now wait behind job 1 directly, a second
    # later than their held starts would say.
    del jobs[2]
    view = _view(builder, jobs, 1_006.0, 6, fresh)
    whole, moved = queue_delta(view, rows, memo, hold_estimates=True)
    got = {row.job_id: row for row in whole + moved}
    for job_id in range(3, 12):
        assert got[job_id].estimated_start == view.decisions.estimated_start[job_id]


@pytest.mark.parametrize("seed", range(4))
def test_held_rows_are_the_same_with_the_memo_or_rebuilt(seed: int) -> None:
    import random

    rng = random.Random(seed)
    jobs = _queue()
    builder = SnapshotBuilder()
    memo_rows: dict[int, QueueRow] = {}
    rebuilt: dict[int, QueueRow] = {}
    memo: dict = {}
    next_id = 100
    for cycle in range(1, 60):
        now = 1_000.0 + cycle * rng.choice([1.0, 1.0, 1.0, 7.0, 45.0])
        view = _view(builder, jobs, now, cycle, fresh=bool(seed % 2))
        got = queue_delta(view, memo_rows, memo, hold_estimates=True)
        want = queue_delta(view, rebuilt, None, hold_estimates=True)
        assert got == want, cycle
        keep_latest(got.whole + got.moved, memo_rows)
        keep_latest(want.whole + want.moved, rebuilt)
        if rng.random() < 0.1:
            jobs[next_id] = RJMSJob(next_id, "PENDING", now, rng.choice([4, 8]), 300.0, user="w")
            next_id += 1
        if rng.random() < 0.05 and len(jobs) > 3:
            del jobs[max(j for j in jobs if jobs[j].state == "PENDING")]


def test_the_builder_gives_the_object_it_kept_for_an_equal_fresh_read() -> None:
    jobs = _queue()
    builder = SnapshotBuilder()
    first = _view(builder, jobs, 1_001.0, 1, fresh=True)
    firsts = {j.job_id: j for j in first.state.jobs}
    second = _view(builder, {**jobs, 3: dataclasses.replace(jobs[3], user="mallory")}, 1_002.0, 2, fresh=True)
    kept = second.built.kept_jobs
    assert set(kept) == set(range(2, 12)) - {3}  # pending, equal, a new object; not the running one
    assert all(kept[j] is firsts[j] for j in kept)
    assert all(kept[j] == k for k in second.state.jobs for j in [k.job_id] if j in kept)
    kept_objects = SnapshotBuilder()  # the Flux module's reads: the same objects, nothing to give
    assert [_view(kept_objects, jobs, 1_001.0 + c, c, fresh=False).built.kept_jobs for c in (1, 2)] == [
        {},
        {},
    ]


def test_a_running_jobs_outputs_are_one_object_while_equal_in_value_and_type() -> None:
    jobs = _queue()
    runtimes = SetRuntimes({1: 50.0})
    builder = SnapshotBuilder(runtime=runtimes)
    outputs = [_view(builder, jobs, 1_000.0 + c, c, fresh=True).built.outputs[1] for c in (1, 2)]
    assert outputs[0] is outputs[1]
    runtimes.estimate[1] = 60.0
    changed = _view(builder, jobs, 1_003.0, 3, fresh=True).built.outputs[1]
    assert changed is not outputs[1] and changed["predicted_runtime"] == 60.0
    runtimes.estimate[1] = 60  # equal, another type: another JSON text
    typed = _view(builder, jobs, 1_004.0, 4, fresh=True).built.outputs[1]
    assert typed is not changed and typed == changed


@pytest.mark.parametrize("fresh", [True, False], ids=["daemon", "flux-module"])
def test_a_running_jobs_changed_prediction_is_written(fresh: bool) -> None:
    jobs = _queue()
    runtimes = SetRuntimes({1: 50.0})
    builder = SnapshotBuilder(runtime=runtimes)
    rows: dict[int, QueueRow] = {}
    memo: dict = {}
    for cycle in range(1, 5):
        keep_latest(
            sum(queue_delta(_view(builder, jobs, 1_000.0 + cycle, cycle, fresh), rows, memo, True), []), rows
        )
    runtimes.estimate[1] = 60
    whole, moved = queue_delta(_view(builder, jobs, 1_005.0, 5, fresh), rows, memo, True)
    assert 1 in {row.job_id for row in whole}
    assert '"predicted_runtime": 60,' in next(r for r in whole if r.job_id == 1).model_outputs


@pytest.mark.parametrize("fresh", [True, False], ids=["daemon", "flux-module"])
def test_a_new_predecessor_a_few_seconds_later_is_written_with_the_passs_estimate(fresh: bool) -> None:
    """Job 4 waits behind job 1 (ends at 2 000); job 1's limit is raised by 20 s, so job 4 now
    waits behind job 2 (ends at 2 010): 10 s later, within the granularity, but another
    predecessor: the row shows the pass's estimate with it."""
    jobs = {
        1: RJMSJob(1, "RUNNING", 0.0, 8, 1_000.0, start=1_000.0, user="v"),
        2: RJMSJob(2, "RUNNING", 0.0, 8, 1_010.0, start=1_000.0, user="v"),
        4: RJMSJob(4, "PENDING", 50.0, 8, 600.0, user="v"),
    }
    builder = SnapshotBuilder()
    rows: dict[int, QueueRow] = {}
    memo: dict = {}
    for cycle in range(1, 4):
        view = _view(builder, jobs, 1_100.0 + cycle, cycle, fresh)
        keep_latest(sum(queue_delta(view, rows, memo, hold_estimates=True), []), rows)
    assert (rows[4].estimated_start, rows[4].waits_behind) == (2_000.0, 1)
    jobs[1] = dataclasses.replace(jobs[1], requested_time=1_020.0)
    view = _view(builder, jobs, 1_104.0, 4, fresh)
    assert (view.decisions.estimated_start[4], view.decisions.waits_behind[4]) == (2_010.0, 2)
    whole, moved = queue_delta(view, rows, memo, hold_estimates=True)
    row = next(r for r in whole + moved if r.job_id == 4)
    assert (row.estimated_start, row.waits_behind) == (2_010.0, 2)


def test_decisions_after_the_pending_rows_are_read_for_their_jobs() -> None:
    """The core's columns hold the pending columns' rows first, then its requeued (killed) jobs':
    a running job's decisions there give its row what the same decisions without columns give."""
    from rush.core.decision_columns import DecisionColumns

    jobs = _queue()
    builder = SnapshotBuilder()
    with_rows: dict[int, QueueRow] = {}
    without_rows: dict[int, QueueRow] = {}
    memos: tuple[dict, dict] = ({}, {})
    for cycle in range(1, 4):
        view = _view(builder, jobs, 1_000.0 + cycle, cycle, fresh=True)
        d = view.decisions
        c = d.columns
        assert c is not None and c.job_id.tolist() == list(range(2, 12))
        cols = DecisionColumns(
            np.append(c.job_id, 1),
            np.append(c.priority, 777),
            np.append(c.has_priority, True),
            np.append(c.group, 3),
            np.append(c.key, 5.5),
            np.append(c.estimated_start, np.nan),
            np.append(c.basis, None),
            np.append(c.behind, -1),
        )
        extra = {"priority": {**d.priority, 1: 777}, "priority_group": {**d.priority_group, 1: 3}}
        extra["priority_key"] = {**d.priority_key, 1: 5.5}
        with_cols = dataclasses.replace(view, decisions=dataclasses.replace(d, columns=cols, **extra))
        bare = dataclasses.replace(view, decisions=dataclasses.replace(d, columns=None, **extra))
        got = queue_delta(with_cols, with_rows, memos[0], True)
        want = queue_delta(bare, without_rows, memos[1], True)
        assert got == want
        keep_latest(got.whole + got.moved, with_rows)
        keep_latest(want.whole + want.moved, without_rows)
    assert (with_rows[1].priority, with_rows[1].priority_group, with_rows[1].priority_key) == (777, 3, 5.5)
