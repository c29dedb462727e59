"""A binary cache of parsed SWF files: a replay loads arrays instead of parsing text.

Reading SDSC-SP2 (1.2 MB of gzip) cost a replay about 0.2 s of CPU: gunzip, the compiled
parse, and loading the parser's kernel from numba's cache. :func:`store` keeps the parser's
output (the number arrays, the header, the malformed lines) in one file under
``$RUSH_CACHE_DIR/parsed-swf`` (default ``~/.cache/rush/parsed-swf``, beside numba's cache and
never in the checkout), named by the sha256 of the trace file's bytes as stored (gzip
included) and a digest of the parser's sources (an entry of the same trace from another
parser version is removed then). :func:`load` uses an entry only if the file
hash, the parser digest, the format, the array shapes and a CRC of the arrays all match what
the entry records; anything else (an edited trace, a changed parser, a torn or corrupt entry)
is a miss: the caller parses the file and the entry is written again.

Files smaller than :data:`MIN_CACHED_BYTES` on disk are parsed every time (so warm-up's and
the tests' small traces neither skip the parser nor fill the user's cache).
``RUSH_PARSE_CACHE=0`` turns the cache off, ``1`` (or unset, or empty) leaves it on; any other
value is a configuration error naming the variable (exit 2), not a guess. A cache directory
that cannot be read or written (read-only, a file in its place, not ours) is not an error:
the file is parsed and the replay goes on, as it does when an entry is not a regular file (a
FIFO or a device there is never opened for reading, so it cannot hang or flood a read).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rush.errors import ConfigError

FORMAT = b"rush-parsed-swf 1\n"
MIN_CACHED_BYTES = 64 * 1024
# The modules whose code decides what the parser returns: any edit to them is a new digest.
PARSER_SOURCES = ("swf.py", "swf_fast.py", "trace_file.py", "model.py")


@dataclass
class ParsedSWF:
    """What parsing an SWF file gives, before it becomes a trace (see ``rush.workload.swf``)."""

    ints: np.ndarray  # int fields, (n_int, rows)
    floats: np.ndarray  # float fields, (n_float, rows)
    n_bad: int
    malformed_lines: list[int]
    header: dict[str, str]
    header_lines: dict[str, int]
    text_bytes: int  # length of the decompressed text (RUSH_MAX_TRACE_BYTES applies to it)
    meta: dict = field(default_factory=dict)


def enabled(stored: bytes) -> bool:
    """Whether a file of these bytes goes through the cache (``RUSH_PARSE_CACHE`` checked first,
    whatever the size, so that a wrong value is seen on any trace)."""
    return switched_on() and len(stored) >= MIN_CACHED_BYTES


def switched_on() -> bool:
    """``$RUSH_PARSE_CACHE``: 0 off, 1 or unset or empty on; ConfigError otherwise."""
    raw = os.environ.get("RUSH_PARSE_CACHE", "")
    if raw not in ("", "0", "1"):
        raise ConfigError(
            f"RUSH_PARSE_CACHE must be 0 or 1, got {raw[:40]!r}",
            where="RUSH_PARSE_CACHE",
            fix="set RUSH_PARSE_CACHE=0 to parse traces every time, 1 (or unset it) to cache parsed traces",
        )
    return raw != "0"


def cache_dir() -> Path:
    """``$RUSH_CACHE_DIR/parsed-swf``, else ``$XDG_CACHE_HOME/rush/parsed-swf`` or ``~/.cache/rush/...``."""
    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.environ.get("RUSH_CACHE_DIR") or os.path.join(cache_home, "rush")) / "parsed-swf"


_digest: str | None = None


def parser_digest() -> str:
    """sha256 over the parser's sources (once per process)."""
    global _digest
    if _digest is None:
        here = Path(__file__).resolve().parent
        digest = hashlib.sha256(FORMAT)
        for name in PARSER_SOURCES:
            digest.update(name.encode() + b"\0" + (here / name).read_bytes())
        _digest = digest.hexdigest()[:16]
    return _digest


def entry_path(file_sha256: str) -> Path:
    return cache_dir() / f"{file_sha256}-{parser_digest()}.npy"


def _crc(ints: np.ndarray, floats: np.ndarray) -> int:
    return zlib.crc32(memoryview(floats).cast("B"), zlib.crc32(memoryview(ints).cast("B")))


def load(file_sha256: str) -> ParsedSWF | None:
    """The cached parse of the file with this sha256, or None (absent, stale or damaged)."""
    path = entry_path(file_sha256)
    try:
        # Non-blocking: a FIFO in an entry's place must not wait for a writer; then only a
        # regular file is read (a device such as /dev/zero would never end).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with open(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode) or fh.readline(len(FORMAT)) != FORMAT:
                return None
            meta = json.loads(fh.readline())
            ints = np.load(fh, allow_pickle=False)
            floats = np.load(fh, allow_pickle=False)
    except (OSError, ValueError, EOFError):  # absent, torn or not ours (json's errors are ValueErrors)
        return None
    expected = (meta.get("file_sha256"), meta.get("parser"), meta.get("ints_shape"), meta.get("floats_shape"))
    if expected != (file_sha256, parser_digest(), list(ints.shape), list(floats.shape)):
        return None
    if ints.dtype != np.int64 or floats.dtype != np.float64 or meta.get("crc32") != _crc(ints, floats):
        return None
    return ParsedSWF(
        ints=ints,
        floats=floats,
        n_bad=int(meta["n_bad"]),
        malformed_lines=list(meta["malformed_lines"]),
        header=dict(meta["header"]),
        header_lines=dict(meta["header_lines"]),
        text_bytes=int(meta["text_bytes"]),
        meta=meta,
    )


def store(file_sha256: str, parsed: ParsedSWF) -> Path | None:
    """Write the entry (beside it, then renamed: readers never see half of one); None if it cannot."""
    ints, floats = np.ascontiguousarray(parsed.ints), np.ascontiguousarray(parsed.floats)
    meta = {
        "file_sha256": file_sha256,
        "parser": parser_digest(),
        "ints_shape": list(ints.shape),
        "floats_shape": list(floats.shape),
        "crc32": _crc(ints, floats),
        "n_bad": parsed.n_bad,
        "malformed_lines": parsed.malformed_lines,
        "header": parsed.header,
        "header_lines": parsed.header_lines,
        "text_bytes": parsed.text_bytes,
    }
    path = entry_path(file_sha256)
    partial = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(partial, "wb") as fh:
            fh.write(FORMAT)
            fh.write(json.dumps(meta).encode() + b"\n")
            np.save(fh, ints, allow_pickle=False)
            np.save(fh, floats, allow_pickle=False)
        # Not rush.output_file.replace_file: this is rush's own cache directory, and an entry
        # there that is not a regular file (a FIFO) is replaced by a good one (the cache heals).
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        return None
    # The same trace parsed by another version of the parser: stale (keeps one entry per trace).
    for stale in path.parent.glob(f"{file_sha256}-*.npy"):
        if stale != path:
            with contextlib.suppress(OSError):
                stale.unlink()
    return path
