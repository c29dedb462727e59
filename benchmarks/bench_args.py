"""Argument types shared by the benchmarks, so that a bad flag is refused by argparse (exit 2,
the flag named) before any work, not met later as a traceback: counts with their least value,
and the source trees the A/B benchmarks load."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Sequence

# A count above this is a typo (a benchmark of 10^12 jobs would exhaust memory before it
# printed anything): the largest measured sizes are 100 000 pending on 10 000 nodes.
MOST = 10_000_000
SHELLS = ("flux-module", "daemon")
BACKFILL_MODES = ("easy", "conservative", "none")


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
            raise argparse.ArgumentTypeError(f"{value} is above {MOST}, the most a benchmark takes")
        return value

    parse.__name__ = f"count of at least {least}"  # argparse names the type in its messages
    return parse


# Sizes and repetitions (pending jobs, nodes, rounds, cycles) need one; changes between cycles
# (jobs ended or arrived, actions) may be none.
positive = count(1)
non_negative = count(0)


def counts(least: int) -> Callable[[str], tuple[int, ...]]:
    """An argparse type: comma-separated counts, each of at least ``least`` (sizes to sweep)."""
    one = count(least)

    def parse(text: str) -> tuple[int, ...]:
        return tuple(one(part.strip()) for part in text.split(","))

    parse.__name__ = f"comma-separated counts of at least {least}"
    return parse


def names(allowed: Sequence[str] | None = None) -> Callable[[str], tuple[str, ...]]:
    """An argparse type: comma-separated names, at least one, each one of ``allowed`` if given
    (a misspelt shell or mode must not run as some other one)."""

    def parse(text: str) -> tuple[str, ...]:
        found = tuple(part.strip() for part in text.split(",") if part.strip())
        if not found:
            raise argparse.ArgumentTypeError("no name given")
        unknown = [name for name in found if allowed is not None and name not in allowed]
        if unknown:
            raise argparse.ArgumentTypeError(f"{unknown[0]!r} is not one of {', '.join(allowed or ())}")
        return found

    parse.__name__ = "comma-separated names"
    return parse


def source_tree(text: str) -> str:
    """An argparse type: a checkout of rush (a directory with ``rush/__init__.py`` and
    ``benchmarks/``), as the A/B benchmarks load two of them."""
    if not os.path.isfile(os.path.join(text, "rush", "__init__.py")) or not os.path.isdir(
        os.path.join(text, "benchmarks")
    ):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a rush checkout (no rush/__init__.py and benchmarks/)"
        )
    return text


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
