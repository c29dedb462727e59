"""The journal's queue rows written in bulk (rush/planner/queue_view.py's ``queue_delta`` and
``Journal.record_queue``'s rows written whole or in their moving columns only, priority terms
within a budget per pass) answer ``rush explain`` and ``rush status`` as rows rebuilt and
written whole every pass did.

Two journals over the same cycles: one written by a reference (every pending job's row rebuilt,
its priority terms computed whenever its key or group moved, every changed row written whole:
the rows before the change), one by the shells' path. After each cycle, the same questions to
both through :class:`rush.planner.journal_query.JournalQuery`: every job's view (row, rank,
terms, the job it waits behind) and the status lines. A policy with a wait term moves keys as
jobs wait; jobs arrive, start and end; the terms' budget is set small so that rows wait for
their terms over several passes."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import rush.planner.queue_view as queue_view
from rush.core.config import CoreConfig
from rush.core.policies import parse_policy
from rush.core.schedule import schedule
from rush.planner.journal import Journal, QueueRow, due_at, terms_due
from rush.planner.journal_query import JournalQuery
from rush.planner.queue_view import QueueView, describe_core, queue_delta
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import RJMSJob
from tests.planner.queue_steps import random_step, read_of
from tests.planner.set_answers import keep_latest

# A key that moves as jobs wait, and one that does not (the terms still show the wait: a row's
# terms are those of the time its key was computed).
POLICIES = ("LINEAR:q=1,wait=-0.01", "LINEAR:q=1")
TOTAL = 16


def reference_rows(view: QueueView, previous: dict[int, QueueRow]) -> list[QueueRow]:
    """The rows that changed, each built whole, terms computed whenever the key or group moved."""
    d = view.decisions
    pending = queue_view._pending_of(view)
    running_now = queue_view._running_estimates(view)
    out, seen = [], set()
    for job in view.state.jobs:
        seen.add(job.job_id)
        old, p = previous.get(job.job_id), pending.get(job.job_id)
        running = job.state != "PENDING" and job.start is not None
        estimated = None if running else d.estimated_start.get(job.job_id)
        if estimated is not None and estimated == float("inf"):
            estimated = None
        first = (old.first_estimated_start, old.first_estimated_at) if old is not None else (None, None)
        if first[1] is None and estimated is not None:
            first = (estimated, view.now)
        outputs = view.built.outputs.get(job.job_id)
        key, group = d.priority_key.get(job.job_id), d.priority_group.get(job.job_id)
        terms = None
        if p is not None and key is not None:
            if old is not None and (old.priority_key, old.priority_group) == (key, group):
                terms = old.priority_terms
            else:
                inputs = queue_view._inputs(job, p)
                origin = view.built.snapshot.time_origin
                terms = queue_view.terms_json(view.config, view.policy_text, inputs, view.now, origin)
        row = QueueRow(
            job.job_id,
            view.now,
            view.cycle,
            "running" if running else "pending",
            job.user,
            job.account,
            job.partition,
            job.submit,
            job.procs,
            job.requested_time,
            running_now.get(job.job_id) if running else None if p is None else p[0],
            -1 if p is None else p[1],
            None if p is None else p[2],
            d.priority.get(job.job_id),
            group,
            key,
            estimated,
            None if running else d.estimate_basis.get(job.job_id),
            None if running else d.waits_behind.get(job.job_id),
            *first,
            job.start if running else None,
            None if outputs is None else queue_view.json.dumps(outputs, default=str, sort_keys=True),
            terms,
        )
        if old is None or row[3:] != old[3:]:
            out.append(row)
    for job_id, old in previous.items():
        if job_id not in seen and old.state != "gone":
            out.append(old._replace(time=view.now, cycle=view.cycle, state="gone"))
    return out


def _config(policy: str) -> CoreConfig:
    return CoreConfig(policy=parse_policy(policy), threshold=None, wait_quantum=120.0)


def _journal(path: Path, origin: float, policy: str) -> Journal:
    journal = Journal(path, synchronous="NORMAL")
    journal.set_meta("core_config", describe_core(_config(policy), policy))
    journal.set_meta("time_origin", repr(origin))
    return journal


def _answers(path: Path, job_ids: set[int]) -> tuple:
    with JournalQuery(path) as query:
        views = {}
        for job_id in sorted(job_ids):
            view = query.job_view(job_id)
            views[job_id] = (
                view.row,
                view.rank,
                view.pending,
                view.terms,
                view.terms_error,
                view.waits_behind,
            )
        return views, query.queue_view()


@pytest.mark.parametrize("seed", range(4))
def test_explain_and_status_answer_the_same_from_rows_written_in_bulk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.setattr(queue_view, "TERMS_PER_PASS", 7)  # rows wait for their terms a few passes
    rng = random.Random(seed)
    users = ["alice", "bob", "carol"]
    jobs = {
        i: RJMSJob(i, "PENDING", 1000.0 + 10 * i, rng.choice([1, 2, 4, 8]), 600.0, user=rng.choice(users))
        for i in range(1, 41)
    }
    builder = SnapshotBuilder()
    origin = 0.0
    policy = POLICIES[seed // 2 % 2]
    config = _config(policy)
    old_journal = _journal(tmp_path / "old.sqlite", origin, policy)
    new_journal = _journal(tmp_path / "new.sqlite", origin, policy)
    old_rows: dict[int, QueueRow] = {}
    new_rows: dict[int, QueueRow] = {}
    memo: dict = {}
    next_id = [100]
    asked: set[int] = set()
    moved_written = deferred = 0
    for cycle in range(1, 13):
        now = 2000.0 + 45.0 * cycle
        # Odd seeds: a fresh read each cycle (the daemon's), objects equal to the last ones, not
        # the same; even seeds: the objects kept while unchanged (the Flux module's).
        state = read_of(jobs, now, bool(seed % 2), TOTAL)
        built = builder.build(state, {})
        decided = schedule(built.snapshot, config)
        view = QueueView(cycle, now, state, built, decided, config, policy)
        want = reference_rows(view, old_rows)
        old_journal.record_queue(want)
        keep_latest(want, old_rows)
        whole, moved = queue_delta(view, new_rows, memo)
        new_journal.record_queue(whole, moved)
        keep_latest(whole + moved, new_rows)
        moved_written += len(moved)
        deferred += sum(
            1 for r in new_rows.values() if r.priority_terms and due_at(r.priority_terms) is not None
        )
        asked |= set(jobs)
        assert _answers(new_journal.path, asked) == _answers(old_journal.path, asked), cycle
        random_step(rng, jobs, now, next_id, TOTAL)
    # The cases the test is for did happen: rows written in their moving columns only, and rows
    # whose terms waited for a later pass.
    assert moved_written > 0 and deferred > 0


def test_a_moved_row_is_written_in_its_moving_columns_only(tmp_path: Path) -> None:
    """A row given as moved keeps its other columns as written (the shells pass only rows that
    changed in those), and the journal's retention index holds gone rows only."""
    journal = Journal(tmp_path / "journal.sqlite")
    row = QueueRow(
        7, 10.0, 1, "pending", "alice", "a", "p", 5.0, 4, 600.0, None, -1, None, None, 1, 5.0,
        100.0, "projection", 3, 100.0, 10.0, None, None, '{"key": 5.0}'
    )  # fmt: skip
    journal.record_queue([row])
    later = row._replace(time=20.0, cycle=2, estimated_start=90.0, estimate_basis="plan", waits_behind=4)
    journal.record_queue([], [later._replace(user="changed", priority_terms=None)])
    assert journal.queue()[7] == later
    indexes = {r[1]: r[4] for r in journal.db.execute("PRAGMA index_list(queue)")}
    assert (
        "queue_time" not in indexes and "queue_user" not in indexes and indexes["queue_gone"] == 1
    )  # partial


def test_a_pass_whose_write_fails_leaves_the_last_passs_rows(tmp_path: Path) -> None:
    """A pass's rows, whole and moved, are one transaction: a write that fails half-way (here a
    moved row SQLite cannot store) leaves the rows of the pass before, whole."""
    journal = Journal(tmp_path / "journal.sqlite")
    first = QueueRow(
        7, 10.0, 1, "pending", "alice", "a", "p", 5.0, 4, 600.0, None, -1, None, None, 1, 5.0,
        100.0, "projection", 3, 100.0, 10.0, None, None, '{"key": 5.0}'
    )  # fmt: skip
    journal.record_queue([first])
    arrived = first._replace(job_id=8, time=20.0, cycle=2)
    broken = first._replace(time=20.0, cycle=2, estimated_start=object())
    with pytest.raises(Exception, match="type"):
        journal.record_queue([arrived], [broken])
    assert journal.queue() == {7: first}


@pytest.mark.parametrize("at", [1700007620.0, np.float64(1700007620.0), np.float32(12.5), 7])
def test_a_due_marker_is_json_and_reads_back_its_time_whatever_the_number_type(at) -> None:
    # The key's time can come from numpy (a trained model's columns): its repr is not JSON.
    import json

    stored = terms_due(at)
    assert json.loads(stored) == {"terms_at": float(at)}
    assert due_at(stored) == float(at)
