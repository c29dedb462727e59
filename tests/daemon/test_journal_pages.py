"""The journal's connection keeps a cycle's pages and spaces its WAL checkpoints (issue 31,
round 31, r31rq: ``PAGE_CACHE_KIB``, ``CHECKPOINT_PAGES`` in rush/planner/journal.py), and the
journal stays what its readers see: every commit visible to another connection at once (as
``rush status`` and ``rush explain`` open it), the WAL file within its bound however much is
written, the same rows whichever cache and checkpoint cadence the writer uses."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

import rush.planner.journal as journal_module
from rush.planner.journal import (
    CHECKPOINT_PAGES,
    PAGE_CACHE_KIB,
    QUEUE_COLUMNS,
    WAL_LIMIT,
    Journal,
    QueueRow,
)

# A WAL frame is a page and a 24-byte header; the file starts with a 32-byte header.
FRAME_HEADER, WAL_HEADER = 24, 32


def _pragma(journal: Journal, name: str) -> object:
    return journal.db.execute(f"PRAGMA {name}").fetchone()[0]


@pytest.mark.parametrize("synchronous", ["FULL", "NORMAL"])
def test_the_connection_keeps_pages_and_spaces_checkpoints(tmp_path: Path, synchronous: str) -> None:
    path = tmp_path / "journal.sqlite"
    for _ in range(2):  # a new journal, then the same one opened again
        journal = Journal(path, synchronous=synchronous)
        assert _pragma(journal, "journal_mode") == "wal"
        assert _pragma(journal, "cache_size") == -PAGE_CACHE_KIB
        assert _pragma(journal, "wal_autocheckpoint") == CHECKPOINT_PAGES
        assert _pragma(journal, "journal_size_limit") == WAL_LIMIT
        journal.close()


def test_the_checkpoints_frames_fit_the_wal_limit(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.sqlite")
    page = _pragma(journal, "page_size")
    journal.close()
    assert CHECKPOINT_PAGES > 1000  # spaced wider than SQLite's default
    assert WAL_HEADER + CHECKPOINT_PAGES * (page + FRAME_HEADER) <= WAL_LIMIT


def _row(rng: random.Random, job_id: int, cycle: int) -> QueueRow:
    pending = rng.random() < 0.7
    start = rng.choice([None, 1e6 + rng.uniform(0, 1e5)])
    return QueueRow(
        job_id,
        1e6 + cycle,
        cycle,
        "pending" if pending else "running",
        f"u{job_id % 7}",
        "acct",
        "batch",
        1e6 - job_id,
        rng.randint(1, 64),
        3600.0,
        rng.choice([None, 1800.0]),
        rng.randint(-1, 3),
        rng.choice([None, 0.5]),
        rng.randint(0, 1000),
        rng.choice([None, 0, 1]),
        rng.choice([None, rng.random()]),
        start if pending else None,
        rng.choice([None, "prediction", "request"]),
        rng.choice([None, job_id + 1]),
        start,
        None if start is None else 1e6,
        None if pending else 1e6,
        # Long outputs: each commit writes about a megabyte of pages.
        '{"x": "' + "".join(rng.choices("abcdef", k=1500)) + '"}',
        None,
    )


def _moved(row: QueueRow, rng: random.Random, cycle: int) -> QueueRow:
    start = 1e6 + rng.uniform(0, 1e5)
    return row._replace(time=1e6 + cycle, cycle=cycle, estimated_start=start, waits_behind=rng.randint(1, 99))


@pytest.mark.parametrize("settings", ["the lever's", "sqlite's defaults"])
def test_readers_see_every_commit_and_the_wal_stays_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: str
) -> None:
    if settings == "sqlite's defaults":  # the old writer: the rows must not depend on these
        monkeypatch.setattr(journal_module, "PAGE_CACHE_KIB", 2000)
        monkeypatch.setattr(journal_module, "CHECKPOINT_PAGES", 1000)
    path = tmp_path / "journal.sqlite"
    journal = Journal(path, synchronous="NORMAL")
    page = _pragma(journal, "page_size")
    reader = sqlite3.connect(path)  # another process's view: rush status, rush explain
    rng = random.Random(31)
    rows: dict[int, QueueRow] = {}
    written = 0
    wal = Path(f"{path}-wal")
    for cycle in range(40):
        whole = [_row(rng, rng.randrange(2000), cycle) for _ in range(500)]
        whole = list({r.job_id: r for r in whole}.values())
        moved = [_moved(rows[j], rng, cycle) for j in rng.sample(sorted(rows), min(300, len(rows)))]
        moved = [r for r in moved if r.job_id not in {w.job_id for w in whole}]
        journal.record_queue(whole, moved)
        rows.update((r.job_id, r) for r in [*moved, *whole])
        written += sum(len(r.model_outputs or "") for r in [*whole, *moved])
        seen = reader.execute(f"SELECT {', '.join(QUEUE_COLUMNS)} FROM queue").fetchall()
        assert {r[0]: QueueRow(*r) for r in seen} == rows, f"cycle {cycle}"
        # Checkpoints keep the WAL within its bound: at most the frames before the checkpoint
        # that follows the commit crossing journal_module.CHECKPOINT_PAGES, and that commit's
        # (each page of the file at most once).
        frames = journal_module.CHECKPOINT_PAGES + _pragma(journal, "page_count")
        assert wal.stat().st_size <= max(WAL_LIMIT, WAL_HEADER + frames * (page + FRAME_HEADER))
    assert written > 2 * WAL_LIMIT  # enough written to need checkpoints
    reader.close()
    journal.close()
    assert Journal(path).queue(("pending", "running")) == {
        j: r for j, r in rows.items() if r.state in ("pending", "running")
    }
