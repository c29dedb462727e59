"""The command line: ``rush trace`` sub-commands, and bad input getting clear messages and exit code 2."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rush.cli.main import app
from rush.errors import RushError, TraceNotFoundError
from rush.workload.swf import read_swf
from tests.rush_cli import rush
from tests.workload.helpers import GOOD, GOOD_LINES, MIRROR
from tests.workload.sacct_samples import JOBS_2205


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
    assert out.returncode == 2 and f"{path}:{GOOD_LINES + 1}" in out.stderr
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


# ---------------------------------------------------------------- rush trace (in-process)


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_trace_info_on_a_file_with_malformed_lines(tmp_path: Path):
    path = tmp_path / "bad.swf"
    # A fourth job after the malformed line (its own id: a repeated id would be dropped).
    path.write_text(GOOD + "9 1 2 3\n" + "4" + GOOD.splitlines()[-1][1:] + "\n")
    out = invoke("trace", "info", str(path))
    assert out.exit_code == 0, out.output
    lines = dict(line.split(None, 1) if " " in line else (line, "") for line in out.output.splitlines())
    assert out.output.splitlines()[0].split() == ["trace", "bad"]
    assert "records        4" in out.output and "jobs           4" in out.output
    assert f"skipped lines  1 {{'malformed': 1}} first at lines {GOOD_LINES + 1}" in out.output
    assert "machine procs  8 (MaxProcs header)" in out.output
    assert "Queue" in lines["header"]
    strict = invoke("trace", "info", str(path), "--strict")
    assert isinstance(strict.exception, RushError) and f"{path}:{GOOD_LINES + 1}" in str(strict.exception)


def test_trace_info_list_and_synthetic():
    listing = invoke("trace", "info", "--list")
    assert listing.exit_code == 0
    assert "KTH-SP2" in listing.output and "CEA-Curie" in listing.output and "lublin" in listing.output
    synthetic = invoke("trace", "info", "lublin:500:32:2", "--procs", "64")
    assert synthetic.exit_code == 0, synthetic.output
    assert "jobs           500" in synthetic.output and "machine procs  64 (--procs)" in synthetic.output


def test_trace_fetch_with_mirror(tmp_path: Path, monkeypatch):
    if not MIRROR.exists():
        pytest.skip("no trace mirror")
    monkeypatch.setenv("RUSH_CACHE_DIR", str(tmp_path))
    out = invoke("trace", "fetch", "SDSC-SP2", "--mirror", str(MIRROR))
    assert out.exit_code == 0, out.output
    path = Path(out.output.strip())
    assert path == tmp_path / "traces" / "SDSC-SP2-1998-4.2-cln.swf.gz"
    assert len(read_swf(path)) == 59715
    missing = invoke("trace", "fetch", "NOPE-SP2", "--mirror", str(MIRROR))
    assert isinstance(missing.exception, TraceNotFoundError)


def test_trace_convert_sacct_to_swf(tmp_path: Path):
    acct = tmp_path / "acct.json"
    acct.write_text(json.dumps(JOBS_2205))
    out_path = tmp_path / "acct.swf.gz"
    out = invoke("trace", "convert", str(acct), str(out_path))
    assert out.exit_code == 0, out.output
    assert "wrote 2 jobs" in out.output
    swf = read_swf(out_path)
    assert swf["job_id"].tolist() == [101, 102] and swf["req_time"].tolist() == [7200, 1800]
    assert swf.header["UnixStartTime"] == "1700000000"


def test_trace_resample_and_synth(tmp_path: Path):
    synth_path = tmp_path / "synth.swf"
    out = invoke("trace", "synth", "--jobs", "800", "--procs", "64", "--seed", "3", "--out", str(synth_path))
    assert out.exit_code == 0, out.output
    synth = read_swf(synth_path)
    assert len(synth) == 800 and synth.max_procs == 64 and synth["alloc_procs"].max() <= 64
    again = tmp_path / "again.swf"
    invoke("trace", "synth", "--jobs", "800", "--procs", "64", "--seed", "3", "--out", str(again))
    assert again.read_bytes() == synth_path.read_bytes()  # seeded
    resampled = tmp_path / "resampled.swf"
    out = invoke("trace", "resample", str(synth_path), "--weeks", "3", "--seed", "1", "--out", str(resampled))
    assert out.exit_code == 0, out.output
    new = read_swf(resampled)
    assert len(new) > 0 and new["submit"].max() < 3 * 7 * 86400
    assert new["job_id"].tolist() == list(range(1, len(new) + 1))
    bad = invoke("trace", "resample", str(synth_path), "--weeks", "0", "--out", str(resampled))
    assert isinstance(bad.exception, RushError) and "--weeks" in str(bad.exception)
    bad_types = invoke("trace", "synth", "--types", "weekend", "--out", str(synth_path))
    assert isinstance(bad_types.exception, RushError) and "unknown job types" in str(bad_types.exception)


def test_trace_errors_exit_2_with_place_and_fix(tmp_path: Path):
    out = rush("trace", "info", "SDSC-SP3")
    assert out.returncode == 2
    assert "neither a file nor a catalogue trace" in out.stderr and "did you mean" in out.stderr
    cut = tmp_path / "cut.swf.gz"
    cut.write_bytes(gzip.compress(GOOD.encode() * 100)[:200])
    out = rush("trace", "convert", str(cut), str(tmp_path / "x.swf"))
    assert out.returncode == 2 and "truncated or corrupt" in out.stderr and "fix:" in out.stderr
    assert not (tmp_path / "x.swf").exists()
