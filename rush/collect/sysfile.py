"""Reading the small text files of sysfs, procfs and debugfs without trusting them.

A counter file is a few bytes; what sits at its path may not be: a FIFO (``open`` and ``read``
block the collector forever), a device such as ``/dev/zero`` (endless), a huge file, or bytes
that are not UTF-8. :func:`read_small_text` opens without blocking, refuses anything but a
regular file, reads at most ``limit`` bytes and replaces undecodable bytes, so one bad file
costs a warning, never a hang, a traceback or the collector's memory.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rush.errors import CollectorError

SMALL_FILE_LIMIT = 1 << 20  # llite stats are a few KiB; a counter is a number


def _open_nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK)  # a FIFO without a writer must not block


def read_small_text(path: Path | str, limit: int = SMALL_FILE_LIMIT) -> str:
    """The text of ``path``; OSError as ``open`` raises it, CollectorError for a non-regular
    or over-long file (both name the path)."""
    with open(path, "rb", opener=_open_nonblocking) as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise CollectorError(
                "not a regular file (a FIFO, device or directory)",
                where=str(path),
                fix="point the collector at the kernel's counter files",
            )
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise CollectorError(
            f"longer than {limit} bytes: not a counter or stats file",
            where=str(path),
            fix="point the collector at the kernel's counter files",
        )
    return data.decode("utf-8", "replace")
