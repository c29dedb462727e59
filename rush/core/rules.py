"""The per-job rules of the core: false-small kills, runtime classes, reservation estimates,
and which kill ends a run (skip-with-limit is :mod:`rush.core.skip_with_limit`).

Each rule exists once, here. The simulator's event loop (compiled) and the core's live
entry point :func:`rush.core.schedule` both call these functions; the daemon only carries
out the decisions they produce.

False-small kill: a job predicted small, opted in as idempotent and requeued fewer than
``max_requeues`` times is killed once it has run for strictly longer than the class
divider, and requeued *as large* with its original submit time (:func:`requeue_as_large`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rush.core.reservations import is_speculative, requeue_after_kill, reservation_kill_due
from rush.core.skip_with_limit import should_skip  # noqa: F401  (the rule's old home)

SMALL = 0
LARGE = 1


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


@njit(cache=True, inline="always")
def runtime_class_of(predicted_class: int, requeues: int) -> int:
    """A job rush has requeued is large whatever a model predicts for it now."""
    return LARGE if requeues > 0 else predicted_class


@njit(cache=True, inline="always")
def effective_estimate(estimate: float, requested_time: float, killable: bool, divider: float) -> float:
    """Upper bound on a run's length used for reservations: walltime, and divider if killable."""
    e = estimate if estimate < requested_time else requested_time
    if killable and divider < e:
        e = divider
    return e


@njit(cache=True)
def job_rules(
    estimate: np.ndarray,
    requested_time: np.ndarray,
    predicted_class: np.ndarray,
    idempotent: np.ndarray,
    requeues: np.ndarray,
    kill_false_small: bool,
    max_requeues: int,
    divider: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per job: (runtime class, killable, reservation estimate), by the rules above.

    The live entry point's loop over a snapshot's jobs, compiled: one call, not three per job.
    """
    n = len(estimate)
    cls = np.empty(n, dtype=np.int64)
    killable = np.empty(n, dtype=np.bool_)
    est = np.empty(n, dtype=np.float64)
    for k in range(n):
        cls[k] = runtime_class_of(predicted_class[k], requeues[k])
        killable[k] = is_killable(kill_false_small, cls[k], idempotent[k], requeues[k], max_requeues)
        est[k] = effective_estimate(estimate[k], requested_time[k], killable[k], divider)
    return cls, killable, est


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


def time_limit(requested: float, default_limit: float | None, allocation_left: float | None) -> float:
    """The time limit the core plans a job with: its own request; a job submitted without
    one (<= 0) gets the site's default limit; without a default, what is left of the
    instance's own allocation (a Flux instance's expiration); else it is unlimited (inf)."""
    if requested > 0:
        return float(requested)
    if default_limit:
        return float(default_limit)
    if allocation_left is not None:
        return max(float(allocation_left), 0.0)
    return math.inf


def class_by_precedence(requeues: int, tagged: int | None, journaled: int, predicted: int) -> tuple[int, str]:
    """A job's runtime class and where it comes from, first that applies:

    1. ``requeued``: rush already requeued it (:func:`runtime_class_of`): large;
    2. ``tag``: a class written on the job (by rush at a requeue, or by an administrator);
    3. ``journal``: the class predicted at the first pass that saw it (features are read once,
       near submission, as in the offline walk-forward), ``journaled`` >= 0;
    4. ``model``: this pass's prediction (-1: unknown).
    """
    if requeues > 0:
        return runtime_class_of(predicted, requeues), "requeued"
    if tagged is not None:
        return tagged, "tag"
    if journaled >= 0:
        return journaled, "journal"
    return predicted, "model"
