"""Slurm accounting import, on fixtures in the documented sacct formats.

The ``--json`` fixture for Slurm 22.05 is checked against the OpenAPI schema
(``dbv0.0.38_job_info``) embedded in the installed Slurm 22.05 plugin
``openapi_dbv0_0_38.so``: every property it uses must exist there with the documented type.
Real ``sacct`` output needs slurmdbd and a database, which this machine does not run.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from rush.errors import TraceFormatError, TraceNotFoundError
from rush.workload.catalogue import load_trace
from rush.workload.model import workload_from_trace
from rush.workload.sacct import _duration, read_sacct
from tests.workload.sacct_samples import JOBS_2205, JOBS_2311, PARSABLE

# The format the docs recommend: JobIDRaw tells array tasks apart, NCPUS when ReqCPUS is absent.
PARSABLE_ARRAY = """JobIDRaw|JobID|Submit|Start|End|Elapsed|Timelimit|AllocCPUS|NCPUS|AllocNodes|User|Account|Partition|JobName|State
300|300_1|2023-03-01T10:00:00|2023-03-01T10:00:05|2023-03-01T10:10:05|00:10:00|01:00:00|4|4|1|erin|chem|batch|scan|COMPLETED
301|300_2|2023-03-01T10:00:00|2023-03-01T10:00:06|2023-03-01T10:20:06|00:20:00|01:00:00|4|4|1|erin|chem|batch|scan|CANCELLED by 1001
301.batch|300_2.batch|2023-03-01T10:00:06|2023-03-01T10:00:06|2023-03-01T10:20:06|00:20:00||4|4|1||chem||batch|CANCELLED
302|302|2023-03-02T10:00:00|2023-03-02T10:00:00|2023-03-04T12:00:00|2-02:00:00|3-00:00:00|128|128|4|frank|chem|long|md|OUT_OF_MEMORY
303|303|2023-03-02T11:00:00|2023-03-02T11:00:00|2023-03-02T11:01:00|00:01:00|Partition_Limit|8|8|1|frank|chem|long|md|COMPLETED
"""


def _resolve(schema: dict, spec: dict) -> dict:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


TYPES = {
    "integer": int,
    "string": str,
    "object": dict,
    "array": list,
    "number": (int, float),
    "boolean": bool,
}


def _check(value, schema: dict, spec: dict, where: str) -> None:
    schema = _resolve(schema, spec)
    expected = TYPES[schema.get("type", "object")]
    assert isinstance(value, expected), f"{where}: {value!r} is not {schema.get('type')}"
    if isinstance(value, dict) and "properties" in schema:
        for key, item in value.items():
            assert key in schema["properties"], f"{where}.{key} is not in the 22.05 schema"
            _check(item, schema["properties"][key], spec, f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for k, item in enumerate(value):
            _check(item, schema["items"], spec, f"{where}[{k}]")


def installed_dbv0038_schema() -> dict:
    plugin = Path("/usr/lib/x86_64-linux-gnu/slurm-wlm/openapi_dbv0_0_38.so")
    if not plugin.exists():
        pytest.skip("Slurm 22.05 openapi_dbv0_0_38 plugin not installed")
    data = plugin.read_bytes()
    # The plugin embeds its OpenAPI document as one NUL-terminated JSON text.
    start = data.find(b'{\n  "openapi"')
    end = data.find(b"\x00", start)
    if start < 0:
        pytest.skip("no embedded OpenAPI document in the plugin")
    return json.loads(data[start:end])


def test_the_2205_fixture_follows_the_installed_slurm_schema():
    spec = installed_dbv0038_schema()
    info = spec["components"]["schemas"]["dbv0.0.38_job_info"]
    jobs = copy.deepcopy(JOBS_2205)
    jobs.pop("meta")  # meta uses the generic v0.0.38_meta; the job entries are the point
    jobs["jobs"] = [{k: v for k, v in job.items() if k != "steps"} for job in jobs["jobs"]]
    _check(jobs, info, spec, "sacct")
    limit = _resolve(spec["components"]["schemas"]["dbv0.0.38_job"], spec)["properties"]["time"]
    assert limit["properties"]["limit"]["type"] == "integer"  # minutes, not wrapped, in 22.05


def test_sacct_json_2205(tmp_path):
    path = tmp_path / "acct.json"
    path.write_text(json.dumps(JOBS_2205))
    trace = load_trace(str(path))
    assert trace.name == "acct"
    assert trace["job_id"].tolist() == [101, 102]
    assert trace["submit"].tolist() == [0, 50]
    assert trace["wait"].tolist() == [100, -1]
    assert trace["runtime"].tolist() == [3500, -1]
    assert trace["alloc_procs"].tolist() == [64, -1] and trace["req_procs"].tolist() == [64, 8]
    assert trace["req_time"].tolist() == [7200, 1800]  # limits in minutes
    assert trace["status"].tolist() == [1, 5]
    assert trace.labels["user"][trace["user"][0]] == "alice"
    assert trace.labels["group"][trace["group"][1]] == "bio"
    assert trace.labels["queue"][trace["queue"][1]] == "debug"
    assert trace.labels["app"][trace["app"][0]] == "lammps"
    assert trace.header["UnixStartTime"] == "1700000000"
    w = workload_from_trace(trace, machine_procs=128)
    assert len(w) == 1 and w.dropped == {"runtime<0": 1}  # the never-started job


def test_sacct_json_wrapped_numbers_and_state_lists(tmp_path):
    path = tmp_path / "new.json"
    path.write_text(json.dumps(JOBS_2311))
    trace = read_sacct(path)
    assert trace["req_time"].tolist() == [600, -1]  # 10 minutes; infinite = unknown
    assert trace["status"].tolist() == [0, 1]
    assert trace["wait"].tolist() == [60, 90]


def test_sacct_json_gzip(tmp_path):
    path = tmp_path / "acct.json.gz"
    path.write_bytes(gzip.compress(json.dumps(JOBS_2205).encode()))
    trace = load_trace(str(path))
    assert trace["job_id"].tolist() == [101, 102] and trace.name == "acct"


def test_sacct_parsable2_times_are_the_hosts_local_time(tmp_path, monkeypatch):
    import time

    path = tmp_path / "acct.txt"
    path.write_text(PARSABLE)
    monkeypatch.setenv("TZ", "Europe/Oslo")
    time.tzset()
    try:
        local = read_sacct(path)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    # 2023-01-02T03:00:00 in Oslo (UTC+1 in winter) is 02:00 UTC.
    assert local.header["UnixStartTime"] == str(1672628400 - 3600)
    named = read_sacct(path, timezone="America/New_York")  # UTC-5 in winter
    assert named.header["UnixStartTime"] == str(1672628400 + 5 * 3600)
    assert named.header["TimeZoneString"] == "America/New_York"
    with pytest.raises(TraceFormatError, match="unknown time zone"):
        read_sacct(path, timezone="Mars/Olympus")


def test_sacct_parsable2(tmp_path, monkeypatch):
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    path = tmp_path / "acct.txt"
    path.write_text(PARSABLE)
    trace = load_trace(str(path))
    assert trace["job_id"].tolist() == [201, 202, 203]  # the steps are skipped
    assert trace.skipped == {"job_steps": 2}
    assert trace["submit"].tolist() == [0, 300, 3600]
    assert trace["wait"].tolist() == [600, 60, -1]
    assert trace["runtime"].tolist() == [7200, 30, -1]
    assert trace["req_time"].tolist() == [86400, -1, 1800]
    assert trace["status"].tolist() == [1, 0, -1]
    assert trace.header["UnixStartTime"] == "1672628400"  # 2023-01-02T03:00:00 (TZ=UTC)
    assert [trace.labels["user"][u] for u in trace["user"]] == ["carol", "dave", "dave"]


def test_sacct_parsable2_array_tasks_and_fallbacks(tmp_path):
    path = tmp_path / "array.txt"
    path.write_text(PARSABLE_ARRAY)
    trace = read_sacct(path)
    assert trace["job_id"].tolist() == [300, 301, 302, 303]  # JobIDRaw keeps tasks apart
    assert trace["req_procs"].tolist() == [4, 4, 128, 8]  # NCPUS without ReqCPUS
    assert trace["runtime"].tolist() == [600, 1200, 2 * 86400 + 7200, 60]
    assert trace["req_time"].tolist() == [3600, 3600, 3 * 86400, -1]
    assert trace["status"].tolist() == [1, 5, 0, 1]


def test_duplicate_or_textual_ids_are_renumbered_with_labels(tmp_path):
    text = "\n".join(line.split("|", 1)[1] for line in PARSABLE_ARRAY.splitlines())  # no JobIDRaw
    path = tmp_path / "noraw.txt"
    path.write_text(text + "\n")
    trace = read_sacct(path)
    assert trace["job_id"].tolist() == [1, 2, 3, 4]
    assert [trace.labels["job_id"][i] for i in trace["job_id"]] == ["300_1", "300_2", "302", "303"]


def test_jobs_come_out_in_submit_order(tmp_path):
    doc = copy.deepcopy(JOBS_2205)
    doc["jobs"].reverse()
    path = tmp_path / "rev.json"
    path.write_text(json.dumps(doc))
    trace = read_sacct(path)
    assert trace["job_id"].tolist() == [101, 102] and (np.diff(trace["submit"]) >= 0).all()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("00:30", 30),
        ("05:00", 300),
        ("01:02:03", 3723),
        ("1-00:00:00", 86400),
        ("2-03:04", 2 * 86400 + 3 * 3600 + 4 * 60),
        ("3-12", 3 * 86400 + 12 * 3600),
        ("45", 45 * 60),
        ("00:00:01.500", 1.5),
        ("UNLIMITED", None),
        ("Partition_Limit", None),
        ("", None),
    ],
)
def test_slurm_durations(text, seconds):
    assert _duration(text) == seconds


def test_sacct_errors_name_the_place_and_the_fix(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"jobs": [ {"job_id": 1,')
    with pytest.raises(TraceFormatError, match=r"bad.json:1") as err:
        load_trace(str(bad))
    assert "sacct" in err.value.fix
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"items": []}')
    with pytest.raises(TraceFormatError, match="no top-level 'jobs' list"):
        load_trace(str(wrong))
    no_time = tmp_path / "notime.json"
    no_time.write_text('{"jobs": [{"job_id": 1}]}')
    with pytest.raises(TraceFormatError) as err:
        read_sacct(no_time)
    assert err.value.where.endswith("jobs[0]")
    short = tmp_path / "short.txt"
    short.write_text("JobID|Submit|Start|End\n1|2023-01-01T00:00:00|x\n")
    with pytest.raises(TraceFormatError, match=r"short.txt:2: has 3 fields"):
        load_trace(str(short))
    bad_time = tmp_path / "badtime.txt"
    bad_time.write_text("JobID|Submit|Start|End\n1|2023-01-01T00:00:00|x|y\n2|yesterday|x|y\n")
    with pytest.raises(TraceFormatError, match=r"badtime.txt:2: bad value") as err:
        read_sacct(bad_time)
    assert "2023-01-02T03:04:05" in err.value.fix
    no_header = tmp_path / "noheader.txt"
    no_header.write_text("1|2|3\n")
    with pytest.raises(TraceFormatError, match="needs a header line") as err:
        read_sacct(no_header)
    assert "--parsable2 --format=JobIDRaw" in err.value.fix
    with pytest.raises(TraceNotFoundError):
        read_sacct(tmp_path / "absent.json")
