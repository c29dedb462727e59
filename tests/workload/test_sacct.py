"""Slurm accounting import, on fixtures in the documented sacct formats."""

from __future__ import annotations

import json

import pytest

from rush.errors import TraceFormatError
from rush.workload.catalogue import load_trace
from rush.workload.model import workload_from_trace

JOBS_2205 = {
    "meta": {
        "plugin": {"type": "openapi/dbv0.0.38"},
        "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}},
    },
    "errors": [],
    "jobs": [
        {
            "account": "physics",
            "job_id": 101,
            "name": "lammps",
            "partition": "batch",
            "user": "alice",
            "state": {"current": "COMPLETED", "reason": "None"},
            "time": {
                "elapsed": 3500,
                "submission": 1700000000,
                "start": 1700000100,
                "end": 1700003600,
                "limit": 120,
            },
            "required": {"CPUs": 64, "memory": 0},
            "tres": {
                "allocated": [{"type": "cpu", "id": 1, "count": 64}, {"type": "node", "id": 4, "count": 2}]
            },
            "steps": [],
        },
        {
            "account": "bio",
            "job_id": 102,
            "name": "blast",
            "partition": "debug",
            "user": "bob",
            "state": {"current": "CANCELLED by 0", "reason": "None"},
            "time": {"elapsed": 0, "submission": 1700000050, "start": 0, "end": 1700000500, "limit": 30},
            "required": {"CPUs": 8},
            "tres": {"allocated": []},
            "steps": [],
        },
    ],
}
JOBS_2302 = {
    "jobs": [
        {
            "account": "physics",
            "job_id": 7,
            "name": "x",
            "partition": "batch",
            "user": "alice",
            "state": {"current": ["TIMEOUT"]},
            "time": {
                "elapsed": 600,
                "submission": 100,
                "start": 160,
                "end": 760,
                "limit": {"set": True, "infinite": False, "number": 10},
            },
            "required": {"CPUs": 4},
            "tres": {"allocated": [{"type": "cpu", "count": 4}]},
        }
    ]
}
PARSABLE = """JobID|JobName|Partition|Account|AllocCPUS|ReqCPUS|State|Submit|Start|End|Elapsed|Timelimit|User
201|sim|batch|physics|16|16|COMPLETED|2023-01-02T03:00:00|2023-01-02T03:10:00|2023-01-02T05:10:00|02:00:00|1-00:00:00|carol
201.batch|batch||physics|16|16|COMPLETED|2023-01-02T03:10:00|2023-01-02T03:10:00|2023-01-02T05:10:00|02:00:00||
202|post|debug|bio|1|1|FAILED|2023-01-02T03:05:00|2023-01-02T03:06:00|2023-01-02T03:06:30|00:30|UNLIMITED|dave
203|queued|batch|bio|0|4|PENDING|2023-01-02T04:00:00|Unknown|Unknown|00:00:00|30:00|dave
"""


def test_sacct_json_2205(tmp_path):
    path = tmp_path / "acct.json"
    path.write_text(json.dumps(JOBS_2205))
    trace = load_trace(str(path))
    assert trace["job_id"].tolist() == [101, 102]
    assert trace["submit"].tolist() == [0, 50]
    assert trace["wait"].tolist() == [100, -1]
    assert trace["runtime"].tolist() == [3500, -1]
    assert trace["alloc_procs"].tolist() == [64, -1] and trace["req_procs"].tolist() == [64, 8]
    assert trace["req_time"].tolist() == [7200, 1800]
    assert trace["status"].tolist() == [1, 5]
    assert trace.labels["user"][trace["user"][0]] == "alice"
    assert trace.labels["queue"][trace["queue"][1]] == "debug"
    assert trace.labels["app"][trace["app"][0]] == "lammps"
    assert trace.header["UnixStartTime"] == "1700000000"
    w = workload_from_trace(trace, machine_procs=128)
    assert len(w) == 1 and w.dropped == {"runtime<0": 1}  # the never-started job


def test_sacct_json_2302_wrapped_numbers(tmp_path):
    path = tmp_path / "new.json"
    path.write_text(json.dumps(JOBS_2302))
    trace = load_trace(str(path))
    assert trace["req_time"].tolist() == [600] and trace["status"].tolist() == [0]


def test_sacct_parsable2(tmp_path):
    path = tmp_path / "acct.txt"
    path.write_text(PARSABLE)
    trace = load_trace(str(path))
    assert trace["job_id"].tolist() == [201, 202, 203]  # the step is skipped
    assert trace["submit"].tolist() == [0, 300, 3600]
    assert trace["wait"].tolist() == [600, 60, -1]
    assert trace["runtime"].tolist() == [7200, 30, -1]
    assert trace["req_time"].tolist() == [86400, -1, 1800]
    assert trace["status"].tolist() == [1, 0, -1]


def test_sacct_errors_name_the_place(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"jobs": [ {"job_id": 1,')
    with pytest.raises(TraceFormatError, match=r"bad.json:1"):
        load_trace(str(bad))
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"items": []}')
    with pytest.raises(TraceFormatError, match="no top-level 'jobs' list"):
        load_trace(str(wrong))
    short = tmp_path / "short.txt"
    short.write_text("JobID|Submit|Start|End\n1|2023-01-01T00:00:00|x\n")
    with pytest.raises(TraceFormatError, match=r"short.txt:2"):
        load_trace(str(short))
