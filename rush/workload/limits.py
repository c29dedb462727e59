"""Bounds on the sizes and seeds a user can ask for, checked before any work starts.

The CLI flags and the ``lublin:JOBS:PROCS:SEED`` spec go through these, so a typo such as
``--jobs 1e12`` or ``--seed -1`` is a clear error naming the flag instead of a traceback, a
numpy error or hours of generation.
"""

from __future__ import annotations

from rush.errors import RushError

# Lublin jobs generated in-process: 10 million is ~1.5 GB of arrays, larger than any archive log.
MAX_SYNTH_JOBS = 10_000_000
# Processors of a machine: int32, far above the largest machine (about 10 million cores).
MAX_PROCS = 2**31 - 1
# Length of a resampled trace: 20 years of weeks.
MAX_WEEKS = 1040
# numpy's default_rng takes any non-negative integer; keep seeds printable and portable.
MAX_SEED = 2**64 - 1


def check_count(value: object, name: str, where: str, upper: int, example: str) -> int:
    """``value`` as an int in ``[1, upper]``, else a :class:`RushError` naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= upper:
        raise RushError(
            f"{name} must be an integer from 1 to {upper}, got {value!r}", where=where, fix=f"e.g. {example}"
        )
    return value


def check_seed(seed: object, where: str = "--seed") -> int:
    """A random seed: an integer in ``[0, 2**64 - 1]``."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise RushError(
            f"the seed must be an integer from 0 to 2**64-1, got {seed!r}", where=where, fix="e.g. --seed 1"
        )
    return seed
