"""The queue rows when a job's outputs object is new but equal (the daemon's builder after the
job's read changed in a field no row reads, e.g. the priority rush set): such a row is not
looked at again, and a new outputs object whose JSON may differ (another value, another type,
-0.0 for 0.0, a nested value) is written; the rows are those rebuilt against the rows last
written every pass (issue 31, round 28, r31rq)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from rush.core.config import CoreConfig
from rush.core.schedule import schedule
from rush.planner import queue_view
from rush.planner.journal import QueueRow
from rush.planner.queue_view import QueueView, queue_delta
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob
from tests.planner.set_answers import keep_latest

TOTAL = 16
CONFIG = CoreConfig(backfill="easy", threshold=None)
# A job's plain outputs and other outputs a pass may give it, whose JSON differs though most
# are equal to the plain ones by == (the row must be written).
OTHERWISE = {
    "a float for an int": ({"x": 1}, {"x": 1.0}),
    "a bool for an int": ({"x": 1}, {"x": True}),
    "negative zero": ({"x": 0.0}, {"x": -0.0}),
    "another value": ({"x": 1}, {"x": 2}),
    "another key": ({"x": 1}, {"y": 1}),
    "a key more": ({"x": 1}, {"x": 1, "y": None}),
    "a nested value": ({"x": [1]}, {"x": [1.0]}),
}


def _queue() -> dict[int, RJMSJob]:
    jobs = {i: RJMSJob(i, "PENDING", 10.0 * i, 4, 600.0, user="v") for i in range(2, 12)}
    jobs[1] = RJMSJob(1, "RUNNING", 0.0, TOTAL, 5_000.0, start=5.0, user="v")
    return jobs


def _view(
    builder: SnapshotBuilder, jobs: dict[int, RJMSJob], now: float, cycle: int, outputs: dict
) -> QueueView:
    """The pass's view with each job's outputs a new dict (``outputs[job]``, else ``{"x": 0}``)."""
    listed = tuple(jobs.values())
    state = ClusterState(now, TOTAL, 0, listed)
    built = builder.build(state, {})
    made = {job_id: dict(outputs.get(job_id, {"x": 0})) for job_id in jobs}
    built = dataclasses.replace(built, outputs=made)
    return QueueView(cycle, now, state, built, schedule(built.snapshot, CONFIG), CONFIG, "FCFS")


@pytest.mark.parametrize("otherwise", list(OTHERWISE), ids=list(OTHERWISE))
def test_a_new_outputs_object_is_written_where_its_json_may_differ_and_only_there(
    otherwise: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = _queue()
    builder = SnapshotBuilder()
    memo_rows: dict[int, QueueRow] = {}
    rebuilt: dict[int, QueueRow] = {}
    memo: dict = {}
    encoded: list[object] = []
    dumps = json.dumps

    def counted(value: object, **kwargs: object) -> str:
        encoded.append(value)
        return dumps(value, **kwargs)

    monkeypatch.setattr(queue_view.json, "dumps", counted)
    plain, other = OTHERWISE[otherwise]
    for cycle in range(1, 9):
        outputs = {5: other if cycle in (4, 5) else plain}
        view = _view(builder, jobs, 1_000.0 + cycle, cycle, outputs)
        del encoded[:]
        got = queue_delta(view, memo_rows, memo, hold_estimates=True)
        if cycle > 1:  # every pass's outputs new: encoded again only where they may show otherwise
            shown = [e for e in encoded if isinstance(e, dict) and e and set(e) <= {"x", "y"}]
            if isinstance(plain["x"], list):  # a nested value: never taken as the same (cost only)
                assert shown == [other if cycle in (4, 5) else plain], cycle
            else:
                assert shown == {4: [other], 6: [plain]}.get(cycle, []), cycle
        want = queue_delta(view, rebuilt, None, hold_estimates=True)
        assert got == want, cycle
        keep_latest(got.whole + got.moved, memo_rows)
        keep_latest(want.whole + want.moved, rebuilt)
        if cycle == 4:  # the row shows the new JSON
            assert [r.job_id for r in got.whole] == [5]
            assert memo_rows[5].model_outputs == dumps(other, default=str, sort_keys=True)
        if cycle == 6:  # and the plain one again after
            assert [r.job_id for r in got.whole] == [5]
            assert memo_rows[5].model_outputs == dumps(plain, default=str, sort_keys=True)
    assert memo_rows == rebuilt


@pytest.mark.parametrize(
    ("outputs", "last", "otherwise"),
    [
        (
            {"a": 1, "b": "s", "c": None, "d": False, "e": 2.5},
            {"e": 2.5, "d": False, "c": None, "b": "s", "a": 1},
            False,
        ),
        ({"a": math.nan}, {"a": math.nan}, False),
        ({"a": 0.0}, {"a": -0.0}, True),
        ({"a": 1}, {"a": 1.0}, True),
        ({"a": 1}, {"a": 2}, True),
        ({"a": "s"}, {"a": "t"}, True),
        ({"a": 2.5}, {"a": 3.5}, True),
        ({"a": 1}, {"a": True}, True),
        ({"a": 1}, {"b": 1}, True),
        ({"a": 1}, {"a": 1, "b": 1}, True),
        ({"a": (1,)}, {"a": (1,)}, True),
        (None, None, False),
        (None, {}, True),
        ({}, None, True),
        ({}, {}, False),
    ],
)
def test_shows_otherwise_only_where_the_json_may_differ(
    outputs: dict | None, last: dict | None, otherwise: bool
) -> None:
    assert queue_view._shows_otherwise(outputs, last) is otherwise
    if not otherwise and outputs is not None:
        assert json.dumps(outputs, sort_keys=True) == json.dumps(last, sort_keys=True)
