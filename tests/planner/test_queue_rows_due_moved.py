"""Moved rows whose priority terms are still due (``queue_delta``'s ``_moved_rows``): a pending
row whose only change is its estimated start, its basis or the job it waits behind, and whose
terms wait for a later pass (the terms' budget, :data:`rush.planner.queue_view.TERMS_PER_PASS`),
is given the row a whole build gives and waits for its terms as that row would. Checked against
the same passes with every moved row built whole: the same rows whole and moved, in the same
order, pass after pass, with the daemon's fresh objects and the Flux module's kept ones, with and
without held estimates, while other rows are looked at whole for new outputs objects equal to
their last (a daemon's read gives about 200 a cycle, research.md's r31rq section); and the case
did happen."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

import rush.planner.queue_view as queue_view
from rush.core.config import CoreConfig
from rush.core.policies import parse_policy
from rush.core.schedule import schedule
from rush.planner.journal import QueueRow
from rush.planner.queue_view import QueueView, queue_delta
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import RJMSJob
from tests.planner.queue_steps import random_step, read_of
from tests.planner.set_answers import keep_latest

TOTAL = 16
CONFIG = CoreConfig(policy=parse_policy("LINEAR:q=1"), backfill="easy", threshold=None)

_moved_rows = queue_view._moved_rows


def _all_whole(view, previous, at, fast, slow, due):  # type: ignore[no-untyped-def]
    """The reference: every moved candidate built whole by the loop."""
    slow.extend(fast)
    return []


@pytest.mark.parametrize("hold", [True, False], ids=["held", "every-move"])
@pytest.mark.parametrize("seed", range(4))
def test_moved_rows_waiting_for_terms_are_the_rows_built_whole(
    monkeypatch: pytest.MonkeyPatch, seed: int, hold: bool
) -> None:
    monkeypatch.setattr(queue_view, "TERMS_PER_PASS", 2)  # rows wait for their terms many passes
    given = {"due": 0}

    def counted(view, previous, at, fast, slow, due):  # type: ignore[no-untyped-def]
        out = _moved_rows(view, previous, at, fast, slow, due)
        given["due"] += len(due)
        return out

    rng = random.Random(seed)
    jobs = {
        i: RJMSJob(i, "PENDING", 100.0 + i, rng.choice([2, 4, 8, 16]), rng.choice([300.0, 900.0]), user="u")
        for i in range(1, 50)
    }
    builder = SnapshotBuilder()
    rows: dict[int, QueueRow] = {}
    whole_rows: dict[int, QueueRow] = {}
    memo: dict = {}
    whole_memo: dict = {}
    next_id = [100]
    for cycle in range(1, 40):
        now = 1_000.0 + 30.0 * cycle
        state = read_of(jobs, now, bool(seed % 2), TOTAL)
        built = builder.build(state, {})
        # Some jobs given new outputs objects, equal to the last: their rows are looked at whole
        # (a moved one among them wants its terms from the loop, between the rows given here).
        outputs = {k: dict(v) if rng.random() < 0.3 else v for k, v in built.outputs.items()}
        built = replace(built, outputs=outputs)
        view = QueueView(cycle, now, state, built, schedule(built.snapshot, CONFIG), CONFIG, "LINEAR:q=1")
        monkeypatch.setattr(queue_view, "_moved_rows", counted)
        got = queue_delta(view, rows, memo, hold_estimates=hold)
        monkeypatch.setattr(queue_view, "_moved_rows", _all_whole)
        want = queue_delta(view, whole_rows, whole_memo, hold_estimates=hold)
        assert got == want, cycle
        keep_latest(got.whole + got.moved, rows)
        keep_latest(want.whole + want.moved, whole_rows)
        assert rows == whole_rows
        assert memo["due"] == whole_memo["due"] and memo["queued"] == whole_memo["queued"]
        random_step(rng, jobs, now, next_id, TOTAL)
    # The case the lever is for happened.
    assert given["due"] > 0, given


def test_a_nan_key_row_waiting_for_terms_is_built_whole() -> None:
    """A whole build gives a row whose key is NaN new due terms (its key never equals its last):
    such a row is not given its last row's terms by the moved path."""
    old = QueueRow(
        7, 10.0, 1, "pending", "u", "", "", 5.0, 4, 600.0, None, -1, None, 1, 1, float("nan"),
        100.0, "projection", 3, 100.0, 10.0, None, None, '{"terms_at": 10.0}'
    )  # fmt: skip
    at = {
        "ids": queue_view.np.array([7]),
        "start": queue_view.np.array([160.0]),
        "has_start": queue_view.np.array([True]),
        "basis": queue_view.np.array(["projection"], dtype=object),
        "behind": queue_view.np.array([4]),
    }
    view = type("View", (), {"now": 20.0, "cycle": 2})()
    slow: list[int] = []
    due: list = []
    assert _moved_rows(view, {7: old}, at, [0], slow, due) == [] and due == [] and slow == [0]
    due_old = old._replace(priority_key=5.0)
    assert _moved_rows(view, {7: due_old}, at, [0], slow, due) == [] and slow == [0]
    assert due == [(0, due_old._replace(time=20.0, cycle=2, estimated_start=160.0, waits_behind=4))]
