"""The two per-job rules of the core: skip-with-limit delays and false-small kills.

Both the simulator and the daemon decide through these functions (compiled, so the
simulator's event loop can call them too).
"""

from __future__ import annotations

from numba import njit

SMALL = 0


@njit(cache=True, inline="always")
def should_skip(variable: bool, skips: int, skip_limit: int) -> bool:
    """Delay a job predicted to suffer variability, at most ``skip_limit`` times."""
    return variable and skips < skip_limit


@njit(cache=True, inline="always")
def is_killable(
    kill_false_small: bool,
    runtime_class: int,
    idempotent: bool,
    requeues: int,
    max_requeues: int,
) -> bool:
    """An opted-in job predicted small may be killed at the divider, and requeued as large."""
    return kill_false_small and runtime_class == SMALL and idempotent and requeues < max_requeues


@njit(cache=True, inline="always")
def kill_due(start: float, now: float, divider: float) -> bool:
    """A killable job is killed once it has run for longer than the divider."""
    return now - start >= divider


@njit(cache=True, inline="always")
def effective_estimate(estimate: float, requested_time: float, killable: bool, divider: float) -> float:
    """Upper bound on a run's length used for reservations: walltime, and divider if killable."""
    e = estimate if estimate < requested_time else requested_time
    if killable and divider < e:
        e = divider
    return e
