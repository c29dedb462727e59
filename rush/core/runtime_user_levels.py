"""Rule U: the level at which rule L2 reads a queued job's predicted runtimes, per user, from how
that user's recent jobs fell in their own predicted distributions (a per-user online conformal
correction).

Issue 29, round 29 (``sim/runtime_predictions/estimates/dev_log.md``; off by default unless its
criterion holds): D9 found a live window whose waiting jobs ran above their predicted q0.75 more
than half the time. Rule L2 projects a queued job for max(its calibrated mean, its Q0.75); rule U
replaces 0.75 by a level of the job's user's:

* a completed job's PIT is rule C's :func:`rush.core.runtime_conformal.pit_value`;
* a user's **level** (:func:`user_level`): the empirical 0.75-quantile of the user's last
  :data:`USER_LEVEL_JOBS` PITs, weighted n / (n + :data:`USER_LEVEL_PRIOR_JOBS`) against 0.75,
  within [:data:`USER_LEVEL_FLOOR`, :data:`USER_LEVEL_CEILING`]; 0.75 with no PIT (the documented
  fallback: L2 itself);
* the **length** (:func:`user_level_lengths`): min(request, max(estimate, Q(level))), Q the job's
  own quantile function as the core reads it (never above the request, never negative).

Only the start-estimate projection reads it; the scheduling pass's decisions do not change.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from rush.core.runtime_conformal import recalibrated_seconds

# Fixed before any run (dev_log.md, round 29): K and the prior weight are rule D's (a user's
# regime lasts on the order of ten jobs; the record outweighs the model from four PITs on);
# 0.75 is L2's level; 0.95 is rule C's ceiling; below 0.5 L2's mean floor decides anyway.
USER_LEVEL_JOBS = 8
USER_LEVEL_PRIOR_JOBS = 4
BASE_LEVEL = 0.75
USER_LEVEL_FLOOR = 0.5
USER_LEVEL_CEILING = 0.95


def user_level(pits: Iterable[float]) -> float:
    """A user's level from their PITs in end order (newest last): the last
    :data:`USER_LEVEL_JOBS` finite ones in [0, 1], their empirical :data:`BASE_LEVEL`-quantile
    weighted n / (n + prior) against :data:`BASE_LEVEL`, within [floor, ceiling]. Always finite."""
    kept = [float(p) for p in pits if isinstance(p, (int, float)) and math.isfinite(p) and 0.0 <= p <= 1.0]
    kept = kept[-USER_LEVEL_JOBS:]
    if not kept:
        return BASE_LEVEL
    n = len(kept)
    level = (n * float(np.quantile(kept, BASE_LEVEL)) + USER_LEVEL_PRIOR_JOBS * BASE_LEVEL) / (
        n + USER_LEVEL_PRIOR_JOBS
    )
    return min(max(level, USER_LEVEL_FLOOR), USER_LEVEL_CEILING)


def user_levels_walkforward(user: np.ndarray, at: np.ndarray, end: np.ndarray, pit: np.ndarray) -> np.ndarray:
    """Each moment's level for its user from the PITs of that user's jobs that ended at or before
    ``at[i]`` (``end``: inf or NaN for a job that never ended; ``pit``: NaN for none), newest
    last; arrays of one length. No future data: a PIT counts only from its job's end."""
    user = np.asarray(user, dtype=np.int64)
    at = np.asarray(at, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    pit = np.asarray(pit, dtype=np.float64)
    if not (len(user) == len(at) == len(end) == len(pit)):
        raise ValueError("user_levels_walkforward: user, at, end and pit must have one length")
    done = np.flatnonzero(np.isfinite(end) & np.isfinite(pit) & (pit >= 0) & (pit <= 1))
    done = done[np.argsort(end[done], kind="stable")]
    record: dict[int, list[float]] = {}
    out = np.full(len(at), BASE_LEVEL)
    k = 0
    for i in np.argsort(at, kind="stable").tolist():
        while k < len(done) and end[done[k]] <= at[i]:
            j = int(done[k])
            kept = record.setdefault(int(user[j]), [])
            kept.append(float(pit[j]))
            del kept[:-USER_LEVEL_JOBS]
            k += 1
        out[i] = user_level(record.get(int(user[i]), ()))
    return out


def user_level_lengths(
    quantiles: np.ndarray, levels: np.ndarray, level: np.ndarray, estimate: np.ndarray, request: np.ndarray
) -> np.ndarray:
    """Queued jobs' projection lengths under rule U ((n, k) raw quantiles at ``levels``, (n,) user
    levels, estimates and requests): min(request, max(estimate, Q(level))). A row with unusable
    quantiles or level reads Q at :data:`BASE_LEVEL`'s column as given; a NaN estimate counts as
    none; the result is never negative (at least 0) and never NaN where the request is finite."""
    q = np.asarray(quantiles, dtype=np.float64)
    lv = np.asarray(levels, dtype=np.float64)
    level = np.asarray(level, dtype=np.float64)
    estimate = np.asarray(estimate, dtype=np.float64)
    request = np.asarray(request, dtype=np.float64)
    if q.ndim != 2 or q.shape[1] != len(lv) or not (len(q) == len(level) == len(estimate) == len(request)):
        raise ValueError("user_level_lengths: quantiles (n, k), levels (k,), level, estimate, request (n,)")
    column = int(np.argmin(np.abs(lv - BASE_LEVEL)))
    mapped = np.broadcast_to(lv, q.shape).copy()
    mapped[:, column] = np.where(
        np.isfinite(level), np.clip(level, USER_LEVEL_FLOOR, USER_LEVEL_CEILING), lv[column]
    )
    read = recalibrated_seconds(q, lv, mapped, request)[:, column]
    read = np.where(mapped[:, column] == lv[column], q[:, column], read)  # the fallback is L2 itself
    read = np.where(np.isfinite(read) & (read >= 0), read, 0.0)
    length = np.maximum(np.where(np.isfinite(estimate), estimate, 0.0), read)
    top = np.where(np.isfinite(request) & (request > 0), request, np.inf)
    return np.minimum(length, top)


def level_pit(pit: np.ndarray, level: np.ndarray) -> np.ndarray:
    """A job's PIT under rule U's reading: the inverse, at its raw PIT, of the level map through
    (0, 0), (:data:`BASE_LEVEL`, level), (1, 1), piecewise linear. NaN where the PIT is."""
    p = np.asarray(pit, dtype=np.float64)
    t = np.clip(np.asarray(level, dtype=np.float64), USER_LEVEL_FLOOR, USER_LEVEL_CEILING)
    low = BASE_LEVEL * p / t
    high = BASE_LEVEL + (1 - BASE_LEVEL) * (p - t) / (1 - t)
    return np.where(p <= t, low, high)
