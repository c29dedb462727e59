"""Hostile Slurm accounting input (``sacct --json`` and ``--parsable2``) and ``rush trace convert``.

Each row is a file and what ``load_trace`` must give: the number of jobs, or a TraceFormatError
whose message contains a text and names the file (and the job or line when known). Numbers that
are NaN, infinite or beyond ±2**53 are errors, never an ``int()`` traceback or a wrapped value.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rush.cli.main import app
from rush.errors import RushError, TraceFormatError
from rush.workload.catalogue import load_trace
from tests.workload.sacct_samples import JOBS_2205, JOBS_2311, PARSABLE


def with_job(change) -> bytes:
    """JOBS_2311 with ``change(first_job)`` applied, as JSON text (NaN/Infinity allowed)."""
    doc = copy.deepcopy(JOBS_2311)
    change(doc["jobs"][0])
    return json.dumps(doc).encode()


def set_time(key: str, value: object):
    return lambda job: job["time"].__setitem__(key, value)


def parsable_with(column: str, value: str) -> bytes:
    """PARSABLE with ``column`` of job 202 replaced by ``value``."""
    lines = PARSABLE.splitlines()
    header = lines[0].split("|")
    row = lines[4].split("|")
    row[header.index(column)] = value
    lines[4] = "|".join(row)
    return ("\n".join(lines) + "\n").encode()


JSON_OK = json.dumps(JOBS_2205).encode()
CASES: list[tuple[str, bytes, tuple]] = [
    # ---- --json
    ("json-ok", JSON_OK, ("ok", 2)),
    ("json-bom", b"\xef\xbb\xbf" + JSON_OK, ("ok", 2)),
    ("json-gzip", gzip.compress(JSON_OK), ("ok", 2)),
    ("json-nan-submit", with_job(set_time("submission", float("nan"))), ("error", "submit = nan")),
    ("json-inf-end", with_job(set_time("end", float("inf"))), ("error", "end = inf")),
    ("json-1e30-start", with_job(set_time("start", 1e30)), ("error", "start = 1e+30")),
    ("json-minus-1e30", with_job(set_time("submission", -1e30)), ("error", "submit = -1e+30")),
    ("json-huge-int", with_job(set_time("elapsed", 10**400)), ("error", "jobs[0]")),
    (
        "json-wrapped-nan-limit",
        with_job(set_time("limit", {"set": True, "infinite": False, "number": float("nan")})),
        ("error", "limit = nan"),
    ),
    ("json-string-number", with_job(set_time("elapsed", "soon")), ("error", "job entry 0 is malformed")),
    (
        "json-nan-cpus",
        with_job(lambda j: j["required"].__setitem__("CPUs", float("nan"))),
        ("error", "req_cpus"),
    ),
    ("json-list-top", b"[1, 2, 3]", ("error", "no top-level 'jobs' list")),
    ("json-empty-object", b"{}", ("error", "no top-level 'jobs' list")),
    ("json-jobs-number", b'{"jobs": 5}', ("error", "no top-level 'jobs' list")),
    ("json-jobs-empty", b'{"jobs": []}', ("error", "no jobs in the trace")),
    ("json-job-number", b'{"jobs": [5]}', ("error", "job entry 0 is malformed")),
    ("json-job-no-time", b'{"jobs": [{"job_id": 1}]}', ("error", "job entry 0 is malformed")),
    (
        "json-metric-not-dict",
        with_job(lambda j: j.__setitem__("tres", 7)),
        ("error", "job entry 0 is malformed"),
    ),
    (
        "json-only-steps",
        json.dumps({"jobs": [dict(JOBS_2311["jobs"][0], job_id="7.batch")]}).encode(),
        ("error", "no jobs in the trace"),
    ),
    ("json-no-submit", with_job(set_time("submission", None)), ("ok", 1)),
    # Ids beyond int64 or not ASCII digits are labels (jobs numbered 1..n), not an int64 overflow.
    ("json-job-id-2^64", with_job(lambda j: j.__setitem__("job_id", 2**64)), ("ok", 2)),
    ("json-job-id-superscript", with_job(lambda j: j.__setitem__("job_id", "²")), ("ok", 2)),
    ("json-truncated", JSON_OK[: len(JSON_OK) // 2], ("error", "invalid JSON")),
    ("json-deep-nesting", b"[" * 200_000 + b"]" * 200_000, ("error", "nested too deeply")),
    ("json-not-utf8", JSON_OK.replace(b'"alice"', b'"al\xffice"'), ("ok", 2)),
    # ---- --parsable2
    ("parsable-ok", PARSABLE.encode(), ("ok", 3)),
    ("parsable-cr-only", PARSABLE.encode().replace(b"\n", b"\r"), ("ok", 3)),
    ("parsable-nan-cpus", parsable_with("AllocCPUS", "nan"), ("error", "alloc_cpus = nan")),
    ("parsable-inf-cpus", parsable_with("ReqCPUS", "inf"), ("error", "req_cpus = inf")),
    ("parsable-1e30-cpus", parsable_with("AllocCPUS", "1e30"), ("error", "alloc_cpus = 1e+30")),
    ("parsable-1e30-submit", parsable_with("Submit", "1" + "0" * 30), ("error", "submit = 1e+30")),
    ("parsable-400-digit-submit", parsable_with("Submit", "9" * 400), ("error", "submit = inf")),
    ("parsable-nan-elapsed", parsable_with("Elapsed", "nan:00"), ("error", "elapsed = nan")),
    ("parsable-bad-date", parsable_with("Start", "yesterday"), ("error", "bad value")),
    ("parsable-bad-duration", parsable_with("Timelimit", "1-xx:00:00"), ("error", "bad value")),
    ("parsable-huge-days", parsable_with("Timelimit", "9" * 30 + "-00:00:00"), ("error", "limit = ")),
    ("parsable-extra-bar", parsable_with("JobName", "a|b"), ("error", "has 14 fields, the header 13")),
    ("parsable-header-only", PARSABLE.splitlines()[0].encode() + b"\n", ("error", "no jobs in the trace")),
    ("parsable-no-header", b"1|2|3\n", ("error", "needs a header line")),
    ("parsable-job-id-2^64", parsable_with("JobID", str(2**64)), ("ok", 3)),
    ("parsable-nul-in-name", PARSABLE.encode().replace(b"post", b"p\x00st"), ("ok", 3)),
    ("parsable-field-over-csv-limit", parsable_with("JobName", "x" * 200_000), ("error", "field larger")),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_sacct(tmp_path: Path, data: bytes, expected: tuple):
    path = (
        tmp_path / "acct.json"
        if data.lstrip(b"\xef\xbb\xbf").startswith((b"{", b"["))
        else tmp_path / "acct.txt"
    )
    path.write_bytes(data)
    if expected[0] == "error":
        with pytest.raises(TraceFormatError) as err:
            load_trace(str(path))
        assert expected[1] in str(err.value), str(err.value)
        assert str(path) in str(err.value) and "fix:" in str(err.value)
    else:
        assert len(load_trace(str(path))) == expected[1]


@pytest.mark.parametrize("data", [b"[1, 2, 3]", b'{"jobs": []}', with_job(set_time("end", float("inf")))])
def test_convert_fails_cleanly_and_leaves_no_output(tmp_path: Path, data: bytes):
    source = tmp_path / "acct.json"
    source.write_bytes(data)
    out = tmp_path / "out.swf"
    result = CliRunner().invoke(app, ["trace", "convert", str(source), str(out)])
    assert isinstance(result.exception, RushError), result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["acct.json"]  # no output, no .part file
    # An existing output is left as it was.
    out.write_text("keep me\n")
    result = CliRunner().invoke(app, ["trace", "convert", str(source), str(out)])
    assert isinstance(result.exception, RushError) and out.read_text() == "keep me\n"


def test_convert_writes_atomically_on_success(tmp_path: Path):
    source = tmp_path / "acct.json"
    source.write_text(json.dumps(JOBS_2205))
    out = tmp_path / "out.swf.gz"
    result = CliRunner().invoke(app, ["trace", "convert", str(source), str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["acct.json", "out.swf.gz"]
    assert len(load_trace(str(out))) == 2
