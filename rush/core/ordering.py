"""Queue ordering: the RJMS's priority (when given), starvation, runtime class, the policy key.

The order of a pending job is the tuple ``(group, key, index)``, ascending:

* ``group`` 0: the job has waited strictly more than the starvation threshold T; these go
  ahead of all others, FCFS among them (``key`` = submit);
* otherwise ``group`` 1, or with runtime classes 1 for predicted-small and 2 for
  predicted-large (unknown counts as large), and ``key`` = the policy's priority key;
* ``index`` is the job's position in (submit, job_id) order, so ties go to the earlier
  submit, then the smaller id.

With a primary order (``OrderPolicy.primary``: each job's rank by the RJMS's priority, 0 for
the highest; rush as Flux's scheduler) ``group`` also carries it, ``PRIMARY_STRIDE * rank``
added, so the RJMS's priority decides first and the rules above decide among equal
priorities; :func:`policy_group` takes it off again.

Queues are kept sorted between passes and only re-sorted where they changed, so the
common case (a few arrivals appended) costs an insertion, not a full sort.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rush.core.names import LINEAR_FEATURES, POLICY_CODES
from rush.core.pass_data import OrderPolicy, PassConfig, PassJobs
from rush.core.policies import priority_key, quantised_wait

LINEAR_CODE = POLICY_CODES["LINEAR"]
FAIRSHARE_TERM = LINEAR_FEATURES.index("fairshare")

SMALL = 0
LARGE = 1
# Groups 0, 1, 2 fit under it: group = PRIMARY_STRIDE * primary rank + policy group.
PRIMARY_STRIDE = 4


def policy_group(group: np.ndarray) -> np.ndarray:
    """The starvation/runtime-class group (0, 1, 2) of encoded groups."""
    return np.asarray(group, dtype=np.int64) % PRIMARY_STRIDE


@njit(cache=True, inline="always")
def _before(g1: int, k1: float, i1: int, g2: int, k2: float, i2: int) -> bool:
    if g1 != g2:
        return g1 < g2
    if k1 != k2:
        return k1 < k2
    return i1 < i2


@njit(cache=True)
def compute_order_keys(
    queue: np.ndarray,
    qn: int,
    now: float,
    policy: OrderPolicy,
    config: PassConfig,
    jobs: PassJobs,
    group: np.ndarray,
    key: np.ndarray,
) -> None:
    """Fill ``group[:qn]`` and ``key[:qn]`` for the jobs ``queue[:qn]`` under ``policy``.

    ``config.threshold < 0``: no starvation threshold. ``config.wait_quantum > 0``:
    time-dependent policies see each job's wait rounded down to the geometric grid of
    :func:`rush.core.policies.quantised_wait`; the starvation test always uses the exact wait.
    """
    threshold = config.threshold
    submit = jobs.submit
    ranked = policy.primary.shape[0] > 0
    for k in range(qn):
        j = queue[k]
        first = PRIMARY_STRIDE * policy.primary[j] if ranked else 0
        if threshold >= 0.0 and now - submit[j] > threshold:
            group[k] = first
            key[k] = submit[j]
            continue
        g = 1
        if config.use_classes and jobs.runtime_class[j] != SMALL:
            g = 2
        group[k] = first + g
        if policy.use_static:
            key[k] = policy.static_key[j]
        else:
            seen = now
            if config.wait_quantum > 0.0:
                seen = submit[j] + quantised_wait(now - submit[j], config.wait_quantum)
            key[k] = priority_key(
                policy.code,
                policy.weights,
                seen,
                config.time_origin,
                submit[j],
                jobs.procs[j],
                jobs.estimate[j],
            )
            if policy.code == LINEAR_CODE:
                key[k] += policy.weights[FAIRSHARE_TERM] * jobs.fairshare[j]


@njit(cache=True, _nrt=True)  # it allocates: not inherited from order_queue's _nrt=False
def _merge_sort(queue: np.ndarray, group: np.ndarray, key: np.ndarray, qn: int) -> None:
    perm = np.arange(qn)
    tmp = np.empty(qn, dtype=np.int64)
    width = 1
    while width < qn:
        lo = 0
        while lo < qn:
            mid = min(lo + width, qn)
            hi = min(lo + 2 * width, qn)
            a, b, o = lo, mid, lo
            while a < mid and b < hi:
                pa, pb = perm[a], perm[b]
                if _before(group[pb], key[pb], queue[pb], group[pa], key[pa], queue[pa]):
                    tmp[o] = pb
                    b += 1
                else:
                    tmp[o] = pa
                    a += 1
                o += 1
            while a < mid:
                tmp[o] = perm[a]
                a += 1
                o += 1
            while b < hi:
                tmp[o] = perm[b]
                b += 1
                o += 1
            lo = hi
        perm[:qn] = tmp[:qn]
        width *= 2
    q2 = queue[:qn][perm]
    g2 = group[:qn][perm]
    k2 = key[:qn][perm]
    queue[:qn] = q2
    group[:qn] = g2
    key[:qn] = k2


@njit(cache=True)
def sort_queue(queue: np.ndarray, group: np.ndarray, key: np.ndarray, qn: int) -> None:
    """Sort ``queue[:qn]`` in place by (group, key, index) with the parallel arrays."""
    descents = 0
    for k in range(1, qn):
        if _before(group[k], key[k], queue[k], group[k - 1], key[k - 1], queue[k - 1]):
            descents += 1
            if descents > 16:
                break
    if descents == 0:
        return
    if descents > 16:
        _merge_sort(queue, group, key, qn)
        return
    # Nearly sorted (a few arrivals appended): binary insertion.
    for k in range(1, qn):
        g, kk, j = group[k], key[k], queue[k]
        if not _before(g, kk, j, group[k - 1], key[k - 1], queue[k - 1]):
            continue
        lo, hi = 0, k - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if _before(g, kk, j, group[mid], key[mid], queue[mid]):
                hi = mid
            else:
                lo = mid + 1
        for m in range(k, lo, -1):
            group[m] = group[m - 1]
            key[m] = key[m - 1]
            queue[m] = queue[m - 1]
        group[lo] = g
        key[lo] = kk
        queue[lo] = j


@njit(cache=True)
def static_keys(
    code: int,
    weights: np.ndarray,
    time_origin: float,
    submit: np.ndarray,
    procs: np.ndarray,
    estimate: np.ndarray,
) -> np.ndarray:
    """Keys of a time-independent policy for all jobs at once."""
    n = len(submit)
    out = np.empty(n, dtype=np.float64)
    for j in range(n):
        out[j] = priority_key(code, weights, 0.0, time_origin, submit[j], procs[j], estimate[j])
    return out
