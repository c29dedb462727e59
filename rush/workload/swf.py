"""Standard Workload Format (SWF) reader and writer.

SWF (Feitelson et al., version 2.2): header comments ``; Key: value`` and one line per job
with 18 whitespace-separated numeric fields (``rush.workload.model.SWF_FIELDS``); ``-1``
means unknown. Files may be plain or gzip (detected by magic bytes, not the suffix); only
regular files are read (a FIFO or device is refused, it may never end), gzip is decompressed
as a stream and refused past ``RUSH_MAX_TRACE_BYTES`` (1 GiB), a UTF-8 byte-order mark is
ignored and old Mac CR-only line ends are read as line ends.

Header: indented comment lines continue the previous key (appended with a space); a key
given several times (``Queue``, ``Partition``) keeps every value, joined by newlines, and
the writer emits one ``; Key: value`` line per value again.

Reading is one compiled pass over the bytes (``swf_fast``). Lines that are not 18 numbers
are skipped and counted in ``Trace.skipped["malformed"]`` (their first line numbers in
``SWFTrace.malformed_lines`` and in a log warning); with ``strict=True`` the first one
raises :class:`TraceFormatError` naming ``file:line``. Integer fields beyond ±2**53 (where
float parsing stops being exact; ``1e308``) and non-finite values make a line malformed. A
repeated job id is kept here and dropped by the trace semantics (``workload_from_trace``);
with ``strict=True`` it raises, naming the line of the repeat.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import logging
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rush.errors import RushError, TraceFormatError
from rush.output_file import check_output, replace_file
from rush.workload import parsed_swf_cache
from rush.workload.model import SWF_FIELDS, SWF_FLOAT_FIELDS, Trace, duplicate_job_ids
from rush.workload.parsed_swf_cache import ParsedSWF
from rush.workload.trace_file import (
    GZIP_MAGIC,
    decode_trace_bytes,
    max_trace_bytes,
    read_stored_bytes,
    read_trace_bytes,
)

log = logging.getLogger(__name__)
N_FIELDS = len(SWF_FIELDS)
_IS_FLOAT = np.array([name in SWF_FLOAT_FIELDS for name in SWF_FIELDS])


@dataclass
class SWFTrace(Trace):
    """A :class:`Trace` read from an SWF file, with where its malformed lines were."""

    # 1-based line numbers of the first skipped malformed lines (all are counted in ``skipped``).
    malformed_lines: list[int] = field(default_factory=list)
    # 1-based line number of each header key's first line (for errors about the header).
    header_lines: dict[str, int] = field(default_factory=dict)


def trace_name(path: Path) -> str:
    """File stem without ``.gz`` and ``.swf``: ``KTH-SP2-1996-2.1-cln.swf.gz`` -> ``KTH-SP2-1996-2.1-cln``."""
    return path.name.removesuffix(".gz").removesuffix(".swf")


def _parse_header(lines: list[tuple[int, bytes]]) -> tuple[dict[str, str], dict[str, int]]:
    """The header's keys and values, and the line number of each key's first line."""
    header: dict[str, str] = {}
    first_line: dict[str, int] = {}
    last = None
    for lineno, line in lines:
        raw = line.lstrip()[1:].decode("utf-8", "replace").rstrip("\r\n")
        text = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        key, sep, value = text.partition(":")
        key = key.strip()
        if indent <= 2 and sep and key and " " not in key:
            value = value.strip()
            header[key] = f"{header[key]}\n{value}" if key in header else value
            first_line.setdefault(key, lineno)
            last = key
        elif last is not None and text:
            header[last] += " " + text  # an indented continuation line
    return header, first_line


_BLANKS = re.compile(rb"[ \t\r\n]*")


def _header_lines(raw: bytes) -> list[tuple[int, bytes]]:
    """The comment lines before the first job line, with their 1-based line numbers."""
    lines = []
    start = 0
    while start < len(raw):  # line by line up to the first job: no split of the whole file
        start = _BLANKS.match(raw, start).end()  # a run of blank lines in one C-level step
        end = raw.find(b"\n", start)
        end = len(raw) if end < 0 else end
        stripped = raw[start:end].strip()
        start = end + 1
        if stripped.startswith(b";"):
            lines.append((raw.count(b"\n", 0, end) + 1, stripped))  # header only: a few KB
        elif stripped:
            break
    return lines


def _shown(token: bytes, limit: int = 40) -> str:
    text = token[:limit].decode("utf-8", "replace")
    return repr(text + "…" if len(token) > limit else text)


def _describe(line: bytes) -> str:
    """Why an SWF line is malformed (for messages)."""
    from rush.workload.swf_fast import MAX_EXACT_INT

    fields = line.split()
    if len(fields) != N_FIELDS:
        return f"has {len(fields)} fields, SWF needs {N_FIELDS}"
    for k, (name, token) in enumerate(zip(SWF_FIELDS, fields, strict=True)):
        try:
            value = float(token)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):  # "abc", "nan", "inf", "1e999"
            return f"field {k + 1} ({_shown(token)}) is not a number"
        if name not in SWF_FLOAT_FIELDS and abs(value) > MAX_EXACT_INT:
            return f"field {k + 1} {name} ({_shown(token)}) is out of range (beyond ±2**53)"
    return "is not 18 plain numbers"


def _job_line_number(raw: bytes, row: int, malformed: frozenset[int] = frozenset()) -> int:
    """1-based line number of job line ``row`` (0-based), skipping the ``malformed`` lines."""
    seen = -1
    for lineno, line in enumerate(raw.split(b"\n"), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith(b";") and lineno not in malformed:
            seen += 1
            if seen == row:
                return lineno
    return 0


def _parse(raw: bytes) -> ParsedSWF:
    """One compiled pass over the text (numba is imported here, not when the cache answers)."""
    from rush.workload.swf_fast import MIN_JOB_LINE, parse_swf_numbers

    # No job line is shorter than MIN_JOB_LINE bytes: a file of blank lines needs no room.
    capacity = min(raw.count(b"\n") + 1, len(raw) // MIN_JOB_LINE + 1)
    ints, floats, rows, n_bad, bad_lines = parse_swf_numbers(
        np.frombuffer(raw, dtype=np.uint8), _IS_FLOAT, capacity
    )
    header, header_lines = _parse_header(_header_lines(raw))
    return ParsedSWF(
        ints[:, :rows], floats[:, :rows], int(n_bad), bad_lines.tolist(), header, header_lines, len(raw)
    )


def _parsed(path: Path, stored: bytes, cache: bool) -> tuple[ParsedSWF, bytes | None]:
    """The file's parse, from the cache when it holds this content (then the text is not decoded)."""
    use_cache = cache and parsed_swf_cache.enabled(stored)
    file_sha256 = hashlib.sha256(stored).hexdigest() if use_cache else ""
    if use_cache:
        parsed = parsed_swf_cache.load(file_sha256)
        # The decompression limit applies as if the file were read again (a lowered limit refuses it).
        if parsed is not None and (stored[:2] != GZIP_MAGIC or parsed.text_bytes <= max_trace_bytes()):
            return parsed, None
    raw = decode_trace_bytes(stored, path)
    parsed = _parse(raw)
    if use_cache:
        parsed_swf_cache.store(file_sha256, parsed)
    return parsed, raw


def read_swf(path: str | Path, strict: bool = False, cache: bool = True) -> SWFTrace:
    """Read an SWF file (plain or gzip) into a trace (see the module docstring).

    ``cache``: use and fill the parsed-trace cache (``rush.workload.parsed_swf_cache``).
    """
    path = Path(path)
    stored = read_stored_bytes(path)
    parsed, raw = _parsed(path, stored, cache)
    malformed, n_bad = parsed.malformed_lines, parsed.n_bad
    if n_bad and strict:
        raw = raw if raw is not None else decode_trace_bytes(stored, path)
        lineno = malformed[0]
        line = raw.split(b"\n", lineno)[lineno - 1]
        raise TraceFormatError(
            f"malformed SWF line: {_describe(line)}",
            where=f"{path}:{lineno}",
            fix="fix or delete the line, or read without --strict to skip and count malformed lines",
        )
    if n_bad:
        shown = ", ".join(map(str, malformed[:5]))
        log.warning("%s: skipped %d malformed SWF lines (first at lines %s)", path, n_bad, shown)
    # Each column is a contiguous row of the parser's arrays: no copy.
    int_rows = iter(parsed.ints)
    float_rows = iter(parsed.floats)
    columns = {name: next(float_rows if name in SWF_FLOAT_FIELDS else int_rows) for name in SWF_FIELDS}
    if strict:
        repeated = duplicate_job_ids(columns["job_id"])
        if repeated is not None:
            raw = raw if raw is not None else decode_trace_bytes(stored, path)
            row = int(np.flatnonzero(repeated)[0])
            raise TraceFormatError(
                f"job id {int(columns['job_id'][row])} appears again ({int(repeated.sum())} repeated ids)",
                where=f"{path}:{_job_line_number(raw, row)}",
                fix="give each job its own id, or read without --strict to keep the first and count the rest",
            )
    return SWFTrace(
        columns=columns,
        header=parsed.header,
        name=trace_name(path),
        skipped={"malformed": n_bad} if n_bad else {},
        source=str(path),
        malformed_lines=malformed,
        header_lines=parsed.header_lines,
    )


def job_line_number(trace: Trace, row: int) -> int:
    """1-based line of job ``row`` of ``trace`` in its SWF file (for errors: re-reads the file).

    Exact while the trace is the file's jobs in file order (as :func:`read_swf` returns them)
    with at most ``MAX_BAD_LINES_KEPT`` malformed lines; 0 when the file is gone.
    """
    try:
        raw = read_trace_bytes(Path(trace.source))
    except RushError:  # moved or deleted since it was read
        return 0
    return _job_line_number(raw, row, frozenset(getattr(trace, "malformed_lines", ())))


def _format_column(values: np.ndarray) -> list[str]:
    if values.dtype.kind in "iub":
        return list(map(str, values.tolist()))
    # Floats: integral values as integers, others in the shortest exact form; NaN/inf are unknown.
    return [
        ("-1" if not math.isfinite(v) else str(int(v)) if v.is_integer() else repr(v))
        for v in values.astype(np.float64).tolist()
    ]


def format_swf(trace: Trace) -> str:
    """The SWF text of ``trace``: header comments, then one line per job."""
    header = [
        f"; {key}: {part}" if part else f"; {key}:"
        for key, value in trace.header.items()
        for part in str(value).split("\n")
    ]
    columns = [_format_column(np.asarray(trace[f])) for f in SWF_FIELDS]
    body = map(" ".join, zip(*columns, strict=True))
    return "\n".join([*header, *body]) + "\n"


def write_swf(trace: Trace, path: str | Path) -> None:
    """Write ``trace`` as SWF (gzip if the name ends in .gz); reading it back gives the same trace."""
    path = Path(path)
    if path.name in ("", ".", ".."):  # Path("") is Path("."): no file name to write
        raise TraceFormatError(
            "the output path names no file", where=repr(str(path)), fix="give a file name, e.g. out.swf"
        )
    check_output(path, TraceFormatError)  # before the work: never over a device such as /dev/zero
    data = format_swf(trace).encode()
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=6)
    # Write beside the target, then rename: no half-written trace is left behind.
    partial = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        partial.write_bytes(data)
        replace_file(partial, path)
    except OSError as exc:
        with contextlib.suppress(OSError):  # e.g. ENAMETOOLONG again: nothing was written
            partial.unlink(missing_ok=True)
        raise TraceFormatError(
            f"cannot write the trace ({exc.strerror or exc})",
            where=str(path),
            fix="choose a writable output path",
        ) from exc
