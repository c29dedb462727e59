"""The per-job rules of the core that are neither kills nor classes: the estimate a
reservation is planned with, the time limit a job is planned with, and the compiled loop
that applies the class, kill and estimate rules to every job of a live snapshot.

Runtime classes are :mod:`rush.core.runtime_classes`, false-small kills (and which kill ends
a run) :mod:`rush.core.false_small_kill`, speculative reservations
:mod:`rush.core.speculative_reservations`, skip-with-limit :mod:`rush.core.skip_with_limit`.
Each rule exists once; the simulator's event loop and the live pass both call them.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rush.core.false_small_kill import is_killable
from rush.core.runtime_classes import runtime_class_of


@njit(cache=True, inline="always")
def effective_estimate(estimate: float, requested_time: float, killable: bool, divider: float) -> float:
    """Upper bound on a run's length used for reservations: walltime, and divider if killable."""
    e = estimate if estimate < requested_time else requested_time
    if killable and divider < e:
        e = divider
    return e


@njit(cache=True, inline="always")
def limit_estimate(limit: float, killable: bool, divider: float) -> float:
    """A run's length at the latest (a starved head is reserved on it, rush.core.starved_head):
    its time limit, and the divider if killable (it is killed there)."""
    return effective_estimate(limit, limit, killable, divider)


@njit(cache=True)
def limit_estimates(limit: np.ndarray, killable: np.ndarray, divider: float) -> np.ndarray:
    """:func:`limit_estimate` for every job (the live pass)."""
    out = np.empty(len(limit), dtype=np.float64)
    for k in range(len(limit)):
        out[k] = limit_estimate(limit[k], killable[k], divider)
    return out


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
