"""rush as Flux's scheduler with a runtime predictor (``policy.runtime_prediction = "easy++"``):
the user's finished jobs make the prediction shorter than the limit, and the ``t_estimate``
rush annotates follows the prediction, not the limit; a module reload keeps the history (kept
in the journal), and bad rows in it are left out.

Every expected value is derived from what rush recorded (the runtimes in the journal's
``runtime_history``, the blocker's start, the pass time of the first estimate) through the
core's own rules, not from timings.
"""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from rush.core.runtime_predictions import CORRECTION_STEPWISE, running_estimate
from tests.flux.module_config import MODULE, write_config
from tests.polling import wait_for

LIMIT = 3600.0


def journal(tmp_path):
    con = sqlite3.connect(tmp_path / "journal.sqlite")
    con.row_factory = sqlite3.Row
    return con


def history(tmp_path) -> list[float]:
    with journal(tmp_path) as con:
        return [r["runtime"] for r in con.execute("SELECT runtime FROM runtime_history ORDER BY end")]


def queue_row(tmp_path, job_id: int) -> dict:
    with journal(tmp_path) as con:
        row = con.execute("SELECT * FROM queue WHERE job_id = ?", (job_id,)).fetchone()
    return dict(row) if row else {}


def outputs(row: dict) -> dict:
    return json.loads(row["model_outputs"]) if row.get("model_outputs") else {}


@pytest.fixture
def rush_flux(start_flux):
    return start_flux(size=1, cores=4)


def test_t_estimate_follows_the_users_history_and_a_reload_keeps_it(rush_flux, tmp_path):
    flux = rush_flux
    config = write_config(tmp_path, {"runtime_prediction": "easy++"}, interval=1)
    flux.use_scheduler(str(MODULE), f"config={config}")
    first = [flux.submit("-n1", "-t", "1h", "sleep", seconds) for seconds in ("1", "2")]
    for job_id in first:
        flux.wait_job(job_id)
    runtimes = wait_for(lambda: (h := history(tmp_path)) and len(h) == 2 and h, 30, 0.2)
    predicted = sum(runtimes) / 2  # EASY++: the mean of the user's last two runtimes
    assert 0 < predicted < LIMIT

    blocker = flux.submit("-n4", "-t", "1h", "sleep", "300")
    flux.run("job", "wait-event", "-t", "30", str(blocker), "start")
    waiting = flux.submit("-n4", "-t", "1h", "sleep", "1")
    annotated = wait_for(
        lambda: flux.run("jobs", "-no", "{annotations.sched.t_estimate}", str(waiting)).stdout.strip(),
        30,
        0.2,
    )
    row = wait_for(lambda: (r := queue_row(tmp_path, waiting)) and r["first_estimated_start"] and r, 30, 0.2)
    start = queue_row(tmp_path, blocker)["start"]
    # The core's estimate at the pass that made it: the blocker's predicted (or corrected) end.
    elapsed = row["first_estimated_at"] - start
    expected = start + running_estimate(CORRECTION_STEPWISE, predicted, elapsed, LIMIT)
    assert row["first_estimated_start"] == pytest.approx(expected, abs=1e-6)
    assert outputs(row)["predicted_runtime"] == pytest.approx(predicted)
    assert outputs(row)["runtime_source"] == "easy++"
    # What Flux shows is one of those estimates: at most two stepwise corrections (1 and 5
    # minutes) past the prediction while the test runs, far below the limit's start + 1 h.
    t_estimate = float(annotated)
    assert start + predicted - 1e-6 <= t_estimate <= start + predicted + 360.0
    assert t_estimate < start + LIMIT / 2

    # Bad rows (NaN, negative, text) ending after the good ones: left out, not learned.
    with journal(tmp_path) as con:
        user = con.execute("SELECT user FROM runtime_history LIMIT 1").fetchone()[0]
        for k, bad in enumerate((math.nan, -5.0, "junk")):
            con.execute(
                "INSERT INTO runtime_history (job_id, user, submit, procs, requested_time, runtime, end)"
                " VALUES (?, ?, 0, 1, ?, ?, ?)",
                (-1 - k, user, LIMIT, bad, 4e9 + k),
            )
    flux.module("remove", "sched-rush")
    later = flux.submit("-n4", "-t", "1h", "sleep", "1")
    flux.use_scheduler(str(MODULE), f"config={config}")
    row = wait_for(lambda: (r := queue_row(tmp_path, later)) and r["first_estimated_start"] and r, 30, 0.2)
    assert outputs(row)["predicted_runtime"] == pytest.approx(predicted)
    assert outputs(row)["runtime_source"] == "easy++"
    assert math.isfinite(row["first_estimated_start"]) and row["first_estimated_start"] < start + LIMIT / 2
    with journal(tmp_path) as con:
        events = [r[0] for r in con.execute("SELECT message FROM events WHERE kind = 'model'")]
    assert any("unreadable runtime_history" in e for e in events)
    assert any("replayed from the journal" in e for e in events)
    flux.cancel_all()
