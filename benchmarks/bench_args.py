"""Argument types of the benchmarks, so that a bad flag is refused by argparse (exit 2, the flag
named) before any work, not met later as a traceback: the general ones (counts with their least
value and cap, lists, shares, positive numbers) are `rush/studies/arg_types.py`'s, shared with the
study scripts; here the benchmarks' own: the least counts they take, their shells and backfill
modes, and the source trees the A/B benchmarks load."""

from __future__ import annotations

import argparse
import os

from rush.studies.arg_types import MOST, count, counts, fraction, names, positive_number

__all__ = [
    "BACKFILL_MODES",
    "MOST",
    "SHELLS",
    "count",
    "counts",
    "fraction",
    "names",
    "non_negative",
    "positive",
    "positive_number",
    "source_tree",
]

SHELLS = ("flux-module", "daemon")
BACKFILL_MODES = ("easy", "conservative", "none")

# Sizes and repetitions (pending jobs, nodes, rounds, cycles) need one; changes between cycles
# (jobs ended or arrived, actions) may be none.
positive = count(1)
non_negative = count(0)


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
