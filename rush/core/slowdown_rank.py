"""Ranking jobs by the slowdown risk of their predicted runtime distribution (rule H14).

A point prediction is the wrong summary for ordering a queue under the bounded slowdown: keeping a
job waiting costs its wait times ``1 / max(p, tau)``, so a job whose distribution has mass near
zero is costly to delay even when its mean is long (``sim/runtime_predictions``, round 17, D12).

Smith's rule for expected weighted flow time (WSEPT, Rothkopf 1966) orders independent jobs by
``E[p] / E[w]`` ascending; with the bounded slowdown's weight ``w = 1 / max(p, tau)`` the
**slowdown index** of a job is ``E[p] / E[1 / max(p, tau)]``. Both expectations are read from the
predicted quantile function as the core reads it elsewhere (:func:`rush.core.remaining_runtime.
quantile_knots`: piecewise linear in ``log(1 + runtime)``, the request at level 1), by the midpoint
rule on :data:`SLOWDOWN_LEVELS` levels (those of the predicted mean).

The index is returned in seconds, as the runtime ``r`` of a *certain* job with the same index
(``r * max(r, tau) = index``), so that a one-point distribution ranks at its point, the request caps
it, and the ranking path of any other predicted runtime applies (:func:`rush.core.
runtime_predictions.ranking_runtimes`: rank on it, plan on the limits). A row without usable
quantiles gives NaN, which that guard turns into the request.
"""

from __future__ import annotations

import numpy as np

from rush.core.remaining_runtime import quantile_knots
from rush.errors import PolicyError

# Levels of the midpoint rule (the predicted mean's, rush.models.runtime_quantiles.mean_of_quantiles).
SLOWDOWN_LEVELS = 64


def equivalent_runtime(index: np.ndarray, tau: float) -> np.ndarray:
    """The runtime ``r`` of a certain job whose slowdown index is ``index``: ``r * max(r, tau)``
    equals it (``sqrt(index)`` at or above ``tau**2``, ``index / tau`` below)."""
    index = np.asarray(index, dtype=np.float64)
    return np.where(index >= tau * tau, np.sqrt(np.maximum(index, 0.0)), index / tau)


def quantile_table(
    quantiles: np.ndarray, levels: np.ndarray, requested_time: np.ndarray, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(quantiles (n, k), levels (k,), requests (n,)) as float arrays, or a PolicyError at
    ``where`` when the shapes do not match: the check every rule on a predicted distribution
    makes before it reads one (the slowdown rank; H17's and H18's confidence gate)."""
    q = np.asarray(quantiles, dtype=np.float64)
    lv = np.asarray(levels, dtype=np.float64)
    req = np.ascontiguousarray(requested_time, dtype=np.float64)
    if q.ndim != 2 or q.shape[1] != len(lv) or req.shape != (q.shape[0],):
        raise PolicyError(
            f"quantiles of shape {q.shape} for {len(lv)} levels and {req.shape} requests",
            where=where,
            fix="give one row of quantiles (one per level) and one request per job",
        )
    return q, lv, req


def slowdown_ranking_runtimes(
    quantiles: np.ndarray, levels: np.ndarray, requested_time: np.ndarray, tau: float
) -> np.ndarray:
    """Each job's slowdown index ``E[p] / E[1 / max(p, tau)]`` as an equivalent runtime (seconds,
    at most the request), from its predicted ``quantiles`` (n, k) at ``levels`` (k,) and its
    ``requested_time`` (n,); NaN for a job whose quantiles or request are not finite and
    non-negative (ranked on its request by :func:`~rush.core.runtime_predictions.ranking_runtimes`)."""
    if not (np.isfinite(tau) and tau > 0):
        raise PolicyError(
            f"the bounded slowdown's tau must be a positive number of seconds, got {tau}",
            where="slowdown ranking tau",
            fix="use the metric's tau, e.g. 10",
        )
    q, lv, req = quantile_table(quantiles, levels, requested_time, "slowdown ranking quantiles")
    if len(lv) == 0 or np.any(np.diff(lv) <= 0) or lv[0] <= 0 or lv[-1] >= 1:
        raise PolicyError(
            f"quantile levels must increase strictly inside (0, 1), got {lv.tolist()}",
            where="slowdown ranking levels",
            fix="give the predictor's levels, e.g. 0.1, 0.25, 0.5, 0.75, 0.9",
        )
    usable = np.all(np.isfinite(q) & (q >= 0), axis=1) & np.isfinite(req) & (req >= 0)
    out = np.full(len(req), np.nan)
    if not usable.any():
        return out
    # Quantiles above the request are the request (a job is killed there).
    log_q = np.log1p(np.minimum(q[usable], req[usable, None]))
    xs, ps = quantile_knots(log_q, lv, np.log1p(req[usable]))
    grid = (np.arange(SLOWDOWN_LEVELS) + 0.5) / SLOWDOWN_LEVELS
    seg = np.clip(np.searchsorted(ps, grid, side="right") - 1, 0, len(ps) - 2)
    frac = (grid - ps[seg]) / (ps[seg + 1] - ps[seg])
    runtime = np.maximum(np.expm1(xs[:, seg] + frac[None, :] * (xs[:, seg + 1] - xs[:, seg])), 0.0)
    index = runtime.mean(axis=1) / (1.0 / np.maximum(runtime, tau)).mean(axis=1)
    out[usable] = np.minimum(equivalent_runtime(index, tau), req[usable])
    return out
