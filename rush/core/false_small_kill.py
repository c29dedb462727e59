"""False-small kills: a job predicted small that outruns the class divider.

A job predicted small, opted in as idempotent and requeued fewer than ``max_requeues`` times
is killed once it has run for strictly longer than the class divider, and requeued *as
large* with its original submit time (:func:`requeue_as_large`). Which kill ends a run when
a speculative reservation's limit comes too is :func:`run_outcome`.

The simulator's event loop (compiled) and the live pass both call these functions; the
daemon only carries out the kills they decide.
"""

from __future__ import annotations

from numba import njit

from rush.core.runtime_classes import LARGE, SMALL
from rush.core.speculative_reservations import is_speculative, requeue_after_kill, reservation_kill_due


@njit(cache=True, inline="always")
def kills_if_small(kill_false_small: bool, idempotent: bool) -> bool:
    """Whether a job called small would be killed at the divider if it outran it (and then
    requeued as large). The runtime classifier judges such jobs at its idempotent threshold:
    a false "small" costs them that kill, not a large job in the small queue."""
    return kill_false_small and idempotent


@njit(cache=True, inline="always")
def is_killable(
    kill_false_small: bool,
    runtime_class: int,
    idempotent: bool,
    requeues: int,
    max_requeues: int,
) -> bool:
    """An opted-in job predicted small may be killed at the divider, and requeued as large."""
    return kills_if_small(kill_false_small, idempotent) and runtime_class == SMALL and requeues < max_requeues


@njit(cache=True, inline="always")
def kill_due(start: float, now: float, divider: float) -> bool:
    """A killable job *still running at* ``now`` is killed once it has run for the divider.

    Asked of running jobs after the completions at ``now`` (live: at each pass; the job is
    still running, so it has run for at least ``now - start``). A run of exactly the divider
    completes first and is not killed: :func:`run_outcome` asks the same question of a run
    whose length the simulator knows (``length > divider``). Compared as ``start + divider``,
    the kill time the simulator computes (``now - start`` can round just below the divider).
    """
    return now >= start + divider


@njit(cache=True, inline="always")
def requeue_as_large(requeues: int) -> tuple[int, int]:
    """(runtime class, requeue count) of a job after a false-small kill: large, one more requeue."""
    return LARGE, requeues + 1


# How a run ends (the simulator knows its length; the live shells see the same outcomes).
RUN_COMPLETES = 0
RUN_FINAL_KILL = 1  # killed at its walltime or its last speculative reservation
RUN_RESERVATION_REQUEUE = 2  # killed at a speculative reservation with a successor
RUN_DIVIDER_REQUEUE = 3  # false-small kill at the divider, requeued as large


@njit(cache=True, inline="always")
def run_outcome(
    length: float, limit: float, attempt: int, reservation_count: int, killable: bool, divider: float
) -> tuple[float, int]:
    """(length actually run, outcome) of a run started now that would last ``length``.

    Whichever comes first ends the run: its time limit ``limit`` (walltime or current
    speculative reservation, enforced by the RJMS) or, for a killable job, the divider
    (rush's false-small kill). At equal times the limit wins (the RJMS ends the run there first), as before.
    """
    outcome = RUN_COMPLETES
    if reservation_kill_due(length, limit):
        length = limit
        if is_speculative(reservation_count) and requeue_after_kill(attempt, reservation_count):
            outcome = RUN_RESERVATION_REQUEUE
        else:
            outcome = RUN_FINAL_KILL
    # Still running at start + divider (completions at that instant come first): killed.
    if killable and length > divider:
        return divider, RUN_DIVIDER_REQUEUE
    return length, outcome
