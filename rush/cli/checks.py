"""Checks of command-line values made *before* any work starts.

A flag that would fail after a long simulation (an output path that is a directory, a
machine size numba cannot hold, a NaN) must fail at once, with the flag's name and the fix,
so that nothing is computed and then lost. Light imports only: this runs on every command.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from rush.errors import ConfigError
from rush.workload.limits import MAX_PROCS as MAX_MACHINE_PROCS


def positive_seconds(value: float, flag: str, example: str = "10") -> float:
    """A finite number of seconds > 0 (NaN and inf are not durations)."""
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(
            f"{flag} must be a finite number of seconds > 0, got {value!r}",
            where=flag,
            fix=f"e.g. {flag} {example}",
        )
    return value


def finite_seconds(value: float | None, flag: str, example: str = "0") -> float | None:
    """``None`` or a finite number of seconds >= 0."""
    if value is not None and (not math.isfinite(value) or value < 0):
        raise ConfigError(
            f"{flag} must be a finite number of seconds >= 0, got {value!r}",
            where=flag,
            fix=f"e.g. {flag} {example}, or leave it out for the default",
        )
    return value


def machine_procs(value: int | None, flag: str = "--procs") -> int | None:
    """``None`` (from the trace) or 1 .. MAX_MACHINE_PROCS processors."""
    if value is not None and not 1 <= value <= MAX_MACHINE_PROCS:
        raise ConfigError(
            f"{flag} must be between 1 and {MAX_MACHINE_PROCS} processors, got {value}",
            where=flag,
            fix=f"give the machine's processor count, e.g. {flag} 128, or leave it out to use the trace's",
        )
    return value


def stat_answers(path: Path, flag: str) -> None:
    """Refuse a path no file can have (a name over NAME_MAX, a path over PATH_MAX): stat() fails
    with ENAMETOOLONG, which Path.is_dir/exists raise instead of answering False."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:
        raise ConfigError(
            f"{flag} {str(path)[:80]}...: {exc.strerror}", where=flag, fix="give a shorter path"
        ) from None


def _nearest_existing(path: Path) -> Path:
    for parent in (path, *path.parents):
        if os.path.lexists(parent):
            return parent
    return Path(".")


def output_file(path: Path | None, flag: str) -> Path | None:
    """``path`` can be written as a file: not a directory, in a writable directory."""
    if path is None:
        return None
    stat_answers(path, flag)
    if path.is_dir():
        raise ConfigError(
            f"{flag} {path} is a directory",
            where=flag,
            fix=f"give a file name, e.g. {flag} {path / 'jobs.csv'}",
        )
    if path.exists() and not path.is_file():
        raise ConfigError(
            f"{flag} {path} is not a regular file (a device or FIFO)",
            where=flag,
            fix="give a regular file (outputs are written whole, by renaming a temporary file), or leave the flag out",
        )
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"{flag} {path} is not writable", where=flag, fix="choose a writable file")
    parent = path.parent
    if not parent.is_dir():
        raise ConfigError(
            f"the directory of {flag} {path} "
            + ("is not a directory" if os.path.lexists(parent) else "does not exist"),
            where=flag,
            fix=f"create {parent} first, or write somewhere else",
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(
            f"cannot create files in {parent}", where=flag, fix="choose a directory you can write to"
        )
    return path


def output_dir(path: Path | None, flag: str) -> Path | None:
    """``path`` is a writable directory, or can be created (its nearest existing ancestor is one)."""
    if path is None:
        return None
    stat_answers(path, flag)
    base = _nearest_existing(path)
    if not base.is_dir():
        raise ConfigError(
            f"{flag} {path}: {base} is not a directory",
            where=flag,
            fix="give a directory path (it is created if missing)",
        )
    if not os.access(base, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{flag} {path}: {base} is not writable", where=flag, fix="choose a writable directory"
        )
    return path


def not_the_input(path: Path | None, source: Path, flag: str) -> None:
    """An output must not replace the file being read (the trace would be lost)."""
    if path is not None and path.exists() and source.exists() and path.resolve() == source.resolve():
        raise ConfigError(
            f"{flag} {path} is the input trace itself", where=flag, fix="write the output to another file"
        )
