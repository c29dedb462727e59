"""Rule C: the predicted quantile levels recalibrated from recent completions (global, all users).

Issue 29, round 16 (``sim/runtime_predictions/estimates/dev_log.md``; off by default unless its
criterion holds): where a window's jobs run longer than their predicted distributions say (BLUE
under Flux: median PIT 0.79, diagnostic D9), every start estimate behind them is early. Rule C
reads how the model's levels have lately been missed, from completed jobs only:

* a completed job's **PIT** (:func:`pit_value`): the level at which its runtime falls in its
  predicted quantile function, as the core reads it (:func:`rush.core.remaining_runtime.quantile_knots`:
  linear in log(1 + seconds), a lower tail to level 0, the request at level 1);
* the **level map** (:func:`conformal_levels`): for each model level tau, the empirical
  tau-quantile of the last :data:`CONFORMAL_JOBS` PITs, weighted n / (n + :data:`CONFORMAL_PRIOR_JOBS`)
  against tau itself, within [:data:`LEVEL_FLOOR`, :data:`LEVEL_CEILING`]; tau itself with no PIT
  (the documented fallback: the model's own quantiles);
* the **recalibrated quantiles** (:func:`recalibrated_quantiles`): Q(tau') at each level tau, never
  above the request.

The start estimates read them where they read quantiles (a queued job's length under rule L2, a
running job's conditional median); the scheduling pass's decisions do not change. Bad input never
gives NaN: an unusable PIT is dropped, a map is always finite, and quantiles the core would refuse
(NaN, negative) stay as they are and are refused by :func:`rush.core.remaining_runtime.quantiles_refused`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from rush.core.remaining_runtime import quantile_knots
from rush.core.snapshot import RuntimeQuantiles

# Fixed before any run (dev_log.md, round 16): 64 PITs give an empirical quantile's standard
# error of at most 0.0625 (a quarter of the 0.29 shift D9 measured) and are about a day of the
# traces' submissions; the model keeps half the weight until 16 completions; no level moves more
# than half-way into the tails the core extrapolates.
CONFORMAL_JOBS = 64
CONFORMAL_PRIOR_JOBS = 16
LEVEL_FLOOR = 0.05
LEVEL_CEILING = 0.95


def _usable(levels: np.ndarray, q: np.ndarray) -> bool:
    return (
        q.ndim == 1
        and len(levels) > 0
        and len(levels) == len(q)
        and bool(np.all(np.isfinite(levels)))
        and bool(np.all(np.diff(levels) > 0))
        and levels[0] > 0
        and levels[-1] < 1
        and bool(np.all(np.isfinite(q)))
        and bool(np.all(q >= 0))
    )


def _knots(levels: np.ndarray, q: np.ndarray, top: float) -> tuple[np.ndarray, np.ndarray]:
    """One job's knots (log(1 + s), levels with 0 and 1), the level-1 end at ``top`` seconds."""
    xs, ps = quantile_knots(np.log1p(np.sort(q))[None, :], levels, np.log1p([top]))
    return xs[0], ps


def pit_value(
    levels: Iterable[float], seconds: Iterable[float], runtime: float, requested_time: float
) -> float:
    """The level at which ``runtime`` (clipped to [0, request]) falls in the quantile function of
    ``seconds`` at ``levels``; NaN (no PIT) for unusable input: NaN, infinite or negative runtime or
    quantiles, levels not increasing within (0, 1), lengths that differ, no finite positive request."""
    lv = np.asarray(tuple(levels), dtype=np.float64)
    q = np.asarray(tuple(seconds), dtype=np.float64)
    runtime, request = float(runtime), float(requested_time)
    if not _usable(lv, q) or not math.isfinite(runtime) or runtime < 0:
        return math.nan
    if not math.isfinite(request) or request <= 0:
        return math.nan
    xs, ps = _knots(lv, q, request)
    return float(np.clip(np.interp(math.log1p(min(runtime, request)), xs, ps), 0.0, 1.0))


def conformal_levels(pits: Iterable[float], levels: Iterable[float]) -> np.ndarray:
    """The level map: for each of ``levels`` the (n tau-quantile of the last :data:`CONFORMAL_JOBS`
    finite PITs in [0, 1] + :data:`CONFORMAL_PRIOR_JOBS` tau) / (n + prior), within
    [:data:`LEVEL_FLOOR`, :data:`LEVEL_CEILING`], non-decreasing; ``levels`` themselves when there is
    no PIT. Always finite for finite levels."""
    lv = np.asarray(tuple(levels), dtype=np.float64)
    kept = np.asarray(
        [float(p) for p in pits if isinstance(p, (int, float)) and math.isfinite(p) and 0.0 <= p <= 1.0],
        dtype=np.float64,
    )[-CONFORMAL_JOBS:]
    if len(kept) == 0:
        return lv.copy()
    n = len(kept)
    mapped = (n * np.quantile(kept, np.clip(lv, 0.0, 1.0)) + CONFORMAL_PRIOR_JOBS * lv) / (
        n + CONFORMAL_PRIOR_JOBS
    )
    return np.maximum.accumulate(np.clip(mapped, LEVEL_FLOOR, LEVEL_CEILING))


def recalibrated_seconds(
    quantiles: np.ndarray, levels: np.ndarray, mapped: np.ndarray, request: np.ndarray
) -> np.ndarray:
    """Vectorised :func:`recalibrated_quantiles` ((n, k) quantiles, (k,) levels, (n, k) maps, (n,)
    requests): row i's quantile function at ``mapped[i]``, never above its request (its top
    quantile where the request is not finite and positive). Rows with NaN or negative quantiles or
    a non-finite map are returned as they are."""
    q = np.asarray(quantiles, dtype=np.float64)
    lv = np.asarray(levels, dtype=np.float64)
    mapped = np.asarray(mapped, dtype=np.float64)
    request = np.asarray(request, dtype=np.float64)
    if q.ndim != 2 or mapped.shape != q.shape or len(request) != len(q) or q.shape[1] != len(lv):
        raise ValueError("recalibrated_seconds: quantiles (n, k), levels (k,), mapped (n, k), request (n,)")
    good = np.all(np.isfinite(q) & (q >= 0), axis=1) & np.all(np.isfinite(mapped), axis=1)
    out = q.copy()
    if not good.any():
        return out
    qs = np.sort(q[good], axis=1)
    req = request[good]
    top = np.where(np.isfinite(req) & (req > 0), req, qs[:, -1])
    xs, ps = quantile_knots(np.log1p(qs), lv, np.log1p(top))
    u = np.clip(mapped[good], 0.0, 1.0)
    seg = np.clip(np.searchsorted(ps, u, side="right") - 1, 0, len(ps) - 2)
    rows = np.arange(len(qs))[:, None]
    lo, hi = xs[rows, seg], xs[rows, seg + 1]
    frac = (u - ps[seg]) / (ps[seg + 1] - ps[seg])
    out[good] = np.minimum(np.expm1(lo + frac * (hi - lo)), np.maximum(top, 0.0)[:, None])
    return out


def recalibrated_quantiles(
    q: RuntimeQuantiles, mapped: Iterable[float], requested_time: float
) -> RuntimeQuantiles:
    """``q`` with each level's quantile replaced by its quantile function at the mapped level
    (``mapped``, one per level; never above the request). Unusable quantiles or a map of another
    length or not finite: ``q`` itself (the core then reads or refuses it as before)."""
    lv = np.asarray(q.levels, dtype=np.float64)
    seconds = np.asarray(q.seconds, dtype=np.float64)
    m = np.asarray(tuple(mapped), dtype=np.float64)
    if not _usable(lv, seconds) or m.shape != lv.shape or not np.all(np.isfinite(m)):
        return q
    if np.array_equal(m, lv):
        return q
    new = recalibrated_seconds(seconds[None, :], lv, m[None, :], np.array([float(requested_time)]))[0]
    return RuntimeQuantiles(q.levels, tuple(float(s) for s in new), q.projection_shift)


def conformal_levels_walkforward(
    at: np.ndarray, end: np.ndarray, pit: np.ndarray, levels: np.ndarray
) -> np.ndarray:
    """Each moment's level map ((n, k)) from the PITs of the jobs that ended at or before
    ``at[i]`` (``end``: inf or NaN for a job that never ended; ``pit``: NaN for none), the last
    :data:`CONFORMAL_JOBS` by end time (ties: input order). No future data: a PIT counts only from
    its job's end. Arrays ``at``, ``end`` and ``pit`` of one length."""
    at = np.asarray(at, dtype=np.float64)
    end = np.asarray(end, dtype=np.float64)
    pit = np.asarray(pit, dtype=np.float64)
    lv = np.asarray(levels, dtype=np.float64)
    if not (len(at) == len(end) == len(pit)):
        raise ValueError("conformal_levels_walkforward: at, end and pit must have one length")
    done = np.flatnonzero(np.isfinite(end) & np.isfinite(pit) & (pit >= 0) & (pit <= 1))
    done = done[np.argsort(end[done], kind="stable")]
    ends, pits = end[done], pit[done]
    seen = np.searchsorted(ends, at, side="right")  # how many ended at or before each moment
    out = np.empty((len(at), len(lv)))
    cache: dict[int, np.ndarray] = {}
    for i, c in enumerate(seen.tolist()):
        if c not in cache:
            cache[c] = conformal_levels(pits[max(0, c - CONFORMAL_JOBS) : c].tolist(), lv)
        out[i] = cache[c]
    return out
