"""What the multi-broker live RUSH tests read back: the module's journal and the noise log.

(tests/flux/test_rush_live.py has the same readers for one broker; test modules do not import
each other.)"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any


def decisions(tmp_path: Path, job_id: int, *actions: str) -> list[dict]:
    """One job's journal decisions (of some actions), oldest first, model outputs parsed."""
    con = sqlite3.connect(tmp_path / "journal.sqlite")
    con.row_factory = sqlite3.Row
    rows = [dict(r) for r in con.execute("SELECT * FROM decisions WHERE job_id = ? ORDER BY id", (job_id,))]
    con.close()
    for row in rows:
        row["model_outputs"] = json.loads(row["model_outputs"] or "{}")
    return [r for r in rows if not actions or r["action"] in actions]


def skips(tmp_path: Path, job_id: int) -> list[dict]:
    return decisions(tmp_path, job_id, "skip", "hold")


def journaled_skips(tmp_path: Path, job_id: int) -> int:
    """The job's skip count as the journal keeps it (what a reloaded module counts on from)."""
    con = sqlite3.connect(tmp_path / "journal.sqlite")
    [(count,)] = con.execute("SELECT skips FROM jobs WHERE job_id = ?", (job_id,)).fetchall()
    con.close()
    return int(count)


def noise_event_time(log: Path, event: str) -> float | None:
    """When collectors/noise.py's log first has ``event`` (on, off, end); None if not yet."""
    if not log.exists():
        return None
    for line in log.read_text().splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # a line being written
        if obj.get("event") == event:
            return float(obj["t"])
    return None


def state(flux: Any, job_id: int) -> str:
    return flux.run("jobs", "-no", "{state}", str(job_id)).stdout.strip()
