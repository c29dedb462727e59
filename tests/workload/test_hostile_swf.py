"""Hostile SWF input: every case ends in a correct trace or a clear TraceFormatError/TraceNotFoundError.

Table-driven: each row is a file's bytes and what reading it through ``load_trace`` (the path
every command takes) must give: ``jobs`` usable jobs (after the trace semantics) and the
malformed lines skipped, or an error whose message contains a given text. No other exception
type may escape. Special files (FIFO, /dev/zero), gzip damage and a gzip bomb follow the table.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import signal
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from rush.errors import RushError, TraceFormatError
from rush.workload.catalogue import load_trace
from rush.workload.model import workload_from_trace
from rush.workload.swf import read_swf

HEADER = b"; Version: 2.2\n; MaxProcs: 8\n"


def job(
    job_id: object = 1, submit: object = 0, runtime: object = 100, procs: object = 4, **fields: object
) -> bytes:
    """One SWF job line; ``fields`` override any of the 18 by 1-based position (f6=...)."""
    values: list[object] = [
        job_id,
        submit,
        5,
        runtime,
        procs,
        -1,
        -1,
        procs,
        200,
        -1,
        1,
        1,
        1,
        -1,
        1,
        -1,
        -1,
        -1,
    ]
    for key, value in fields.items():
        values[int(key[1:]) - 1] = value
    return " ".join(map(str, values)).encode()


GOOD2 = HEADER + job(1) + b"\n" + job(2, 10) + b"\n"
BIG = 2**63

# (id, file bytes, expected) with expected ("ok", usable jobs, malformed lines skipped) or ("error", text).
CASES: list[tuple[str, bytes, tuple]] = [
    ("plain", GOOD2, ("ok", 2, 0)),
    ("int-2^63-submit", GOOD2 + job(3, BIG) + b"\n", ("ok", 2, 1)),
    ("int-2^64-job-id", GOOD2 + job(2**64) + b"\n", ("ok", 2, 1)),
    ("int-1e308-runtime", GOOD2 + job(3, 20, "1e308") + b"\n", ("ok", 2, 1)),
    ("int-minus-1e308", GOOD2 + job(3, "-1e308") + b"\n", ("ok", 2, 1)),
    ("exact-2^53", GOOD2 + job(3, 2**53) + b"\n", ("ok", 3, 0)),
    ("beyond-2^53", GOOD2 + job(3, 2**53 + 2) + b"\n", ("ok", 2, 1)),
    ("float-field-1e999", GOOD2 + job(3, 20, f6="1e999") + b"\n", ("ok", 2, 1)),
    ("float-field-1e308-ok", GOOD2 + job(3, 20, f6="1e308") + b"\n", ("ok", 3, 0)),
    ("nan", GOOD2 + job(3, "nan") + b"\n", ("ok", 2, 1)),
    ("inf", GOOD2 + job(3, 20, "inf") + b"\n", ("ok", 2, 1)),
    ("minus-inf", GOOD2 + job(3, 20, f7="-inf") + b"\n", ("ok", 2, 1)),
    ("exponent-overflow", GOOD2 + job(3, "1e99999999999999999999999") + b"\n", ("ok", 2, 1)),
    ("exponent-underflow", GOOD2 + job(3, 20, f6="1e-99999999999999999999999") + b"\n", ("ok", 3, 0)),
    ("400-digits", GOOD2 + job(3, "9" * 400) + b"\n", ("ok", 2, 1)),
    ("exponent-without-digits", GOOD2 + job(3, "1e") + b"\n", ("ok", 2, 1)),
    ("sign-alone", GOOD2 + job(3, "-") + b"\n", ("ok", 2, 1)),
    ("plus-sign", GOOD2 + job(3, "+20") + b"\n", ("ok", 3, 0)),
    ("dot-forms", GOOD2 + job(3, 20, f6=".5", f7="5.") + b"\n", ("ok", 3, 0)),
    ("trailing-letters", GOOD2 + job(3, "12x") + b"\n", ("ok", 2, 1)),
    ("17-fields", GOOD2 + b" ".join(job(3).split()[:17]) + b"\n", ("ok", 2, 1)),
    ("19-fields", GOOD2 + job(3) + b" 7\n", ("ok", 2, 1)),
    ("nul-bytes", GOOD2 + job(3).replace(b" ", b"\x00", 1) + b"\n", ("ok", 2, 1)),
    ("tabs", GOOD2 + job(3).replace(b" ", b"\t") + b"\n", ("ok", 3, 0)),
    ("crlf", GOOD2.replace(b"\n", b"\r\n"), ("ok", 2, 0)),
    ("cr-only", GOOD2.replace(b"\n", b"\r"), ("ok", 2, 0)),
    ("utf8-bom", b"\xef\xbb\xbf" + GOOD2, ("ok", 2, 0)),
    ("utf8-bom-no-header", b"\xef\xbb\xbf" + job(1) + b"\n", ("ok", 1, 0)),
    ("non-utf8-header", b"; Note: caf\xe9 \xff\n" + GOOD2, ("ok", 2, 0)),
    ("no-final-newline", GOOD2 + job(3, 20), ("ok", 3, 0)),
    ("negative-submit", GOOD2 + job(3, -500) + b"\n", ("ok", 3, 0)),
    ("negative-runtime-dropped", GOOD2 + job(3, 20, -5) + b"\n", ("ok", 2, 0)),
    ("maxprocs-garbage", b"; MaxProcs: 1e99\n; UnixStartTime: soon\n" + job(1) + b"\n", ("ok", 1, 0)),
    ("maxprocs-negative", b"; MaxProcs: -5\n" + job(1) + b"\n", ("ok", 1, 0)),
    ("maxprocs-superscript", "; MaxProcs: ²\n".encode() + job(1) + b"\n", ("ok", 1, 0)),
    ("maxprocs-5000-digits", b"; MaxProcs: " + b"9" * 5000 + b"\n" + job(1) + b"\n", ("ok", 1, 0)),
    ("unixstart-5000-digits", b"; UnixStartTime: " + b"9" * 5000 + b"\n" + job(1) + b"\n", ("ok", 1, 0)),
    ("enormous-line", GOOD2 + b"1" * 5_000_000 + b"\n", ("ok", 2, 1)),
    ("enormous-comment", GOOD2 + b";" + b"x" * 5_000_000 + b"\n", ("ok", 2, 0)),
    ("many-blank-lines", GOOD2 + b"\n" * 1_000_000, ("ok", 2, 0)),
    ("duplicate-id", GOOD2 + job(1, 30) + b"\n", ("ok", 2, 0)),
    ("duplicate-ids-unsorted", HEADER + job(5) + b"\n" + job(2, 1) + b"\n" + job(5, 2) + b"\n", ("ok", 2, 0)),
    ("empty-file", b"", ("error", "no jobs in the trace")),
    ("header-only", HEADER, ("error", "no jobs in the trace")),
    ("blank-lines-only", b"\n \n\t\n", ("error", "no jobs in the trace")),
    ("only-malformed", HEADER + b"1 2 3\nfoo bar\n", ("error", "'malformed': 2")),
    ("one-mac-line-of-garbage", b"x" * 100, ("error", "no jobs in the trace")),
    ("all-too-wide", HEADER + job(1, procs=64) + b"\n", ("error", "give the real size with --procs")),
    ("all-negative-runtime", HEADER + job(1, runtime=-1) + b"\n", ("error", "none of the trace's 1 jobs")),
    (
        "random-binary",
        bytes(np.random.default_rng(7).integers(0, 256, 4000, dtype=np.uint8))
        .replace(b"|", b"!")
        .replace(b"{", b"(")
        .replace(b"[", b"("),
        ("error", "no jobs in the trace"),
    ),
    ("binary-with-bar", b"\x00\x01|\x02\x00|\xff\n\x00|\x00\n", ("error", "sacct --parsable2")),
    ("html-page", b"<html><body>404 Not Found</body></html>\n", ("error", "no jobs in the trace")),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_swf(tmp_path: Path, data: bytes, expected: tuple):
    path = tmp_path / "t.swf"
    path.write_bytes(data)
    if expected[0] == "error":
        with pytest.raises((TraceFormatError, RushError)) as err:
            workload_from_trace(load_trace(str(path)))
        assert expected[1] in str(err.value) and "fix:" in str(err.value)
        assert str(path) in str(err.value)
        return
    trace = load_trace(str(path))
    assert trace.unix_start_time is None or abs(trace.unix_start_time) < 2**63
    w = workload_from_trace(trace)
    assert 0 < w.machine_procs < 2**31
    assert len(w) == expected[1]
    assert trace.skipped.get("malformed", 0) == expected[2]
    # Nothing silently wrong: every value read is one that was written (no -2**63 wrap).
    assert (w.submit > -(2.0**53)).all() and (w.runtime < 2.0**53).all()


def test_values_are_exact_and_header_survives_a_bom(tmp_path: Path):
    path = tmp_path / "bom.swf"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD2 + job(3, 2**53) + b"\n")
    trace = read_swf(path)
    assert trace.header["MaxProcs"] == "8" and trace.header["Version"] == "2.2"
    assert trace["submit"].tolist() == [0, 10, 2**53]


def test_cr_only_lines_are_numbered_like_lf(tmp_path: Path):
    path = tmp_path / "mac.swf"
    path.write_bytes((GOOD2 + b"1 2 3\n").replace(b"\n", b"\r"))
    with pytest.raises(TraceFormatError) as err:
        read_swf(path, strict=True)
    assert f"{path}:5" in str(err.value)


def test_out_of_range_integer_is_named_in_strict_mode(tmp_path: Path):
    path = tmp_path / "big.swf"
    path.write_bytes(GOOD2 + job(3, "1e308") + b"\n")
    with pytest.raises(TraceFormatError) as err:
        read_swf(path, strict=True)
    assert f"{path}:5" in str(err.value) and "field 2 submit ('1e308') is out of range" in str(err.value)


def test_duplicate_ids_are_dropped_and_counted_or_refused_in_strict_mode(tmp_path: Path):
    path = tmp_path / "dup.swf"
    path.write_bytes(GOOD2 + job(1, 30, 7) + b"\n")
    w = workload_from_trace(read_swf(path))
    assert w.dropped == {"duplicate_job_id": 1}
    assert w.job_id.tolist() == [1, 2] and w.runtime.tolist() == [100.0, 100.0]  # the first job 1 is kept
    with pytest.raises(TraceFormatError) as err:
        read_swf(path, strict=True)
    assert f"{path}:5" in str(err.value) and "job id 1 appears again" in str(err.value)


@contextlib.contextmanager
def deadline(seconds: int):
    """Turn a hang (the old behaviour on a FIFO) into a test failure instead of a stuck suite."""

    def fail(*_):
        raise AssertionError(f"still reading after {seconds} s: the reader blocked")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_fifo_is_refused_not_read(tmp_path: Path):
    fifo = tmp_path / "trace.swf"
    os.mkfifo(fifo)
    with deadline(20), pytest.raises(TraceFormatError, match="not a regular file"):
        load_trace(str(fifo))
    with deadline(20), pytest.raises(TraceFormatError, match="not a regular file"):
        read_swf(fifo)


def test_device_and_directory_are_refused(tmp_path: Path):
    with deadline(20), pytest.raises(TraceFormatError, match="not a regular file"):
        load_trace("/dev/zero")
    with pytest.raises(TraceFormatError, match="is a directory"):
        load_trace(str(tmp_path))


def test_every_single_byte_gzip_corruption_is_a_clean_error_or_the_same_trace(tmp_path: Path):
    data = gzip.compress(GOOD2 + b"".join(job(k, k) + b"\n" for k in range(3, 60)))
    path = tmp_path / "t.swf.gz"
    outcomes = {"error": 0, "same": 0}
    for position in range(len(data)):
        damaged = bytearray(data)
        damaged[position] ^= 0xFF
        path.write_bytes(bytes(damaged))
        try:
            trace = load_trace(str(path))
        except RushError as exc:
            assert str(path) in str(exc) and "fix:" in str(exc)
            outcomes["error"] += 1
            continue
        # Only the gzip header's free fields (mtime, flags, OS) may change without notice.
        assert len(trace) == 59 and position < 10, position
        outcomes["same"] += 1
    assert outcomes["error"] > len(data) - 10


def test_truncated_gzip_and_trailing_garbage(tmp_path: Path):
    data = gzip.compress(GOOD2)
    path = tmp_path / "t.swf.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceFormatError, match="truncated or corrupt"):
        read_swf(path)
    path.write_bytes(data + b"garbage after the gzip member")
    with pytest.raises(TraceFormatError, match="truncated or corrupt"):
        read_swf(path)


def test_multi_member_gzip_and_zero_padding_are_read_whole(tmp_path: Path):
    path = tmp_path / "t.swf.gz"
    path.write_bytes(gzip.compress(GOOD2) + b"\x00" * 16 + gzip.compress(job(3, 20) + b"\n"))
    assert read_swf(path)["job_id"].tolist() == [1, 2, 3]


def test_gzip_bomb_is_refused_within_the_limit(tmp_path: Path, monkeypatch):
    limit = 1 << 20
    monkeypatch.setenv("RUSH_MAX_TRACE_BYTES", str(limit))
    path = tmp_path / "bomb.swf.gz"
    path.write_bytes(gzip.compress(GOOD2 + b"\n" * (64 << 20), compresslevel=9))  # 64 MiB in ~64 KiB
    assert path.stat().st_size < 200_000
    tracemalloc.start()
    try:
        with pytest.raises(TraceFormatError, match="decompresses to more than 1048576 bytes"):
            read_swf(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * limit  # bounded by the limit, not by the 64 MiB the file expands to
    monkeypatch.setenv("RUSH_MAX_TRACE_BYTES", "lots")
    with pytest.raises(TraceFormatError, match="RUSH_MAX_TRACE_BYTES must be a positive integer"):
        read_swf(path)


def test_blank_lines_do_not_size_the_parser(tmp_path: Path):
    """The parser's arrays follow the bytes that can hold jobs, not the count of newlines."""
    path = tmp_path / "blank.swf"
    path.write_bytes(GOOD2 + b"\n" * (8 << 20))
    tracemalloc.start()
    try:
        trace = read_swf(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(trace) == 2
    # 8 Mi lines x 18 fields x 8 bytes would be 1.2 GiB; the file itself is 8 MiB.
    assert peak < 64 << 20
