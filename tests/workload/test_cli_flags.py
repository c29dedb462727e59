"""Hostile flags of ``rush simulate``/``compare``/``report``, and what a run records about itself.

Every bad flag must stop the command before any work, with exit 2, the flag's name in the
message, no traceback and no output file. To show that the check comes *before* the work,
the simulate and compare cases name a trace that does not exist: a flag error, not the
trace error, must be reported.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rush.workload.limits import MAX_PROCS as MAX_MACHINE_PROCS
from tests.workload.helpers import GOOD


def rush(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rush", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=os.environ,
    )


# (case id, command words with {tmp} for the test's directory, words expected in stderr)
MISSING = "{tmp}/no-such-trace.swf"
HOSTILE = [
    ("jobs-out-is-dir", ["simulate", MISSING, "--jobs-out", "{tmp}/dir"], ["--jobs-out", "is a directory"]),
    (
        "jobs-out-no-parent",
        ["simulate", MISSING, "--jobs-out", "{tmp}/nope/jobs.csv"],
        ["--jobs-out", "does not exist"],
    ),
    (
        "jobs-out-parent-file",
        ["simulate", MISSING, "--jobs-out", "{tmp}/file/jobs.csv"],
        ["--jobs-out", "not a directory"],
    ),
    (
        "jobs-out-device",
        ["simulate", MISSING, "--jobs-out", "/dev/null"],
        ["--jobs-out", "not a regular file"],
    ),
    (
        "jobs-out-fifo",
        ["simulate", MISSING, "--jobs-out", "{tmp}/fifo"],
        ["--jobs-out", "not a regular file"],
    ),
    (
        "jobs-out-is-the-trace",
        ["simulate", "{tmp}/file", "--jobs-out", "{tmp}/file"],
        ["--jobs-out", "input trace"],
    ),
    # A name over NAME_MAX (found by fuzzing: an OSError traceback, or a failed save after the run).
    (
        "jobs-out-too-long",
        ["simulate", MISSING, "--jobs-out", "{tmp}/" + "x" * 300],
        ["--jobs-out", "too long"],
    ),
    ("out-too-long", ["simulate", MISSING, "--out", "{tmp}/" + "x" * 300 + "/runs"], ["--out", "too long"]),
    (
        "train-out-fifo",
        ["train", "runtime-class", MISSING, "--out", "{tmp}/fifo"],
        ["--out", "not a regular file"],
    ),
    (
        "train-out-too-long",
        ["train", "runtime-class", MISSING, "--out", "{tmp}/" + "x" * 300],
        ["--out", "too long"],
    ),
    ("out-is-file", ["simulate", MISSING, "--out", "{tmp}/file"], ["--out", "not a directory"]),
    ("out-under-file", ["simulate", MISSING, "--out", "{tmp}/file/runs"], ["--out", "not a directory"]),
    ("procs-1e20", ["simulate", MISSING, "--procs", "1e20"], ["--procs"]),
    ("procs-2^70", ["simulate", MISSING, "--procs", str(2**70)], ["--procs", str(MAX_MACHINE_PROCS)]),
    ("procs-zero", ["simulate", MISSING, "--procs", "0"], ["--procs", "between 1 and"]),
    ("procs-negative", ["simulate", MISSING, "--procs", "-5"], ["--procs", "between 1 and"]),
    ("tau-inf", ["simulate", MISSING, "--tau", "inf"], ["--tau", "finite"]),
    ("tau-nan", ["simulate", MISSING, "--tau", "nan"], ["--tau", "finite"]),
    ("tau-negative", ["simulate", MISSING, "--tau", "-1"], ["--tau", "> 0"]),
    ("tau-zero", ["simulate", MISSING, "--tau", "0"], ["--tau", "> 0"]),
    ("tau-word", ["simulate", MISSING, "--tau", "ten"], ["--tau"]),
    ("threshold-nan", ["simulate", MISSING, "--threshold", "nan"], ["--threshold", "finite"]),
    ("threshold-inf", ["simulate", MISSING, "--threshold", "inf"], ["--threshold", "finite"]),
    (
        "threshold-true",
        ["simulate", MISSING, "--threshold", "true"],
        ["--threshold", "bad starvation threshold"],
    ),
    ("threshold-negative", ["simulate", MISSING, "--threshold", "-5"], ["--threshold", ">= 0"]),
    ("policy-garbage", ["simulate", MISSING, "--policy", "FIFO;rm -rf"], ["--policy", "unknown policy"]),
    ("policy-empty", ["simulate", MISSING, "--policy", ""], ["--policy", "unknown policy"]),
    ("policy-linear-nan", ["simulate", MISSING, "--policy", "LINEAR:q=nan"], ["--policy"]),
    (
        "backfill-policy-garbage",
        ["simulate", MISSING, "--backfill-policy", "XYZ"],
        ["--backfill-policy", "unknown policy"],
    ),
    (
        "backfill-policy-without-backfill",
        ["simulate", MISSING, "--backfill", "none", "--backfill-policy", "SPF"],
        ["--backfill-policy", "needs backfilling"],
    ),
    (
        "backfill-garbage",
        ["simulate", MISSING, "--backfill", "aggressive"],
        ["--backfill", "unknown backfilling"],
    ),
    ("classes-garbage", ["simulate", MISSING, "--classes", "huge"], ["--classes"]),
    ("compare-no-policies", ["compare", MISSING, "--policies", " , "], ["--policies", "no policies"]),
    ("compare-duplicate", ["compare", MISSING, "--policies", "FCFS,fcfs"], ["--policies", "same run label"]),
    ("compare-unknown", ["compare", MISSING, "--policies", "FCFS,NOPE"], ["--policy", "unknown policy"]),
    ("compare-out-is-file", ["compare", MISSING, "--out", "{tmp}/file"], ["--out", "not a directory"]),
    ("compare-tau-nan", ["compare", MISSING, "--tau", "nan"], ["--tau", "finite"]),
    ("compare-procs-huge", ["compare", MISSING, "--procs", str(2**63)], ["--procs"]),
    ("report-tau-nan", ["report", "{tmp}/dir", "--tau", "nan"], ["--tau", "finite"]),
    ("report-gantt-hours-inf", ["report", "{tmp}/dir", "--gantt-hours", "inf"], ["--gantt-hours"]),
    ("report-gantt-hours-zero", ["report", "{tmp}/dir", "--gantt-hours", "0"], ["--gantt-hours"]),
    ("report-gantt-start-nan", ["report", "{tmp}/dir", "--gantt-start", "nan"], ["--gantt-start", "finite"]),
    ("report-gantt-start-negative", ["report", "{tmp}/dir", "--gantt-start", "-1"], ["--gantt-start"]),
    ("report-out-is-file", ["report", "{tmp}/dir", "--out", "{tmp}/file"], ["--out", "not a directory"]),
    ("report-empty-dir", ["report", "{tmp}/dir"], ["no runs"]),
]


@pytest.mark.parametrize(("words", "expected"), [c[1:] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_hostile_flag_fails_first_with_exit_2(tmp_path: Path, words: list[str], expected: list[str]) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("keep me\n")
    os.mkfifo(tmp_path / "fifo")  # opening it for writing would block without a reader
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    out = rush(*[w.replace("{tmp}", str(tmp_path)) for w in words], cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    for word in expected:
        assert word in out.stderr, (word, out.stderr)
    assert "Traceback" not in out.stderr and "no such trace file" not in out.stderr
    # No output of any kind, nothing overwritten.
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert (tmp_path / "file").read_text() == "keep me\n"


def test_a_valid_run_still_writes_everything(tmp_path: Path) -> None:
    # The counterpart of the table: the same checks let good paths through.
    out = rush(
        "simulate",
        "lublin:300:16:2",
        "--json",
        "--jobs-out",
        str(tmp_path / "jobs.csv"),
        "--out",
        str(tmp_path / "new" / "runs"),
        "--tau",
        "60",
        "--threshold",
        "none",
    )
    assert out.returncode == 0, out.stderr
    assert len((tmp_path / "jobs.csv").read_text().splitlines()) == 301
    assert sorted(p.name for p in (tmp_path / "new" / "runs").iterdir()) == [
        "FCFS-easy.jobs.csv",
        "FCFS-easy.json",
    ]
    assert not list(tmp_path.rglob("*.tmp"))


def test_json_records_its_settings_and_label(tmp_path: Path) -> None:
    trace = tmp_path / "t.swf"
    trace.write_text(GOOD)
    out = rush(
        "simulate",
        str(trace),
        "--policy",
        "WFP3",
        "--backfill-policy",
        "spf",
        "--threshold",
        "3600",
        "--tau",
        "30",
        "--procs",
        "16",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    settings = json.loads(out.stdout)["settings"]
    import numba
    import numpy

    import rush as package

    assert settings == {
        "label": "WFP3-easy+SPF",
        "policy": "WFP3",
        "backfill": "easy",
        "backfill_policy": "SPF",
        "threshold": 3600.0,
        "tau": 30.0,
        "procs": 16,
        "procs_from": "--procs",
        "classes": None,
        "model": None,
        "trace": str(trace),
        "trace_sha256": hashlib.sha256(trace.read_bytes()).hexdigest(),
        "rush_version": package.__version__,
        "numba_version": numba.__version__,
        "numpy_version": numpy.__version__,
    }
    # Without a separate scan order the label stays the plain policy-backfill pair.
    plain = json.loads(rush("simulate", "lublin:100:16:1", "--json").stdout)["settings"]
    assert plain["label"] == "FCFS-easy" and plain["trace_sha256"] is None and plain["procs_from"] == "trace"


def test_compare_json_has_settings_per_run() -> None:
    out = rush("compare", "lublin:200:16:1", "--policies", "FCFS,SAF", "--threshold", "none", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [(r["label"], r["settings"]["policy"], r["settings"]["threshold"]) for r in rows] == [
        ("FCFS-easy", "FCFS", None),
        ("SAF-easy", "SAF", None),
    ]


def test_dropped_jobs_print_as_a_readable_line(tmp_path: Path) -> None:
    # Jobs: 2 fine, 1 with runtime -1, 2 wider than --procs 4 (8 processors).
    trace = tmp_path / "drops.swf"
    trace.write_text(
        "1 0 0 10 2 -1 -1 2 20 -1 1 1 1 1 1 -1 -1 -1\n"
        "2 5 0 10 2 -1 -1 2 20 -1 1 1 1 1 1 -1 -1 -1\n"
        "3 6 0 -1 2 -1 -1 2 20 -1 1 1 1 1 1 -1 -1 -1\n"
        "4 7 0 10 8 -1 -1 8 20 -1 1 1 1 1 1 -1 -1 -1\n"
        "5 8 0 10 8 -1 -1 8 20 -1 1 1 1 1 1 -1 -1 -1\n"
    )
    out = rush("simulate", str(trace), "--procs", "4")
    assert out.returncode == 0, out.stderr
    assert "dropped: 3 jobs (runtime < 0: 1, procs > machine: 2)" in out.stdout
    assert "{" not in out.stdout  # no Python dict
    assert "mean wait [s]" in out.stdout and "tau = 10 s" in out.stdout
