"""SWF reading and writing: fast path, malformed lines, truncated gzip, round trip."""

from __future__ import annotations

import csv
import gzip
import os
from pathlib import Path

import numpy as np
import pytest

from rush.errors import TraceFormatError, TraceNotFoundError
from rush.workload.model import SWF_FIELDS, workload_from_trace
from rush.workload.swf import read_swf, write_swf

MIRROR = Path(os.environ.get("RUSH_TRACE_MIRROR", Path(__file__).parents[3] / "shared" / "traces"))

GOOD = """; Version: 2.2
; Computer: test machine
; MaxProcs: 8
; UnixStartTime: 1000
; Note: first line
;       continued here
1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1
2 10 0 50 8 12.5 -1 8 60 -1 1 2 1 -1 1 -1 -1 -1
3 20 1 30 0 -1 -1 2 -1 -1 0 2 1 -1 1 -1 -1 -1
"""


def write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_fields_and_header(tmp_path):
    trace = read_swf(write(tmp_path, GOOD))
    assert len(trace) == 3
    assert trace["runtime"].tolist() == [100, 50, 30]
    assert trace["avg_cpu"].tolist() == [-1.0, 12.5, -1.0]
    assert trace.header["Computer"] == "test machine"
    assert trace.header["Note"] == "first line continued here"
    assert trace.max_procs == 8 and trace.unix_start_time == 1000
    w = workload_from_trace(trace)
    # q falls back to requested processors, p~ to the runtime.
    assert w.procs.tolist() == [4, 8, 2] and w.requested_time.tolist() == [200, 60, 30]


MALFORMED = (
    GOOD
    + "4 30 0 10 1 -1 -1 1 20\n5 40 0 x 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\n6 50 0 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\n"
)


def test_malformed_lines_are_skipped_and_counted(tmp_path):
    trace = read_swf(write(tmp_path, MALFORMED))
    assert trace["job_id"].tolist() == [1, 2, 3, 6]
    assert trace.skipped == {"malformed": 2}


def test_strict_names_the_line(tmp_path):
    path = write(tmp_path, MALFORMED)
    with pytest.raises(TraceFormatError) as err:
        read_swf(path, strict=True)
    text = str(err.value)
    assert f"{path}:10" in text and "has 9 fields, SWF needs 18" in text and "fix:" in text


def test_strict_names_a_non_numeric_field(tmp_path):
    text = GOOD + "5 40 0 x 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\n"
    with pytest.raises(TraceFormatError, match=r":10: malformed SWF line: field 4 \('x'\) is not a number"):
        read_swf(write(tmp_path, text), strict=True)


def test_truncated_gzip_is_a_clear_error(tmp_path):
    data = gzip.compress(GOOD.encode() * 200)
    path = tmp_path / "cut.swf.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError) as err:
        read_swf(path)
    assert "truncated or corrupt" in str(err.value) and "rush trace fetch" in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(TraceNotFoundError, match="no such trace file"):
        read_swf(tmp_path / "absent.swf")


def test_gzip_detected_by_content_and_round_trip(tmp_path):
    trace = read_swf(write(tmp_path, GOOD))
    out = tmp_path / "copy.swf.gz"
    write_swf(trace, out)
    odd_name = tmp_path / "copy.txt"
    odd_name.write_bytes(out.read_bytes())  # gzip behind a plain name
    again = read_swf(odd_name)
    for field in SWF_FIELDS:
        assert np.array_equal(again[field], trace[field]), field
    assert again.header["MaxProcs"] == "8"


def manifest() -> dict[str, int]:
    path = MIRROR / "MANIFEST.tsv"
    if not path.exists():
        pytest.skip("no trace mirror: set RUSH_TRACE_MIRROR")
    with open(path) as fh:
        return {row["file"]: int(row["jobs"]) for row in csv.DictReader(fh, delimiter="\t")}


@pytest.mark.parametrize(
    "name", ["KTH-SP2-1996-2.1-cln.swf.gz", "SDSC-SP2-1998-4.2-cln.swf.gz", "Lublin-256-10k.swf.gz"]
)
def test_real_traces_have_manifest_job_counts(name):
    jobs = manifest()[name]
    trace = read_swf(MIRROR / name)
    assert len(trace) == jobs
    assert trace.skipped == {}
    assert trace.max_procs is not None or name.startswith("Lublin")
