"""Reading a trace file's bytes safely: regular files only, bounded gunzip, BOM and CR line ends.

Shared by the SWF and sacct readers and the catalogue's format sniffing, and free of numba
so that importing it stays cheap.
"""

from __future__ import annotations

import os
import stat
import zlib
from pathlib import Path

from rush.errors import TraceFormatError, TraceNotFoundError

GZIP_MAGIC = b"\x1f\x8b"


def refetch_hint(path: Path) -> str:
    from rush.workload.trace_manifest import lookup

    try:
        name = lookup(path.name).alias
    except TraceNotFoundError:
        return "re-download or re-create the file; a catalogue trace: rush trace fetch NAME"
    return f"re-download: rush trace fetch {name} (it re-verifies the sha256)"


# Decompressed size refused by default: a few kilobytes of gzip can expand to gigabytes
# (a "gzip bomb"); the largest Parallel Workloads Archive log is well under this.
MAX_TRACE_BYTES_DEFAULT = 1 << 30
UTF8_BOM = b"\xef\xbb\xbf"


def max_trace_bytes() -> int:
    """The decompressed-size limit: ``$RUSH_MAX_TRACE_BYTES`` or 1 GiB."""
    raw = os.environ.get("RUSH_MAX_TRACE_BYTES", "")
    if not raw:
        return MAX_TRACE_BYTES_DEFAULT
    if not raw.isdigit() or int(raw) <= 0:
        raise TraceFormatError(
            f"RUSH_MAX_TRACE_BYTES must be a positive integer, got {raw!r}",
            where="RUSH_MAX_TRACE_BYTES",
            fix="unset it (1 GiB) or give a byte count, e.g. RUSH_MAX_TRACE_BYTES=4294967296",
        )
    return int(raw)


def check_regular_file(path: Path, what: str = "trace") -> None:
    """Refuse a missing path or one that is not a regular file (a FIFO or /dev/zero never ends)."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise TraceNotFoundError(
            f"no such {what} file: {path}",
            where=str(path),
            fix="check the path, or use a catalogue name such as KTH-SP2 (rush trace info --list)",
        ) from None
    except OSError as exc:
        raise TraceFormatError(
            f"cannot read the {what} file ({exc.strerror or exc})",
            where=str(path),
            fix=f"give a readable {what} file",
        ) from exc
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, device or socket)"
        raise TraceFormatError(
            f"cannot read the {what} file: it is {kind}",
            where=str(path),
            fix=f"give a regular {what} file (copy a stream to a file first)",
        )


def gunzip_bounded(raw: bytes, where: str, limit: int, fix: str) -> bytes:
    """Every gzip member of ``raw``, decompressed, refusing more than ``limit`` bytes of output.

    Streams through zlib with ``max_length``, so a gzip bomb costs at most ``limit`` bytes of
    memory before it is refused; the trailer's CRC and size are checked like ``gzip.decompress``.
    """
    members: list[bytes] = []
    size = 0
    data = raw
    try:
        while data:
            inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip wrapper, CRC checked
            out = inflater.decompress(data, limit - size + 1)
            size += len(out)
            if size > limit:
                raise TraceFormatError(
                    f"decompresses to more than {limit} bytes (a gzip bomb, or a trace larger than the limit)",
                    where=where,
                    fix="check the file; if it is a genuine trace, raise RUSH_MAX_TRACE_BYTES",
                )
            if not inflater.eof:
                raise EOFError("compressed data ended before the end-of-stream marker")
            members.append(out)
            data = inflater.unused_data.lstrip(b"\x00")  # gzip allows zero padding between members
    except (EOFError, zlib.error) as exc:
        raise TraceFormatError(
            f"the gzip data is truncated or corrupt ({exc})", where=where, fix=fix
        ) from exc
    return b"".join(members)


def normalise_text(raw: bytes) -> bytes:
    """Drop a UTF-8 byte-order mark and turn old Mac CR-only line ends into LF."""
    if raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM) :]
    if b"\n" not in raw and b"\r" in raw:
        raw = raw.replace(b"\r", b"\n")
    return raw


def read_stored_bytes(path: Path, what: str = "trace") -> bytes:
    """The bytes of a regular trace file as stored (gzip not undone)."""
    check_regular_file(path, what)
    try:
        return path.read_bytes()
    except OSError as exc:  # no permission, I/O error
        raise TraceFormatError(
            f"cannot read the {what} file ({exc.strerror or exc})",
            where=str(path),
            fix=f"give a readable {what} file",
        ) from exc


def decode_trace_bytes(raw: bytes, path: Path, fix: str | None = None) -> bytes:
    """The text of a trace file's stored bytes, gunzipped (bounded) when they start with gzip's magic."""
    if raw[:2] == GZIP_MAGIC:
        raw = gunzip_bounded(raw, str(path), max_trace_bytes(), fix or refetch_hint(path))
    return normalise_text(raw)


def read_trace_bytes(path: Path, what: str = "trace", fix: str | None = None) -> bytes:
    """The text of a regular trace file, gunzipped (bounded) when it starts with gzip's magic."""
    return decode_trace_bytes(read_stored_bytes(path, what), path, fix)
