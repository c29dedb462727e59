"""The live start-estimate windows on Flux (issue 29 item 4, issue 30 item 3), on a tiny window:
each RJMS's estimates are collected and compared with the real starts, as
``sim/runtime_predictions/live_windows.py`` does on SDSC-SP2's window.

Four brokers of four cores (fake nodes through resource.config), KTH-SP2 jobs 1491-1510 at
speedup 2000 (tests/live_replay.py: the window queues for a few seconds), ``rush replay
--estimates`` as a user runs it, with rush's EASY++ runtime predictor:

* ``sched-backfill``: rush's daemon (jobtap priority plugin) beside sched-backfill's t_estimate;
* ``fluxion``: the same beside Fluxion's (queue-policy easy, match-policy lonodex);
* ``rush-module``: rush's scheduler module is the scheduler; its t_estimate is rush's estimate.

Checked: the estimators the run should have, at least one waiting job estimated by each, every
error the estimate minus the real start (times K) with the start from Flux's own job record,
and the summary's figures (median included) recomputed from the per-job rows.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rush.studies import estimate_accuracy
from tests.core.real_traces import MIRROR, TRACES
from tests.flux import fluxion
from tests.flux.plugin_build import jobtap_config, plugin_or_skip
from tests.live_replay import SPEEDUP, WINDOW, write_config

pytestmark = pytest.mark.flux
ROOT = Path(__file__).resolve().parents[2]
# run -> the estimators its CSV must hold
RUNS = {"sched-backfill": {"rush", "flux"}, "fluxion": {"rush", "fluxion"}, "rush-module": {"rush"}}


def _rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for key in ("submit", "start", "wait", "estimate", "error", "halfway_error"):
            r[key] = float(r[key]) if r[key] != "" else None
    return rows


@pytest.mark.parametrize("run", list(RUNS))
def test_each_rjms_estimates_are_collected_and_compared(run, start_flux, tmp_path_factory, tmp_path):
    trace = MIRROR / TRACES["KTH-SP2"]
    if not trace.exists():
        pytest.skip(f"trace {trace} not available: set RUSH_TRACE_MIRROR to the traces directory")
    if run == "fluxion" and (why := fluxion.unavailable()):
        pytest.skip(why)
    module = run == "rush-module"
    config = "" if module else jobtap_config(plugin_or_skip(tmp_path_factory))
    instance = start_flux(size=4, cores=4, config=config)
    if run == "fluxion":
        fluxion.use_fluxion(instance, queue_policy="easy", match_policy="lonodex")
    elif not module:
        instance.use_scheduler("sched-backfill")
    lever = "" if module else 'priority_lever = "plugin"\n'
    rjms = f'[rjms]\nbackend = "flux"\n\n[rjms.options]\nuri = "{instance.uri}"\n{lever}'
    path = write_config(tmp_path, "easy", rjms)
    path.write_text(path.read_text().replace("[policy]\n", '[policy]\nruntime_prediction = "easy++"\n'))
    estimates, out = tmp_path / "estimates.csv", tmp_path / "report.json"
    argv = [sys.executable, "-m", "rush", "replay", str(trace), "--window", f"{WINDOW.start}:{WINDOW.count}"]
    argv += ["--speedup", f"{SPEEDUP:g}", "--rjms", "flux", "--config", str(path), "--timeout", "600"]
    argv += ["--estimates", str(estimates), "--out", str(out), *(["--mode", "scheduler"] if module else [])]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1500, env=instance.env(), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:] + instance.log_tail()
    print(done.stdout)
    report = json.loads(out.read_text())
    summary = report["start_estimates"]
    rows = _rows(estimates)

    assert {r["estimator"] for r in rows} == set(summary["first"]) == RUNS[run]
    assert summary["jobs"] == WINDOW.count and not summary["failed_reads"]
    # Every job's real start is Flux's own record of it.
    ids = {int(k): v for k, v in report["rjms_job_ids"].items()}
    starts = {
        int(j["id"]): j["t_run"] for j in json.loads(instance.run("jobs", "-a", "--json").stdout)["jobs"]
    }
    for r in rows:
        assert int(r["rjms_job_id"]) == ids[int(r["trace_job_id"])]
        assert r["start"] == pytest.approx(starts[int(r["rjms_job_id"])], abs=1e-3)
        if r["estimate"] is not None:
            assert r["error"] == pytest.approx((r["estimate"] - r["start"]) * SPEEDUP, abs=1e-3)
    for name in RUNS[run]:
        mine = [r for r in rows if r["estimator"] == name]
        waiting = [r for r in mine if r["wait_class"] != "0"]
        assert any(r["error"] is not None for r in waiting), f"{name} estimated no waiting job"
        again = estimate_accuracy.accuracy([r["error"] for r in mine], [r["wait"] for r in mine])
        assert summary["first"][name]["all"] == pytest.approx(again)
        assert again["median_abs_error"] is not None
