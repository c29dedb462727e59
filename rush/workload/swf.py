"""Standard Workload Format (SWF) reader and writer.

SWF (Feitelson et al., version 2.2): header comments ``; Key: value`` and one line per job
with 18 whitespace-separated numeric fields (``rush.workload.model.SWF_FIELDS``); ``-1``
means unknown. Files may be plain or gzip (detected by magic bytes, not the suffix).

Reading is vectorised: one ``np.loadtxt`` over all job lines. Only when that fails does
the reader go line by line, to name the first malformed line (``strict``) or to skip and
count every malformed line (default; ``Trace.skipped["malformed"]`` and a log warning
with the first line numbers).
"""

from __future__ import annotations

import gzip
import io
import logging
import zlib
from pathlib import Path

import numpy as np

from rush.errors import TraceFormatError, TraceNotFoundError
from rush.workload.model import SWF_FIELDS, SWF_FLOAT_FIELDS, Trace
from rush.workload.swf_fast import parse_swf_numbers

log = logging.getLogger(__name__)
GZIP_MAGIC = b"\x1f\x8b"
N_FIELDS = len(SWF_FIELDS)


def _read_bytes(path: Path) -> bytes:
    if not path.exists():
        raise TraceNotFoundError(
            f"no such trace file: {path}",
            where=str(path),
            fix="check the path, or use a catalogue name such as KTH-SP2",
        )
    raw = path.read_bytes()
    if raw[:2] != GZIP_MAGIC:
        return raw
    try:
        return gzip.decompress(raw)
    except (EOFError, zlib.error, OSError) as exc:
        raise TraceFormatError(
            f"the gzip data is truncated or corrupt ({exc})",
            where=str(path),
            fix="download the file again (rush trace fetch NAME re-verifies its sha256)",
        ) from exc


def _parse_header(lines: list[bytes]) -> dict[str, str]:
    header: dict[str, str] = {}
    last = None
    for line in lines:
        raw = line[1:].decode("utf-8", "replace")
        text = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        key, sep, value = text.partition(":")
        if indent <= 2 and sep and key and " " not in key.strip():
            last = key.strip()
            header[last] = value.strip()
        elif last is not None and text:
            # Indented lines continue the previous key's value.
            header[last] += " " + text
    return header


def _columns(data: np.ndarray) -> dict[str, np.ndarray]:
    return {
        name: data[:, k].astype(np.float64 if name in SWF_FLOAT_FIELDS else np.int64)
        for k, name in enumerate(SWF_FIELDS)
    }


def _parse_line(line: bytes) -> list[float] | str:
    fields = line.split()
    if len(fields) != N_FIELDS:
        return f"has {len(fields)} fields, SWF needs {N_FIELDS}"
    try:
        return [float(f) for f in fields]
    except ValueError:
        bad = next(f for f in fields if not _is_number(f))
        return f"field {fields.index(bad) + 1} ({bad.decode('utf-8', 'replace')!r}) is not a number"


def _is_number(token: bytes) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _first_job_offset(raw: bytes) -> int:
    """Offset of the first non-comment, non-blank line (header comments come before it)."""
    pos = 0
    while pos < len(raw):
        end = raw.find(b"\n", pos)
        end = len(raw) if end < 0 else end
        line = raw[pos:end].strip()
        if line and not line.startswith(b";"):
            return pos
        pos = end + 1
    return len(raw)


def read_swf(path: str | Path, strict: bool = False) -> Trace:
    """Read an SWF file (plain or gzip) into a :class:`Trace`."""
    path = Path(path)
    raw = _read_bytes(path)
    name = path.name.removesuffix(".gz").removesuffix(".swf")
    values, rows, ok = parse_swf_numbers(np.frombuffer(raw, dtype=np.uint8))
    if ok:
        comments = [line for line in raw[: _first_job_offset(raw)].split(b"\n") if line.startswith(b";")]
        return Trace(
            columns=_columns(values.reshape(rows, N_FIELDS)), header=_parse_header(comments), name=name
        )
    lines = raw.split(b"\n")
    comments = [line for line in lines if line.startswith(b";")]
    numbered = [
        (k + 1, line) for k, line in enumerate(lines) if line.strip() and not line.lstrip().startswith(b";")
    ]
    skipped: dict[str, int] = {}
    data = None
    if numbered:
        try:
            data = np.loadtxt(io.BytesIO(b"\n".join(line for _, line in numbered)), dtype=np.float64, ndmin=2)
            if data.shape[1] != N_FIELDS:
                data = None
        except ValueError:
            data = None
        if data is None:
            rows, bad = [], []
            for lineno, line in numbered:
                parsed = _parse_line(line)
                if isinstance(parsed, str):
                    if strict:
                        raise TraceFormatError(
                            f"malformed SWF line: {parsed}",
                            where=f"{path}:{lineno}",
                            fix="fix or delete the line, or drop --strict to skip and count malformed lines",
                        )
                    bad.append(lineno)
                else:
                    rows.append(parsed)
            if bad:
                skipped["malformed"] = len(bad)
                log.warning(
                    "%s: skipped %d malformed lines (first: %s)", path, len(bad), ", ".join(map(str, bad[:5]))
                )
            data = np.asarray(rows, dtype=np.float64).reshape(-1, N_FIELDS)
    else:
        data = np.zeros((0, N_FIELDS))
    trace = Trace(columns=_columns(data), header=_parse_header(comments), name=name, skipped=skipped)
    return trace


def write_swf(trace: Trace, path: str | Path) -> None:
    """Write ``trace`` as SWF (gzip if the name ends in .gz), header comments first."""
    path = Path(path)
    out = io.StringIO()
    for key, value in trace.header.items():
        out.write(f"; {key}: {value}\n")
    cols = [trace[f] for f in SWF_FIELDS]
    for k in range(len(trace)):
        out.write(" ".join(_fmt(c[k]) for c in cols))
        out.write("\n")
    data = out.getvalue().encode()
    if path.suffix == ".gz":
        data = gzip.compress(data)
    path.write_bytes(data)


def _fmt(value: float | int) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() else f"{value:.6g}"
