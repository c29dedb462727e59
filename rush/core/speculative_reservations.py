"""Speculative reservations: the rules for a stochastic job run under a sequence t1 < t2 < ...

An opted-in job carries a reservation sequence (its ``count`` > 0); its attempt ``k`` (0-based)
runs with the time limit ``t_{k+1}`` instead of the user's walltime. A run that would go
strictly beyond its limit is killed there (the RJMS enforces the limit) and its work is lost.
If the sequence has a further reservation the job is requeued with its original submit time
and the next limit; after the last one the kill is final, like a walltime kill. A run of
exactly its limit ends normally. Jobs with ``count`` = 0 keep their walltime.

How the sequences are chosen (from a job's history) is :mod:`rush.models.speculative.strategy`'s
business; these rules only say what happens at a limit, once, for every shell.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, inline="always")
def is_speculative(count: int) -> bool:
    """A job runs under a reservation sequence when it has one."""
    return count > 0


@njit(cache=True, inline="always")
def run_limit(sequence: np.ndarray, count: int, attempt: int, walltime: float) -> float:
    """Time limit of the job's attempt: its reservation, or the walltime if it has none."""
    if count <= 0:
        return walltime
    if attempt < count:
        return sequence[attempt]
    return sequence[count - 1]


@njit(cache=True, inline="always")
def reservation_kill_due(length: float, limit: float) -> bool:
    """A run is killed at its limit when it would last strictly longer than the limit."""
    return length > limit


@njit(cache=True, inline="always")
def requeue_after_kill(attempt: int, count: int) -> bool:
    """After a kill at reservation ``attempt``, the job is resubmitted if a further one exists."""
    return attempt + 1 < count


@njit(cache=True, inline="always")
def next_attempt(attempt: int) -> int:
    """The attempt (index into the sequence) of the resubmitted job."""
    return attempt + 1
