"""Absolute priority values for the RJMS (Slurm's SiteFactor, Flux's priority).

The core orders pending jobs by ``(group, key, index)`` (see :mod:`rush.core.ordering`). A
live RJMS needs one integer per job whose order is that order. Ranks (``n - rank``) have it,
but one arrival renumbers every job below it, so each cycle would rewrite the whole queue.
Here a job's value depends on its own group and key only:

    value = 1 + BAND * band(group) + (BAND - 1 - level(key))

* ``band``: 2 for starved jobs (group 0), 1 for group 1 (all jobs, or predicted-small ones
  with runtime classes), 0 for predicted-large ones (group 2). Bands never overlap, so a
  starved job is always above every other.
* ``level``: the key rounded to ``float32`` and mapped to its order-preserving 32-bit
  pattern, keeping the top 29 bits: monotone in the key, with a relative resolution of
  2**-21 (about 5e-7) over the whole float range. FCFS, LCFS and starved jobs use
  ``submit - time_origin`` as the key (same order, finer resolution).
* values lie in [1, 3 * 2**29] (below 2**31: a signed 32-bit SiteFactor holds them).

Smaller key -> larger value, so sorting by value (descending) never inverts the core's order;
two jobs whose keys agree to about 5e-7 (relative) share a value, and the RJMS orders them by
its own tie-break (Slurm: job id, i.e. submit order; the core's tie-break is submit, job id).

When does a value change? Static policies (FCFS, SPF, SQF, SAF, SRF, F1-F4, LIN, LINEAR
without wait terms): never, after submit, except when the job starves (it moves to band 2
once) or its runtime class changes. Time-dependent policies (SEXP, LEXP, WFP3, UNICEF,
LINEAR with wait or expansion weights): when the job's wait crosses a point of the grid
0, Q, 2Q, 4Q, ... (``CoreConfig.wait_quantum`` = Q; the daemon's default is 60 s), since the
core's live order computes their keys from that rounded wait.
"""

from __future__ import annotations

import numpy as np

LEVEL_BITS = 29
BAND = 1 << LEVEL_BITS
MAX_VALUE = 3 * BAND
# The lowest value ``priority_values`` gives (band 0, the largest key). A job the core reads as
# infeasible here is left out of the pass but released to the RJMS at this value (before
# ``scaled``), below or tied with every job rush ranks: the RJMS then starts it if rush misread
# its request, or refuses it (rush.core.schedule).
LOWEST_VALUE = 1
_BAND_OF_GROUP = np.array([2, 1, 0], dtype=np.int64)
_SIGN = np.uint32(0x80000000)
# Keys of these policies are submit times (FCFS: submit; LCFS: -submit).
_FCFS, _LCFS = 0, 1


def key_levels(key: np.ndarray) -> np.ndarray:
    """Order-preserving 29-bit levels of float keys (non-decreasing in the key)."""
    with np.errstate(over="ignore", invalid="ignore"):
        k32 = np.asarray(key, dtype=np.float64).astype(np.float32)
    k32 = k32 + np.float32(0.0)  # -0.0 and 0.0 are one key
    bits = k32.view(np.uint32)
    negative = (bits & _SIGN) != 0
    ordered = np.where(negative, ~bits, bits | _SIGN)
    return (ordered >> np.uint32(32 - LEVEL_BITS)).astype(np.int64)


def priority_values(group: np.ndarray, key: np.ndarray, policy_code: int, time_origin: float) -> np.ndarray:
    """One value per job from its ordering ``group`` (0, 1, 2) and ``key``; larger runs first."""
    group = np.asarray(group, dtype=np.int64)
    key = np.asarray(key, dtype=np.float64)
    shifted = key.copy()
    if policy_code == _FCFS:
        shifted = key - time_origin
    elif policy_code == _LCFS:
        shifted = key + time_origin
    starved = group == 0
    # Starved jobs go FCFS among themselves: their key is the submit time.
    shifted[starved] = key[starved] - time_origin
    within = (BAND - 1) - key_levels(shifted)
    return 1 + BAND * _BAND_OF_GROUP[group] + within


def scaled(values: np.ndarray, priority_weight: int | None) -> np.ndarray:
    """Values mapped into [1, priority_weight] (monotone: the order is kept, near ties merge),
    for a site that weighs rush's order beside its own factors; None: unchanged.

    Affine, ``1 + (v - 1) * (w - 1) // (MAX_VALUE - 1)``: the lowest value stays 1 (so a job
    released at ``LOWEST_VALUE`` is still the lowest) and ``MAX_VALUE`` becomes ``w``. Never 0,
    which several shells read as something other than "lowest": Flux's job-manager holds a
    job of priority 0 (it never reaches the scheduler), and rush's jobtap plugin in
    ``combine = "replace"`` mode takes the value as the job's priority; Slurm reserves a total
    priority of 0 for held jobs. A weight of 1 gives every job 1: rush then adds nothing that
    tells jobs apart.
    """
    if priority_weight is None:
        return values
    v = np.asarray(values, dtype=np.int64)
    # Exact in integers: (v - 1) * (w - 1) < 2**31 * 2**31 fits int64.
    return 1 + ((v - 1) * np.int64(priority_weight - 1)) // np.int64(MAX_VALUE - 1)
