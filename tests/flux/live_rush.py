"""What the live RUSH tests on Flux share (tests/flux/test_rush_live.py: rush as the
scheduler module; tests/flux/test_rush_on_fluxion.py: rush's daemon beside Fluxion;
tests/flux/test_multi_broker_rush.py: several brokers): the noise job, job states, and
readers of the journal and the noise log. Their fixtures (the learned model, the live
feature store) are in tests/flux/conftest.py."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from rush.campaign.runner import NOISE_SCRIPT
from tests import polling
from tests.live_rush_common import NOISY, window_mean

NETWORK = "--setattr=rush.wtype=network"
COMPUTE = "--setattr=rush.wtype=compute"


def submit_noise(flux: Any, log: Path, *options: str) -> int:
    """collectors/noise.py's network kind as a Flux job (``options``: more submit options), on
    from its start until cancelled, logging to ``log``."""
    return flux.submit(
        *options, "-n1", "-t", "10m", "--setattr=rush.app=noise",
        sys.executable, str(NOISE_SCRIPT), "--seed=1", f"--log={log}", "--kinds=network",
        "--start-on", "--on=500:500", "--duration=500",
    )  # fmt: skip


def start_noise(flux: Any, log: Path, *options: str) -> int:
    """:func:`submit_noise`, returning once the noise is on and the whole window of the
    feature store beside ``log`` sees it."""
    job_id = submit_noise(flux, log, *options)
    polling.wait_for(lambda: log.exists() and '"event": "on"' in log.read_text(), 90.0, 0.5)
    polling.wait_for(lambda: window_mean(log.parent / "features.sqlite") > NOISY, 90.0, 0.5)
    return job_id


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


def started(flux: Any, job_id: int) -> bool:
    return state(flux, job_id) in ("RUN", "CLEANUP", "INACTIVE")
