"""Bad input at the command line: clear messages and non-zero exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workload.test_swf import GOOD, MIRROR


def rush(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "RUSH_TRACE_MIRROR": str(MIRROR), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "rush", *args], capture_output=True, text=True, env=full_env, timeout=300
    )


def test_wrong_policy_name():
    out = rush("simulate", "lublin:200:16", "--policy", "FIFO")
    assert out.returncode == 2 and "unknown policy 'FIFO'" in out.stderr and "fix:" in out.stderr


def test_missing_trace():
    out = rush("simulate", "/nonexistent/trace.swf")
    assert out.returncode == 2 and "no such trace file" in out.stderr


def test_unknown_catalogue_name():
    out = rush("simulate", "SDSC-SP3")
    assert out.returncode == 2 and "neither a file nor a catalogue trace" in out.stderr


def test_wrong_backfill_and_threshold():
    assert "unknown backfilling" in rush("simulate", "lublin:100:16", "--backfill", "aggressive").stderr
    assert "bad starvation threshold" in rush("simulate", "lublin:100:16", "--threshold", "soon").stderr


def test_strict_malformed_line(tmp_path: Path):
    path = tmp_path / "bad.swf"
    path.write_text(GOOD + "9 1 2 3\n")
    out = rush("simulate", str(path), "--strict")
    assert out.returncode == 2 and f"{path}:10" in out.stderr
    lenient = rush("simulate", str(path), "--json")
    assert lenient.returncode == 0
    assert json.loads(lenient.stdout)["skipped_lines"] == 1


def test_simulate_json_keys_and_jobs_csv(tmp_path: Path):
    csv_path = tmp_path / "jobs.csv"
    out = rush("simulate", "lublin:400:32:3", "--policy", "SAF", "--json", "--jobs-out", str(csv_path))
    assert out.returncode == 0, out.stderr
    metrics = json.loads(out.stdout)
    for key in (
        "jobs",
        "dropped",
        "mean_wait",
        "mean_bounded_slowdown",
        "mean_pp_bounded_slowdown",
        "mean_response_time",
        "utilization",
        "utilization_window",
        "throughput_std",
        "awrt",
        "makespan",
        "max_wait",
        "backfilled",
    ):
        assert key in metrics, key
    assert metrics["jobs"] == 400
    lines = csv_path.read_text().splitlines()
    assert lines[0] == "job_id,submit,start,end,procs,requested_time,runtime,backfilled,killed"
    assert len(lines) == 401 and lines[1].split(",")[1] == "0"


def test_compare_json_and_report(tmp_path: Path):
    out = rush(
        "compare", "lublin:300:32:4", "--policies", "FCFS,SPF", "--json", "--out", str(tmp_path / "run")
    )
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["label"] for r in rows] == ["FCFS-easy", "SPF-easy"]
    report = rush("report", str(tmp_path / "run"), "--out", str(tmp_path / "plots"))
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "plots" / "cumulative_bsld.png").stat().st_size > 1000


@pytest.mark.parametrize("command", [["trace", "info", "KTH-SP2"], ["trace", "info", "--list"]])
def test_trace_info(command):
    if not MIRROR.exists():
        pytest.skip("no trace mirror")
    out = rush(*command)
    assert out.returncode == 0, out.stderr
    assert "KTH-SP2" in out.stdout
