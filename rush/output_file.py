"""Outputs written whole: a temporary file beside the output, then renamed over it (foundation
layer). The rename replaces whatever the name held, and run as root a device node such as
/dev/zero went with it (issue 31's fuzzing, round 31): :func:`replace_file` is the one rename
every writer uses, and it never replaces what is not a regular file."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from rush.errors import OutputError, RushError


def check_output(path: str | Path, error: type[RushError] = OutputError, where: str | None = None) -> None:
    """Raise ``error`` (naming ``where``, by default the path) when ``path`` exists and is not a
    regular file (a device, FIFO, socket or directory); an absent path, or one stat cannot
    answer for, passes (the write itself then names its error). A writer calls it before its
    work, so that nothing is computed for an output it cannot write."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return
    if not stat.S_ISREG(mode):
        raise error(
            "exists and is not a regular file (a device, FIFO, socket or directory); rush "
            "replaces its outputs whole and will not replace it",
            where=where or str(path),
            fix="give the path of a file to write",
        )


def replace_file(temporary: str | Path, path: str | Path) -> None:
    """Rename the written ``temporary`` over ``path`` (atomically: readers never see half a
    file), after :func:`check_output`; when refused the temporary is removed."""
    try:
        check_output(path)
    except OutputError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    os.replace(temporary, path)
