"""Rule D: a user's predicted runtime quantiles shifted by how wrong the model has lately been for them.

Issue 29, round 14 (``sim/runtime_predictions/estimates/dev_log.md``): on some live windows a
user's jobs run far longer than their predicted distributions say (their earlier jobs were short;
these run long), and the start estimates of every job queued behind them are early. The model's
features see a user's past runtimes, not its own recent errors for that user. Rule D reads those
errors, from completed jobs only:

* a completed job's **residual** (:func:`drift_residual`): log(runtime) - log(the median of the
  raw quantiles it was predicted), each clipped to [1 s, request];
* a user's **shift** (:func:`drift_shift`): the median of the user's last :data:`DRIFT_JOBS`
  residuals, weighted n / (n + :data:`DRIFT_PRIOR_JOBS`), clipped to +-:data:`DRIFT_CAP`; 0 with
  no residual (the documented fallback: the model's own quantiles);
* the shifted quantiles (:func:`drifted_quantiles`): each multiplied by exp(shift).

The start estimates read shifted quantiles only where they read quantiles (a queued job's length
under rule L2, a running job's conditional median): the scheduling pass's decisions do not
change. Bad input never gives NaN: an unusable residual is dropped, a shift is always finite,
and quantiles the core would refuse (NaN, negative) stay as they are and are refused by
:func:`rush.core.remaining_runtime.quantiles_refused`.

Rule D2 (round 15, post hoc, refuted unless its dev log says otherwise; off by default) keeps D's
shift and changes two things: the record is seeded from the model's training data
(:func:`seeded_records`: each user's residuals of jobs that ended by a moment, before the
window's own completions), and the shift scales the queued job's projection length itself
(:func:`drift_projection_length`), not its quantiles under L2's max(estimate, Q0.75).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

import numpy as np

from rush.core.snapshot import RuntimeQuantiles

# Fixed before any run (dev_log.md, round 14): a user's regime lasts on the order of ten jobs;
# the record outweighs the model from about four residuals on; factor 4 covers the drift
# diagnostic D9 measured (3.5-3.9x) and no more.
DRIFT_JOBS = 8
DRIFT_PRIOR_JOBS = 4
DRIFT_CAP = math.log(4.0)
MIN_SECONDS = 1.0


def quantile_median(levels: Iterable[float], seconds: Iterable[float]) -> float:
    """The median of predicted quantiles (``seconds`` at ``levels``): the 0.5 quantile, or
    interpolated in log(1 + seconds) between the two levels around 0.5 (the nearest end one
    outside them); NaN for unusable input (no levels, lengths that differ, NaN)."""
    lv = np.asarray(tuple(levels), dtype=np.float64)
    q = np.asarray(tuple(seconds), dtype=np.float64)
    if len(lv) == 0 or len(lv) != len(q) or not np.all(np.isfinite(lv)) or np.any(np.diff(lv) <= 0):
        return math.nan
    if not np.all(np.isfinite(q)) or np.any(q < 0):
        return math.nan
    return float(np.expm1(np.interp(0.5, lv, np.log1p(np.sort(q)))))


def drift_residual(runtime: float, median: float, requested_time: float) -> float:
    """log(runtime / median), each clipped to [1 s, request]; NaN (no residual) when any input is
    NaN, infinite or negative, or the request is not positive."""
    values = (float(runtime), float(median), float(requested_time))
    if not all(math.isfinite(v) for v in values) or min(values) < 0 or values[2] <= 0:
        return math.nan
    top = max(values[2], MIN_SECONDS)
    clip = lambda v: min(max(v, MIN_SECONDS), top)  # noqa: E731
    return math.log(clip(values[0])) - math.log(clip(values[1]))


def drift_shift(residuals: Iterable[float]) -> float:
    """A user's shift (log factor) from their residuals in end order (newest last): the median of
    the last :data:`DRIFT_JOBS` finite ones, times n / (n + :data:`DRIFT_PRIOR_JOBS`), within
    +-:data:`DRIFT_CAP`; 0.0 when there is none. Always finite."""
    kept = [r for r in residuals if isinstance(r, (int, float)) and math.isfinite(r)][-DRIFT_JOBS:]
    if not kept:
        return 0.0
    n = len(kept)
    shift = n / (n + DRIFT_PRIOR_JOBS) * statistics.median(kept)
    return min(max(shift, -DRIFT_CAP), DRIFT_CAP)


def drifted_quantiles(q: RuntimeQuantiles, shift: float) -> RuntimeQuantiles:
    """``q`` with every quantile multiplied by exp(``shift``) (a non-finite or zero shift: ``q``
    itself). Quantiles the core refuses (NaN, negative) keep their value, so they are still refused."""
    if not math.isfinite(shift) or shift == 0.0:
        return q
    factor = math.exp(min(max(shift, -DRIFT_CAP), DRIFT_CAP))
    return RuntimeQuantiles(
        q.levels, tuple(s * factor if math.isfinite(s) and s >= 0 else s for s in q.seconds)
    )


def drift_shifts_walkforward(
    user: np.ndarray, at: np.ndarray, end: np.ndarray, residual: np.ndarray
) -> np.ndarray:
    """Each moment's shift for its user (the simulator's and the offline study's feed): the
    residuals of that user's jobs that ended at or before ``at[i]`` (``end``: inf or NaN for a job
    that never ended; ``residual``: NaN for none), newest last; arrays of one length (the trace's
    jobs). No future data: a residual counts only from its job's end."""
    user = np.asarray(user, dtype=np.int64)
    at = np.asarray(at, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    residual = np.asarray(residual, dtype=np.float64)
    if not (len(user) == len(at) == len(end) == len(residual)):
        raise ValueError("drift_shifts_walkforward: user, at, end and residual must have one length")
    done = np.flatnonzero(np.isfinite(end) & np.isfinite(residual))
    done = done[np.argsort(end[done], kind="stable")]
    asked = np.argsort(at, kind="stable")
    record: dict[int, list[float]] = {}
    out = np.zeros(len(at))
    k = 0
    for i in asked.tolist():
        while k < len(done) and end[done[k]] <= at[i]:
            j = int(done[k])
            kept = record.setdefault(int(user[j]), [])
            kept.append(float(residual[j]))
            del kept[:-DRIFT_JOBS]
            k += 1
        out[i] = drift_shift(record.get(int(user[i]), ()))
    return out


def seeded_records(
    user: np.ndarray, end: np.ndarray, residual: np.ndarray, before: float
) -> dict[int, list[float]]:
    """Rule D2's seed: each user's last :data:`DRIFT_JOBS` finite residuals of the jobs that
    ended at or before ``before`` (no later job: walk-forward), in end order (ties: input
    order). Jobs with a NaN or infinite end or residual are left out; arrays of one length."""
    user = np.asarray(user, dtype=np.int64)
    end = np.asarray(end, dtype=np.float64)
    residual = np.asarray(residual, dtype=np.float64)
    if not (len(user) == len(end) == len(residual)):
        raise ValueError("seeded_records: user, end and residual must have one length")
    keep = np.flatnonzero(np.isfinite(end) & np.isfinite(residual) & (end <= before))
    keep = keep[np.argsort(end[keep], kind="stable")]
    record: dict[int, list[float]] = {}
    for j in keep.tolist():
        record.setdefault(int(user[j]), []).append(float(residual[j]))
    return {u: r[-DRIFT_JOBS:] for u, r in record.items()}


def drift_projection_length(length: np.ndarray, shift: np.ndarray, request: np.ndarray) -> np.ndarray:
    """Rule D2's use: a queued job's projection length (L2's) times exp(``shift``) (clipped to
    +-:data:`DRIFT_CAP`), within [:data:`MIN_SECONDS`, request] (no cap where the request is not
    finite and positive). A NaN length stays NaN (the caller's fallback); a non-finite shift
    leaves the length as it was. Never negative."""
    length = np.asarray(length, dtype=np.float64)
    shift = np.asarray(shift, dtype=np.float64)
    request = np.asarray(request, dtype=np.float64)
    factor = np.exp(np.clip(np.where(np.isfinite(shift), shift, 0.0), -DRIFT_CAP, DRIFT_CAP))
    top = np.where(np.isfinite(request) & (request > 0), request, np.inf)
    out = np.minimum(np.maximum(length * factor, MIN_SECONDS), np.maximum(top, MIN_SECONDS))
    return np.where(np.isnan(length), np.nan, out)
