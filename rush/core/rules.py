"""The per-job rules of the core: skip-with-limit delays and false-small kills.

Each rule exists once, here. The simulator's event loop (compiled) and the core's live
entry point :func:`rush.core.schedule` both call these functions; the daemon only carries
out the decisions they produce.

Skip-with-limit (one semantics for the simulator and the daemon): in a scheduling pass, a
job that the pass *would start now* (in priority order, or by backfilling) and that the
variation predictor flags is skipped instead: not started and not reserved in this pass.
Each pass that skips it counts one skip; once it has been skipped ``skip_limit`` times it is
started like any other job. A flagged job that does not fit now is not skipped: it is
ordered, and reserved when it is the EASY head or gets a conservative reservation, like
any other job. (A live pass is one daemon cycle: the daemon holds the jobs the core skipped
in this cycle and releases the ones it no longer skips.)

False-small kill: a job predicted small, opted in as idempotent and requeued fewer than
``max_requeues`` times is killed once it has run for strictly longer than the class
divider, and requeued *as large* with its original submit time (:func:`requeue_as_large`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

SMALL = 0
LARGE = 1


@njit(cache=True, inline="always")
def should_skip(variable: bool, skips: int, skip_limit: int) -> bool:
    """Skip a job the pass would start now, when it is flagged and below the limit."""
    return variable and skips < skip_limit


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
    """A killable job is killed once it has run for strictly longer than the divider.

    The simulator knows a run's length and asks at the run's end (``now = start + length``);
    the daemon asks at each cycle. A run of exactly the divider ends without a kill.
    """
    return now - start > divider


@njit(cache=True, inline="always")
def kill_time(start: float, divider: float) -> float:
    """When a killable run that is due to be killed ends: at the divider."""
    return start + divider


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
