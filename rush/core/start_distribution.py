"""Rule M (issue 29, round 31; sim/runtime_predictions/estimates/dev_log.md): a job's start
estimate as the median of its start over sampled scenarios, not its start in one scenario of
point lengths.

Rule L2 projects one scenario (each running job ends at its conditional median, each queued job
runs one length) and reads each job's start off it: the start of the medians. Under absolute
error the best point estimate is the median of the start's distribution, and a job that waits
behind many ends needs a high order statistic of them, which the k-th of their medians places
early. Here each of ``scenarios`` scenarios draws every job's length from its predicted
distribution by inverse CDF (the knots of :func:`rush.core.remaining_runtime.quantile_knots`,
closed at the request): a running job that has run ``e`` ends at Q(F(e) + u (1 - F(e))), a queued
job runs Q(u), u its level in that scenario. The caller projects each scenario (the same
projection as L2); :func:`median_of_starts` reads each job's estimate off them.

The levels are a Latin hypercube per job (each job's ``scenarios`` levels fall one in each of as
many equal strata, in a random order; jobs independent), drawn by numba's generator seeded from
the snapshot's time (:func:`scenario_seed`): no I/O, no state kept between calls, one snapshot's
estimates reproducible.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rush.core.remaining_runtime import conditional_quantile_runtime

# How many scenarios rule M projects (fixed before its run, round 31).
SCENARIOS = 32
_SEED_MODULUS = 2**31


@njit(cache=True)
def scenario_seed(now: float) -> int:
    """The levels' seed for a snapshot taken at ``now`` (seconds): floor(now) mod 2^31 (0 when
    ``now`` is not finite)."""
    if not np.isfinite(now):
        return 0
    return int(np.floor(now)) % _SEED_MODULUS


@njit(cache=True)
def scenario_levels(seed: int, scenarios: int, jobs: int) -> np.ndarray:
    """(scenarios, jobs) levels in (0, 1): column j holds (pi_j(s) + v_js) / scenarios, pi_j a
    random permutation of 0..scenarios-1 and v_js uniform on [0, 1), from numba's generator
    seeded with ``seed`` (so the same seed gives the same levels)."""
    np.random.seed(seed)
    out = np.empty((max(scenarios, 0), max(jobs, 0)))
    for j in range(out.shape[1]):
        perm = np.random.permutation(out.shape[0])
        for s in range(out.shape[0]):
            u = (perm[s] + np.random.random()) / out.shape[0]
            out[s, j] = min(max(u, 1e-12), 1.0 - 1e-12)
    return out


@njit(cache=True)
def sampled_runtime(xs: np.ndarray, ps: np.ndarray, elapsed: float, level: float, cap: float) -> float:
    """One draw of a job's runtime (seconds) at ``level`` of its distribution above what it has
    run (``elapsed``; 0 for a queued job): Q(F(e) + level (1 - F(e))) of its knots ``xs`` at
    levels ``ps``, between the elapsed time and the request (the elapsed time past it), never
    above ``cap`` unless the job has already run longer (inf: no cap)."""
    value = conditional_quantile_runtime(xs, ps, elapsed, level)
    return max(min(value, cap), max(elapsed, 0.0) if np.isfinite(elapsed) else 0.0)


@njit(cache=True)
def median_of_starts(starts: np.ndarray) -> np.ndarray:
    """Each job's estimate from its projected starts (scenarios, jobs): the median over the
    scenarios (an even count: the mean of the two middle ones; inf where most scenarios never
    start it)."""
    s, n = starts.shape
    out = np.empty(n)
    for j in range(n):
        col = np.sort(starts[:, j])
        if s == 0:
            out[j] = np.inf
        elif s % 2:
            out[j] = col[s // 2]
        else:  # a start is never -inf, so the mean of the two is inf exactly when the upper one is
            out[j] = 0.5 * (col[s // 2 - 1] + col[s // 2])
    return out
