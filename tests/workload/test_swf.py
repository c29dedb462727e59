"""SWF reading and writing: fields, header, malformed lines, truncated gzip, round trip, real traces."""

from __future__ import annotations

import gzip
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from rush.errors import TraceFormatError, TraceNotFoundError
from rush.workload.model import workload_from_trace
from rush.workload.swf import read_swf, write_swf
from tests.workload.helpers import GOOD, GOOD_LINES, MIRROR, manifest, same_jobs

__all__ = ["GOOD", "MIRROR"]  # imported by other workload tests


def write(tmp_path: Path, text: str, name: str = "t.swf") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_fields_and_header(tmp_path):
    trace = read_swf(write(tmp_path, GOOD, "small-log.swf"))
    assert trace.name == "small-log"
    assert len(trace) == 3
    assert trace["job_id"].tolist() == [1, 2, 3]
    assert trace["runtime"].tolist() == [100, 50, 30] and trace["runtime"].dtype == np.int64
    assert trace["avg_cpu"].tolist() == [-1.0, 12.5, -1.0] and trace["avg_cpu"].dtype == np.float64
    assert trace["req_time"].tolist() == [200, 60, -1]
    assert trace.header["Computer"] == "test machine"
    assert trace.header["Note"] == "first line continued here"
    assert trace.header["Queue"] == "0 batch\n1 debug"  # repeated keys keep every value
    assert trace.max_procs == 8 and trace.unix_start_time == 1000
    assert trace.skipped == {} and trace.malformed_lines == []
    w = workload_from_trace(trace)
    # q falls back to requested processors, p~ to the runtime.
    assert w.procs.tolist() == [4, 8, 2] and w.requested_time.tolist() == [200, 60, 30]


def test_blank_lines_indented_comments_and_crlf(tmp_path):
    text = GOOD.replace("2 10 0", "\n   ; an indented comment\n2 10 0").replace("\n", "\r\n")
    trace = read_swf(write(tmp_path, text))
    assert trace["job_id"].tolist() == [1, 2, 3] and trace.skipped == {}
    assert trace.header["Computer"] == "test machine"


BAD_TAIL = (
    "4 30 0 10 1 -1 -1 1 20\n"  # 9 fields
    "5 40 0 x 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\n"  # a letter
    "6 50 0 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\n"
    "7 60 0 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1 99\n"  # 19 fields
    "8 70 0 nan 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1\n"  # not a finite number
    "9 80 0 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1"  # last line without newline
)
MALFORMED = GOOD + BAD_TAIL
FIRST_BAD = GOOD_LINES + 1


def test_malformed_lines_are_skipped_and_counted(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="rush.workload.swf"):
        trace = read_swf(write(tmp_path, MALFORMED))
    assert trace["job_id"].tolist() == [1, 2, 3, 6, 9]
    assert trace["submit"].tolist() == [0, 10, 20, 50, 80]
    assert trace.skipped == {"malformed": 4}
    assert trace.malformed_lines == [FIRST_BAD, FIRST_BAD + 1, FIRST_BAD + 3, FIRST_BAD + 4]
    assert f"skipped 4 malformed SWF lines (first at lines {FIRST_BAD}, {FIRST_BAD + 1}" in caplog.text


@pytest.mark.parametrize(
    ("bad_line", "reason"),
    [
        ("4 30 0 10 1 -1 -1 1 20", "has 9 fields, SWF needs 18"),
        ("5 40 0 x 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1", "field 4 ('x') is not a number"),
        ("5 40 0 10 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1 0", "has 19 fields, SWF needs 18"),
        ("5 40 0 12x 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1", "field 4 ('12x') is not a number"),
        ("5 40 0 inf 1 -1 -1 1 20 -1 1 1 1 -1 1 -1 -1 -1", "field 4 ('inf') is not a number"),
    ],
)
def test_strict_names_the_line_and_the_reason(tmp_path, bad_line, reason):
    path = write(tmp_path, GOOD + bad_line + "\n" + BAD_TAIL)
    with pytest.raises(TraceFormatError) as err:
        read_swf(path, strict=True)
    assert err.value.where == f"{path}:{FIRST_BAD}"
    assert reason in err.value.message
    assert "without --strict" in err.value.fix


def test_good_file_is_the_same_strict_or_not(tmp_path):
    path = write(tmp_path, GOOD)
    assert same_jobs(read_swf(path, strict=True), read_swf(path))


def test_truncated_gzip_is_a_clear_error(tmp_path):
    data = gzip.compress(GOOD.encode() * 200)
    path = tmp_path / "cut.swf.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError) as err:
        read_swf(path)
    assert err.value.where == str(path)
    assert "truncated or corrupt" in err.value.message and "rush trace fetch" in err.value.fix


def test_truncated_catalogue_trace_names_the_fetch_command(tmp_path):
    name = "KTH-SP2-1996-2.1-cln.swf.gz"
    if not (MIRROR / name).exists():
        pytest.skip("no trace mirror")
    data = (MIRROR / name).read_bytes()
    path = tmp_path / name
    path.write_bytes(data[: len(data) - 1000])
    with pytest.raises(TraceFormatError, match="rush trace fetch KTH-SP2"):
        read_swf(path)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(TraceNotFoundError, match="no such trace file"):
        read_swf(tmp_path / "absent.swf")
    with pytest.raises(TraceFormatError, match="cannot read"):
        read_swf(tmp_path)


def test_empty_and_header_only_files(tmp_path):
    assert len(read_swf(write(tmp_path, ""))) == 0
    only_header = read_swf(write(tmp_path, "; MaxProcs: 4\n;\n"))
    assert len(only_header) == 0 and only_header.max_procs == 4


def test_gzip_detected_by_content_and_round_trip(tmp_path):
    trace = read_swf(write(tmp_path, GOOD))
    out = tmp_path / "copy.swf.gz"
    write_swf(trace, out)
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    odd_name = tmp_path / "copy.txt"
    odd_name.write_bytes(out.read_bytes())  # gzip behind a plain name
    again = read_swf(odd_name)
    assert same_jobs(again, trace)
    assert again.header == trace.header


def test_round_trip_keeps_float_precision(tmp_path):
    trace = read_swf(write(tmp_path, GOOD))
    trace.columns["avg_cpu"] = np.array([0.1, 123456.789012345, 1e-7])
    trace.columns["used_mem"] = np.array([np.nan, 3.0, -1.0])  # NaN is written as unknown
    path = tmp_path / "floats.swf"
    write_swf(trace, path)
    again = read_swf(path)
    assert again["avg_cpu"].tolist() == [0.1, 123456.789012345, 1e-7]
    assert again["used_mem"].tolist() == [-1.0, 3.0, -1.0]


def test_real_trace_round_trip_is_identical(tmp_path):
    name = "KTH-SP2-1996-2.1-cln.swf.gz"
    if not (MIRROR / name).exists():
        pytest.skip("no trace mirror")
    trace = read_swf(MIRROR / name)
    path = tmp_path / "kth.swf"
    write_swf(trace, path)
    again = read_swf(path)
    assert same_jobs(again, trace)
    assert again.header == trace.header


@pytest.mark.parametrize(
    "name",
    [
        "KTH-SP2-1996-2.1-cln.swf.gz",
        "SDSC-SP2-1998-4.2-cln.swf.gz",
        "CTC-SP2-1996-3.1-cln.swf.gz",
        "HPC2N-2002-2.2-cln.swf.gz",
        "CEA-Curie-2011-2.1-cln.swf.gz",
        "SDSC-DS-2004-2.1-cln.swf.gz",
        "Lublin-256-10k.swf.gz",
    ],
)
def test_real_traces_match_the_manifest(name):
    row = manifest()[name]
    trace = read_swf(MIRROR / name)
    assert len(trace) == int(row["jobs"])
    assert trace.skipped == {}
    assert (np.diff(trace["submit"]) >= 0).all()  # the archive's logs are in submit order
    if row["max_procs"] != "-":
        assert trace.header["MaxProcs"] == row["max_procs"]
        assert trace.max_procs == int(row["max_procs"].split()[0])


def test_copy_of_a_real_trace_under_another_name(tmp_path):
    name = "Lublin-256-10k.swf.gz"
    if not (MIRROR / name).exists():
        pytest.skip("no trace mirror")
    plain = tmp_path / "lublin.swf"
    plain.write_bytes(gzip.decompress((MIRROR / name).read_bytes()))
    gz_copy = tmp_path / "other.gz"
    shutil.copyfile(MIRROR / name, gz_copy)
    assert same_jobs(read_swf(plain), read_swf(gz_copy))
    assert read_swf(plain).name == "lublin" and read_swf(gz_copy).name == "other"


def test_write_errors_are_clear_and_leave_nothing(tmp_path):
    trace = read_swf(write(tmp_path, GOOD))
    with pytest.raises(TraceFormatError, match="cannot write the trace") as err:
        write_swf(trace, tmp_path / "no" / "such" / "dir" / "out.swf")
    assert err.value.fix
    out = tmp_path / "out.swf"
    write_swf(trace, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.swf", "t.swf"]
