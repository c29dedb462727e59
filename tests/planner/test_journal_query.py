"""The read-only journal query layer behind ``rush explain`` and ``rush status``: what it answers
from a journal written by the daemon's own Journal, who may see what, and bad journals."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from rush.errors import ConfigError
from rush.planner.journal import JobRecord
from rush.planner.journal_query import (
    MAX_HISTORY_LINES,
    JobNotFound,
    JobNotVisible,
    JournalQuery,
    JournalUnavailable,
    Viewer,
    VisibilityRules,
    may_see,
)
from tests.planner.journal_query_data import T0, Decision, JournalContents, outputs, queue_row, write_journal

PRIVATE = VisibilityRules("slurm", private_jobs=True, privileged=frozenset({0, 64030}))
ALICE, BOB = Viewer(1000, "alice"), Viewer(1001, "bob")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    queue = [
        queue_row(1, state="running", start=T0 - 100, estimate=600.0, user="carol", priority=None),
        queue_row(
            2,
            priority=10,
            procs=8,
            fairshare=0.8,
            estimated_start=T0 + 500,
            estimate_basis="projection",
            waits_behind=1,
            first_estimated_start=T0 + 900,
            first_estimated_at=T0 - 60,
            model_outputs=outputs(runtime_class="large", class_source="model", class_probability=0.9),
        ),
        queue_row(3, priority=20, user="bob"),
        queue_row(4, priority=20, user="bob", runtime_class=0),
        queue_row(5, state="gone", priority=99),
    ]
    decisions = [
        Decision(
            2,
            "hold",
            "predicted variable: skip 1 of 10",
            status="done",
            time=T0 - 50 * 60,
            outputs={"variable": True, "variation_probability": 0.7},
            answer="held",
        )
    ]
    for k in range(50):  # a cycle a minute: an advice row and a dry-run priority row each
        t = T0 - (50 - k) * 60
        decisions.append(
            Decision(
                2,
                "reserve",
                f"first job that does not fit; shadow time t={t + 500:.0f}",
                time=t,
                cycle=k + 1,
                value=t + 500,
            )
        )
        decisions.append(
            Decision(
                2,
                "skip",
                "still predicted variable",
                status="done",
                time=t,
                cycle=k + 1,
                outputs={"variable": True, "variation_probability": 0.6 + k / 1000},
            )
        )
    decisions.append(
        Decision(
            2,
            "release",
            "skip limit reached",
            status="failed",
            time=T0,
            cycle=51,
            answer="slurm: permission denied",
        )
    )
    contents = JournalContents(
        queue, decisions, [JobRecord(2, skips=51, held_by_rush=True)], policy="LINEAR:q=1,fairshare=-10"
    )
    return write_journal(tmp_path / "journal.sqlite", contents)


def test_job_view_priority_rank_terms_and_estimate(journal: Path) -> None:
    with JournalQuery(journal) as q:
        view = q.job_view(2)
    assert view.row["user"] == "alice" and view.row["state"] == "pending"
    # Two pending jobs have a higher value (20, 20); the gone job (99) does not count.
    assert (view.rank, view.pending) == (3, 3)
    terms = {t["name"]: t for t in view.terms["terms"]}
    assert terms["q"]["value"] == 8 and terms["q"]["contribution"] == 8
    assert terms["fairshare"]["value"] == 0.8 and terms["fairshare"]["contribution"] == pytest.approx(-8)
    assert view.terms["policy_text"] == "LINEAR:q=1,fairshare=-10"
    # Behind the running job 1: its start + its estimate.
    assert view.waits_behind == {"job_id": 1, "state": "running", "predicted_end": T0 + 500}
    assert view.row["model_outputs"]["class_probability"] == 0.9
    assert view.row["first_estimated_start"] == T0 + 900


def test_history_collapses_runs_and_keeps_outcomes(journal: Path) -> None:
    with JournalQuery(journal) as q:
        view = q.job_view(2)
    assert view.history_rows == 102
    lines = [(h.action, h.status, h.count) for h in view.history]
    # The reserve advice moves its shadow time every cycle: one line all the same.
    assert lines == [
        ("hold", "done", 1),
        ("reserve", "advice", 50),
        ("skip", "done", 50),
        ("release", "failed", 1),
    ]
    reserve = view.history[1]
    assert (reserve.first_time, reserve.last_time) == (T0 - 3000, T0 - 60)
    assert reserve.reason.endswith(f"t={T0 - 60 + 500:.0f}")  # the last one
    assert view.history[3].answer == "slurm: permission denied"
    assert view.skips == 51
    assert view.skip_predictions[-1].model_outputs["variation_probability"] == pytest.approx(0.649)


def test_history_bounded(tmp_path: Path) -> None:
    # Reasons alternate in shape, so nothing collapses: still at most MAX_HISTORY_LINES lines.
    decisions = [
        Decision(7, "hold" if k % 2 else "release", "x" * (k % 3 + 1), status="done", time=T0 + k)
        for k in range(3 * MAX_HISTORY_LINES)
    ]
    path = write_journal(tmp_path / "j.sqlite", JournalContents([queue_row(7)], decisions))
    with JournalQuery(path) as q:
        view = q.job_view(7)
    assert len(view.history) == MAX_HISTORY_LINES
    assert view.history_omitted == 3 * MAX_HISTORY_LINES - MAX_HISTORY_LINES
    assert view.history[-1].last_time == T0 + 3 * MAX_HISTORY_LINES - 1


def test_unknown_job(journal: Path) -> None:
    with JournalQuery(journal) as q, pytest.raises(JobNotFound, match="job 42 is not in rush's journal"):
        q.job_view(42)


def test_visibility_of_one_job(journal: Path) -> None:
    with JournalQuery(journal) as q:
        with pytest.raises(JobNotVisible, match="PrivateData=jobs"):
            q.job_view(3, ALICE, PRIVATE)
        assert q.job_view(3, BOB, PRIVATE).row["user"] == "bob"
        assert q.job_view(3, ALICE, VisibilityRules("slurm")).row["user"] == "bob"
        assert q.job_view(3, Viewer(64030, "slurm"), PRIVATE).row["user"] == "bob"
        # The job alice's waits behind is carol's: its end is shown, not its id.
        assert q.job_view(2, ALICE, PRIVATE).waits_behind == {
            "job_id": None,
            "state": "running",
            "predicted_end": T0 + 500,
        }


def test_queue_view(journal: Path) -> None:
    with JournalQuery(journal) as q:
        lines = q.queue_view()
        assert [(s.job_id, s.state, s.rank) for s in lines] == [
            (3, "pending", 1),
            (4, "pending", 1),
            (2, "pending", 3),
            (1, "running", None),
        ]
        assert lines[2].skips == 51 and lines[2].runtime_class == "large" and lines[1].runtime_class == "0"
        assert [s.job_id for s in q.queue_view(user="bob")] == [3, 4]
        # alice under PrivateData sees her own job only, with its rank among all pending jobs.
        assert [(s.job_id, s.rank) for s in q.queue_view(ALICE, PRIVATE)] == [(2, 3)]


@pytest.mark.parametrize(
    ("rules", "viewer", "owner", "seen"),
    [
        (VisibilityRules("slurm"), ALICE, "bob", True),  # squeue shows every job
        (PRIVATE, ALICE, "bob", False),
        (PRIVATE, ALICE, "alice", True),
        (PRIVATE, Viewer(0, "root"), "bob", True),
        (PRIVATE, Viewer(64030, "slurm"), "bob", True),  # SlurmUser
        (PRIVATE, ALICE, None, False),  # owner unknown: only the privileged
        (VisibilityRules("flux", privileged=frozenset({0, 500})), Viewer(500, "flux"), "1000", True),
        (VisibilityRules("flux", privileged=frozenset({0, 500})), ALICE, "1000", True),  # Flux: uid as owner
        (VisibilityRules("flux", privileged=frozenset({0, 500})), BOB, "1000", False),  # a guest
        (VisibilityRules("flux"), Viewer(1002, None), "1002", True),  # no passwd entry: by uid
    ],
)
def test_may_see(rules: VisibilityRules, viewer: Viewer, owner: str | None, seen: bool) -> None:
    assert may_see(rules, viewer, owner) is seen


def test_queries_write_nothing(journal: Path) -> None:
    before = _digest(journal)
    with JournalQuery(journal) as q:
        q.job_view(2)
        q.queue_view()
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            q.db.execute("DELETE FROM queue")
    assert _digest(journal) == before


def test_missing_journal_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "nope.sqlite"
    with pytest.raises(ConfigError, match="no journal here"):
        JournalQuery(path)
    assert not path.exists()
    with pytest.raises(ConfigError, match="not a file"):
        JournalQuery(tmp_path)


def test_not_a_journal(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(ConfigError, match="not a rush journal.*missing decisions"):
        JournalQuery(empty)
    assert empty.stat().st_size == 0
    older = tmp_path / "older.sqlite"
    with sqlite3.connect(older) as db:
        for table in ("decisions", "jobs", "meta"):
            db.execute(f"CREATE TABLE {table} (x)")
    with pytest.raises(ConfigError, match="missing queue"):
        JournalQuery(older)


def test_corrupt_journal(tmp_path: Path, journal: Path) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not sqlite at all\n" * 512)
    with pytest.raises(JournalUnavailable, match="corrupt or not SQLite"):
        JournalQuery(garbage)
    # A real journal with its pages overwritten in the middle.
    data = bytearray(journal.read_bytes())
    data[4096:12288] = b"\xff" * 8192
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(bytes(data))
    with pytest.raises(JournalUnavailable):
        with JournalQuery(broken) as q:
            q.job_view(2)
            q.queue_view()


def test_locked_journal(journal: Path) -> None:
    holder = sqlite3.connect(journal, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(JournalUnavailable, match="locked"):
            with JournalQuery(journal, busy_timeout=0.2) as q:
                q.queue_view()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.parametrize("job_id", [2**63, 10**30, -1])
def test_a_job_id_beyond_sqlites_integers_is_unknown_not_a_crash(journal: Path, job_id: int) -> None:
    with JournalQuery(journal) as q, pytest.raises(JobNotFound, match="not a job id"):
        q.job_view(job_id)
