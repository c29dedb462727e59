"""Argument types for the study scripts (sim/) and the benchmarks (benchmarks/), so that a bad
flag is refused by argparse (exit 2, the flag named, before any work) rather than met later as
a traceback: counts with their least value and a cap, comma lists of counts or names, shares and
positive numbers."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Sequence
from pathlib import Path

# A count above this is a typo (a benchmark of 10^12 jobs would exhaust memory before it
# printed anything): the largest measured sizes are 100 000 pending on 10 000 nodes.
MOST = 10_000_000


def count(least: int) -> Callable[[str], int]:
    """An argparse type: an integer of at least ``least`` and at most :data:`MOST`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{value} is below {least}, its least value")
        if value > MOST:
            raise argparse.ArgumentTypeError(f"{value} is above {MOST}, the most a count may be")
        return value

    parse.__name__ = f"count of at least {least}"  # argparse names the type in its messages
    return parse


def counts(least: int) -> Callable[[str], tuple[int, ...]]:
    """An argparse type: comma-separated counts, each of at least ``least`` (sizes to sweep)."""
    one = count(least)

    def parse(text: str) -> tuple[int, ...]:
        return tuple(one(part.strip()) for part in text.split(","))

    parse.__name__ = f"comma-separated counts of at least {least}"
    return parse


def names(allowed: Sequence[str] | None = None, sep: str = ",") -> Callable[[str], tuple[str, ...]]:
    """An argparse type: names separated by ``sep`` (blanks around them dropped), at least one,
    each one of ``allowed`` if given (a misspelt trace or mode must not run as some other one, or
    as none), in the order given."""

    def parse(text: str) -> tuple[str, ...]:
        found = tuple(part.strip() for part in text.split(sep) if part.strip())
        if not found:
            raise argparse.ArgumentTypeError("no name given")
        unknown = [name for name in found if allowed is not None and name not in allowed]
        if unknown:
            raise argparse.ArgumentTypeError(f"{unknown[0]!r} is not one of {', '.join(allowed or ())}")
        return found

    parse.__name__ = "comma-separated names" if sep == "," else f"names separated by {sep!r}"
    return parse


def fraction(text: str) -> float:
    """An argparse type: a share between 0 and 1."""
    value = _number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not a share between 0 and 1")
    return value


def positive_number(text: str) -> float:
    """An argparse type: a finite number above 0 (seconds, a rate)."""
    value = _number(text)
    if not value > 0.0:
        raise argparse.ArgumentTypeError(f"{value} is not above 0")
    return value


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def file_stem(text: str) -> str:
    """An argparse type: the stem of a results file (``results/<stem>.csv``): letters, digits,
    ``_`` and ``-``, so that it names a file in the results folder and no other path."""
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]*", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a file stem (letters, digits, _ and -)")
    return text


def trace_spec(text: str) -> str:
    """An argparse type: a trace as ``load_trace`` takes it (a catalogue name, a
    ``lublin[:JOBS[:PROCS[:SEED]]]`` spec or an existing file), checked without being fetched or
    read, for a study whose traces are not a fixed set."""
    from rush.errors import TraceNotFoundError
    from rush.workload.catalogue import is_local_file, lookup, parse_lublin_spec

    try:
        if parse_lublin_spec(text) is None and not is_local_file(text):
            lookup(text)
    except TraceNotFoundError as error:
        raise argparse.ArgumentTypeError(f"{error.message}; {error.fix}") from None
    return text


trace_spec.__name__ = "trace"


def trace_specs(text: str) -> tuple[str, ...]:
    """An argparse type: comma-separated traces, each a :func:`trace_spec`."""
    return tuple(trace_spec(name) for name in names()(text))


trace_specs.__name__ = "comma-separated traces"


def existing_file(text: str) -> str:
    """An argparse type: the path of a file that exists (runs or results to read), as given."""
    try:
        is_file = Path(text).is_file()
    except OSError:  # ENAMETOOLONG: Path.is_file answers False only for ENOENT-like errors
        is_file = False
    if not is_file:
        raise argparse.ArgumentTypeError(f"{text!r} is not a file")
    return text


def folder(text: str) -> Path:
    """An argparse type: a folder to read from and write to (the live windows' models), made
    if absent; a path that is something else is refused before any work."""
    path = Path(text)
    try:
        other = path.exists() and not path.is_dir()
    except OSError as exc:  # ENAMETOOLONG: a path that can never be made
        raise argparse.ArgumentTypeError(f"{text!r} cannot be a directory ({exc.strerror})") from None
    if other:
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    return path


def add_models_folder(parser: argparse.ArgumentParser) -> None:
    """The live recomputations' one shared flag: ``--models DIR``, the windows' live models
    (trained there when absent; a file given as the folder is refused, exit 2)."""
    parser.add_argument(
        "--models",
        required=True,
        type=folder,
        help="DIR with the windows' live models (trained there if absent)",
    )
