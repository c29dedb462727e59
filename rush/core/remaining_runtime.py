"""How long will a running job run in all, given how long it has run? From its predicted distribution.

A runtime predictor that gives quantiles (:mod:`rush.models.runtime_quantiles`) describes each
job's runtime R by a quantile function, linear in log(1 + R) between the predicted quantiles,
from a lower tail at level 0 to the request at level 1 (:func:`quantile_knots`). A job that has
run ``elapsed`` seconds is expected to run in all

    E[R | R > elapsed] = (1 / (1 - F(elapsed))) * integral from F(elapsed) to 1 of Q(u) du,

the mean of the distribution's part above what it has already run (the integral is exact: Q is
the exponential of a linear function on each segment). It is never below ``elapsed``, never
above the request (nor the elapsed time, for a job already past its request), never NaN: a
prediction that expires moves to what is left of the distribution, not to its next quantile
only (a job that has outlived its median is more likely one of the long ones).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import chain, repeat

import numpy as np
from numba import njit

from rush.core.names import ESTIMATE_RULE_L2, ESTIMATE_RULE_T, ESTIMATE_RULES
from rush.core.runtime_drift import drift_projection_length


def quantile_knots(
    log_q: np.ndarray, levels: np.ndarray, log_request: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The quantile function's knots: (n, k + 2) log runtimes at levels (0, levels..., 1): a
    lower tail extrapolated from the quantiles' spread (never below 0), the quantiles, and the
    request (never below the highest quantile)."""
    log_q = np.asarray(log_q, dtype=np.float64)
    levels = np.asarray(levels, dtype=np.float64)
    spread = np.maximum(log_q[:, -1] - log_q[:, 0], 1e-9)
    low_tail = np.maximum(log_q[:, 0] - spread * levels[0] / max(levels[-1] - levels[0], 1e-9), 0.0)
    xs = np.column_stack(
        [low_tail, log_q, np.maximum(np.asarray(log_request, dtype=np.float64), log_q[:, -1])]
    )
    return xs, np.concatenate([[0.0], levels, [1.0]])


@njit(cache=True)
def _level_reached(xs: np.ndarray, ps: np.ndarray, le: float) -> float:
    """F at log(1 + elapsed) ``le``: the level at which the quantile function reaches it."""
    u_e = 0.0
    for i in range(len(xs) - 1):
        if le < xs[i]:
            break
        if xs[i + 1] > xs[i] and le < xs[i + 1]:
            return ps[i] + (le - xs[i]) / (xs[i + 1] - xs[i]) * (ps[i + 1] - ps[i])
        u_e = ps[i + 1]
    return u_e


@njit(cache=True)
def conditional_quantile_runtime(xs: np.ndarray, ps: np.ndarray, elapsed: float, level: float) -> float:
    """The ``level`` quantile of R given R > elapsed (seconds): Q(F(e) + level (1 - F(e))),
    between the elapsed time and the request (the elapsed time past it)."""
    elapsed = max(elapsed, 0.0) if np.isfinite(elapsed) else 0.0
    k = len(xs)
    top = max(np.expm1(xs[k - 1]), elapsed)
    le = np.log1p(elapsed)
    if le >= xs[k - 1]:
        return top
    u = _level_reached(xs, ps, le)
    u = u + min(max(level, 0.0), 1.0) * (1.0 - u)
    value = np.expm1(np.interp(u, ps, xs))
    return min(max(value, elapsed), top) if np.isfinite(value) else top


@njit(cache=True)
def conditional_mean_runtime(xs: np.ndarray, ps: np.ndarray, elapsed: float) -> float:
    """E[R | R > elapsed] (seconds) for one job's knots ``xs`` (log(1 + seconds), non-decreasing)
    at levels ``ps`` (0 ... 1). A job past its last knot (its request): ``elapsed``."""
    elapsed = max(elapsed, 0.0) if np.isfinite(elapsed) else 0.0
    le = np.log1p(elapsed)
    k = len(xs)
    if le >= xs[k - 1]:
        return max(elapsed, np.expm1(xs[k - 1]))
    u_e = _level_reached(xs, ps, le)
    mass = 1.0 - u_e
    if mass <= 1e-12:
        return max(elapsed, np.expm1(xs[k - 1]))
    total = 0.0
    for i in range(k - 1):
        u0 = max(ps[i], u_e)
        u1 = ps[i + 1]
        if u1 <= u0:
            continue
        slope = (xs[i + 1] - xs[i]) / (ps[i + 1] - ps[i])
        x0 = xs[i] + (u0 - ps[i]) * slope
        x1 = xs[i] + (u1 - ps[i]) * slope
        if slope * (u1 - u0) > 1e-9:
            total += (np.exp(x1) - np.exp(x0)) / slope
        else:
            total += np.exp(x0) * (u1 - u0)
        total -= u1 - u0  # expm1: the integral of exp(x) - 1
    mean = total / mass
    top = max(np.expm1(xs[k - 1]), elapsed)
    return min(max(mean, elapsed), top) if np.isfinite(mean) else top


@njit(cache=True)
def conditional_mean_runtimes(xs: np.ndarray, ps: np.ndarray, elapsed: np.ndarray) -> np.ndarray:
    """:func:`conditional_mean_runtime` per row of ``xs`` (n, k) with its ``elapsed``."""
    out = np.empty(xs.shape[0], dtype=np.float64)
    for r in range(xs.shape[0]):
        out[r] = conditional_mean_runtime(xs[r], ps, elapsed[r])
    return out


@njit(cache=True)
def tail_carried_mean(xs: np.ndarray, ps: np.ndarray) -> float:
    """Rule T's mean (seconds) of one job's knots ``xs`` (log(1 + seconds), non-decreasing) at
    levels ``ps`` (0, the predicted levels, 1): the integral of the quantile function from 0 to
    the top predicted level p_K (exact per segment, as :func:`conditional_mean_runtime`'s) plus
    (1 - p_K) times the last knot, the request: the mass above the top predicted quantile carried
    up to the limit that bounds every runtime. Never below the distribution's mean, never above
    the last knot."""
    k = len(xs)
    total = 0.0
    for i in range(k - 2):  # the segments below the top predicted level
        width = ps[i + 1] - ps[i]
        if width <= 0.0:
            continue
        rise = xs[i + 1] - xs[i]
        if rise > 1e-9:
            total += (np.exp(xs[i + 1]) - np.exp(xs[i])) * width / rise
        else:
            total += np.exp(xs[i]) * width
        total -= width  # expm1: the integral of exp(x) - 1
    top = np.expm1(xs[k - 1])
    mean = total + (1.0 - ps[k - 2]) * top
    return min(max(mean, 0.0), top) if np.isfinite(mean) else top


@njit(cache=True)
def tail_carried_means(xs: np.ndarray, ps: np.ndarray) -> np.ndarray:
    """:func:`tail_carried_mean` per row of ``xs`` (n, k)."""
    out = np.empty(xs.shape[0], dtype=np.float64)
    for r in range(xs.shape[0]):
        out[r] = tail_carried_mean(xs[r], ps)
    return out


# Why a running job's quantiles were not used (its end is then the pass's estimate without
# them: the prediction or the request); the live shells journal it.
REFUSED_LEVELS = "quantile levels not increasing within (0, 1) or not as many as the quantiles"
REFUSED_NOT_FINITE = "a quantile is NaN or infinite"
REFUSED_NEGATIVE = "a quantile is negative"
REFUSED_NO_LIMIT = "no finite time limit to close the distribution"
# Each job's quantiles as a code (the pending columns' ``quantile_code``): none, usable (0), or
# why they are refused (an index of _REASONS).
NO_QUANTILES = -1
_REASONS = ("", REFUSED_NOT_FINITE, REFUSED_NEGATIVE, REFUSED_NO_LIMIT, REFUSED_LEVELS)
_CODE_LEVELS = 4


def quantiles_refused(levels, seconds, requested_time: float) -> str:
    """Why a running job's predicted quantiles (``seconds`` at ``levels``) cannot be used, or
    "" when they can."""
    lv = np.asarray(levels, dtype=np.float64).reshape(-1)
    q = np.asarray(seconds, dtype=np.float64).reshape(-1)
    if len(lv) == 0 or len(lv) != len(q) or not np.all(np.isfinite(lv)):
        return REFUSED_LEVELS
    if lv[0] <= 0.0 or lv[-1] >= 1.0 or np.any(np.diff(lv) <= 0.0):
        return REFUSED_LEVELS
    if not np.all(np.isfinite(q)):
        return REFUSED_NOT_FINITE
    if np.any(q < 0.0):
        return REFUSED_NEGATIVE
    if not (np.isfinite(requested_time) and requested_time > 0.0):
        return REFUSED_NO_LIMIT
    return ""


def median_runtime_given_elapsed(levels, seconds, requested_time: float, elapsed: float) -> tuple[float, str]:
    """A running job's predicted runtime given that it has run ``elapsed`` seconds: the median
    of its predicted distribution above what it has run, Q(F(e) + (1 - F(e)) / 2) (round 6's
    H4, the rule of the offline study's ``quantiles-*`` estimators), between the elapsed time
    and the request. The quantiles are sorted and capped by the request, as the predictor's
    own are. Returns (runtime, "") or (NaN, why) when the quantiles are refused
    (:func:`quantiles_refused`): never a negative runtime."""
    why = quantiles_refused(levels, seconds, requested_time)
    if why:
        return float("nan"), why
    q = np.minimum(np.sort(np.asarray(seconds, dtype=np.float64).reshape(-1)), requested_time)
    xs, ps = quantile_knots(
        np.log1p(q)[None, :], np.asarray(levels, dtype=np.float64), np.log1p([requested_time])
    )
    return float(conditional_quantile_runtime(xs[0], ps, float(elapsed), 0.5)), ""


def running_median_runtimes(running, now: float) -> tuple[np.ndarray | None, dict[int, str]]:
    """:func:`median_runtime_given_elapsed` for each running job (duck-typed
    :class:`rush.core.snapshot.RunningJob`: ``runtime_quantiles``, ``requested_time``, ``start``,
    ``job_id``) at ``now``: the runtimes (NaN where a job has none or they are refused; None when
    no job has any) and, by job id, why a job's quantiles were refused. The checks and knots
    per set of levels at once (:func:`_usable_groups`), the compiled rule per job."""
    n = len(running)
    code = np.full(n, NO_QUANTILES, dtype=np.int64)
    groups = _usable_groups(
        tuple(map(operator.attrgetter("runtime_quantiles"), running)),
        np.fromiter(map(operator.attrgetter("requested_time"), running), dtype=np.float64, count=n),
        code,
    )
    if groups is None:
        return None, {}
    # In the running jobs' order, as each job was checked in turn.
    refused = _refusals(
        code, np.fromiter(map(operator.attrgetter("job_id"), running), dtype=np.int64, count=n)
    )
    out = np.full(n, np.nan)
    start = np.fromiter(map(operator.attrgetter("start"), running), dtype=np.float64, count=n)
    for kept, lv, q, request in groups:
        xs, ps = quantile_knots(np.log1p(q), lv, np.log1p(request))
        elapsed = (now - start[kept]).tolist()
        out[kept] = [conditional_quantile_runtime(x, ps, e, 0.5) for x, e in zip(xs, elapsed, strict=True)]
    return out, refused


# Rule L2 (issue 29, round 12; sim/runtime_predictions/estimates/dev_log.md): a queued job
# occupies the start projection for this quantile of its predicted distribution, never less than
# its reservation estimate. A projection's start is a maximum over the ends ahead of a job, and
# the expected maximum of random runtimes exceeds the maximum of their means (the PERT bias), so
# a projection on means is early for long waits; 0.75 is the level round 6 tested (H3).
QUEUE_PROJECTION_LEVEL = 0.75
# Rule T (issue 29, round 30; the same dev_log.md; refuted as the default by its criterion there,
# offline 2-3 % worse on two traces, live 1-2 minutes closer on BLUE): L2's
# length raised to the mean with the mass above the top predicted quantile carried up to the
# request (:func:`tail_carried_mean`), the largest mean the predicted quantiles and the limit
# allow. A site chooses the rule (CoreConfig.estimate_rule, rush.core.names.ESTIMATE_RULES).


def rule_upper(upper: np.ndarray, tail: np.ndarray, rule: str = ESTIMATE_RULE_L2) -> np.ndarray:
    """The queued jobs' upper runtimes under ``rule``: L2's (``upper``, Q(0.75)), or under T the
    larger of it and the tail-carried mean ``tail`` (NaN where a job has neither)."""
    if rule == ESTIMATE_RULE_L2:
        return upper
    if rule != ESTIMATE_RULE_T:
        raise ValueError(f"unknown estimate rule {rule!r}: one of {', '.join(ESTIMATE_RULES)}")
    return np.fmax(upper, tail)


def queued_projection_runtimes(
    pending, est: np.ndarray, level: float = QUEUE_PROJECTION_LEVEL, rule: str = ESTIMATE_RULE_L2
) -> tuple[np.ndarray | None, dict[int, str]]:
    """Each queued job's runtime in the start projection: max(``est``, Q(``level``) of its
    predicted distribution), under rule T also its tail-carried mean, never above its request,
    for the jobs of ``pending`` (duck-typed
    :class:`rush.core.snapshot.PendingJob`: ``runtime_quantiles``, ``requested_time``,
    ``job_id``) with usable quantiles; NaN for the others (None when no job has any), and, by
    job id, why a job's quantiles were refused (:func:`quantiles_refused`'s reasons). The jobs'
    fields read once, then :func:`queued_projection_runtimes_of`."""
    n = len(pending)
    return queued_projection_runtimes_of(
        tuple(map(operator.attrgetter("runtime_quantiles"), pending)),
        np.fromiter(map(operator.attrgetter("requested_time"), pending), dtype=np.float64, count=n),
        np.fromiter(map(operator.attrgetter("job_id"), pending), dtype=np.int64, count=n),
        est,
        level,
        rule,
    )


def _usable_groups(
    quantiles: Sequence, requested_time: np.ndarray, code: np.ndarray, key: np.ndarray | None = None
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] | None:
    """The jobs of these columns (each job's ``runtime_quantiles`` or None, its request) whose
    quantiles are usable, per set of levels (groups in the order they first come, rows in queue
    order): (rows, levels, quantiles sorted and capped by the request (rows, k), request). Each
    job with quantiles gets its code in ``code`` (0: usable, else the index of its reason in
    _REASONS, :func:`quantiles_refused`'s); the others' stay; ``key``: each such job's set of
    levels as a number (the hash of (levels, how many quantiles)), for the refusals' order
    (:func:`_refusals`). None when no job has quantiles. Checked per set of levels at once,
    each group's rows found with C-level walks."""
    n = len(quantiles)
    given = np.flatnonzero(
        np.fromiter(map(operator.is_not, quantiles, repeat(None)), dtype=np.bool_, count=n)
    )
    if not len(given):
        return None
    listed = list(map(quantiles.__getitem__, given.tolist()))
    # (levels, how many quantiles) per job with quantiles; groups in the order they first come.
    keys = list(
        zip(
            map(tuple, map(operator.attrgetter("levels"), listed)),
            map(len, map(operator.attrgetter("seconds"), listed)),
            strict=True,
        )
    )
    group_of = {key: g for g, key in enumerate(dict.fromkeys(keys))}
    group = np.fromiter(map(group_of.__getitem__, keys), dtype=np.int64, count=len(keys))
    if key is not None:
        key[given] = np.array([hash(k) for k in group_of], dtype=np.int64)[group]
    groups = []
    for (levels, width), g in group_of.items():
        at = np.flatnonzero(group == g)  # positions among ``listed``, in queue order
        rows = given[at]
        lv = np.asarray(levels, dtype=np.float64)
        if quantiles_refused(lv, lv, 1.0) or width != len(lv):  # the levels, once per group
            code[rows] = _CODE_LEVELS
            continue
        seconds = np.fromiter(
            chain.from_iterable(map(operator.attrgetter("seconds"), map(listed.__getitem__, at.tolist()))),
            dtype=np.float64,
            count=len(rows) * width,
        ).reshape(len(rows), width)
        request = np.asarray(requested_time, dtype=np.float64)[rows]
        # The reason as a code (0: usable), in quantiles_refused's order.
        why = np.where(
            ~np.all(np.isfinite(seconds), axis=1),
            1,
            np.where(
                np.any(seconds < 0.0, axis=1), 2, np.where(np.isfinite(request) & (request > 0.0), 0, 3)
            ),
        )
        code[rows] = why
        ok = why == 0
        if ok.any():
            request = request[ok]
            q = np.minimum(np.sort(seconds[ok], axis=1), request[:, None])
            groups.append((rows[ok], lv, q, request))
    return groups


def _refusals(code: np.ndarray, job_id: np.ndarray, key: np.ndarray | None = None) -> dict[int, str]:
    """Why each refused job's quantiles were refused, by job id, in row order; with ``key``
    (each row's set of levels as a number), by set of levels in the order they first come among
    the rows with quantiles, then in row order (the order the rule checked them in)."""
    rows = np.flatnonzero(code > 0)
    if key is not None and len(rows) > 1:
        keys, first = np.unique(key[code != NO_QUANTILES], return_index=True)
        if len(keys) > 1:
            group_first = first[np.searchsorted(keys, key[rows])]
            rows = rows[np.lexsort((rows, group_first))]
    return dict(zip(job_id[rows].tolist(), map(_REASONS.__getitem__, code[rows].tolist()), strict=True))


def queued_projection_columns(
    quantiles: Sequence,
    requested_time: np.ndarray,
    level: float = QUEUE_PROJECTION_LEVEL,
    rule: str = ESTIMATE_RULE_L2,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What rule L2 (or T) needs of each queued job that does not depend on the pass, from its
    ``runtime_quantiles`` (or None) and request: (code: NO_QUANTILES, 0 usable, or why refused;
    its upper runtime under ``rule`` (:func:`rule_upper`; NaN where not usable); rule D2's
    projection shift (0.0: none); its set of levels as a number (0: no quantiles), for the
    refusals' order). :func:`queued_rule_columns` with the rule applied."""
    code, upper, tail, shift, key = queued_rule_columns(quantiles, requested_time, level)
    return code, rule_upper(upper, tail, rule), shift, key


def queued_rule_columns(
    quantiles: Sequence, requested_time: np.ndarray, level: float = QUEUE_PROJECTION_LEVEL
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every estimate rule's inputs of each queued job that do not depend on the pass: (code:
    NO_QUANTILES, 0 usable, or why refused; its runtime at ``level`` of its distribution closed
    at the request; its tail-carried mean (:func:`tail_carried_mean`; both NaN where not
    usable); rule D2's projection shift (0.0: none); its set of levels as a number (0: no
    quantiles), for the refusals' order). The core's pending columns keep them by row
    (:class:`rush.core.job_columns.PendingColumns`), so a pass reads no quantile object and
    picks the site's rule. Computed per model (one set of levels) at once (:func:`_usable_groups`)."""
    n = len(quantiles)
    code = np.full(n, NO_QUANTILES, dtype=np.int64)
    upper = np.full(n, np.nan)
    tail = np.full(n, np.nan)
    shift = np.zeros(n)
    key = np.zeros(n, dtype=np.int64)
    for kept, lv, q, request in _usable_groups(quantiles, requested_time, code, key) or ():
        xs, ps = quantile_knots(np.log1p(q), lv, np.log1p(request))
        i = min(max(int(np.searchsorted(ps, level, side="right")) - 1, 0), len(ps) - 2)
        w = (level - ps[i]) / (ps[i + 1] - ps[i])
        upper[kept] = np.expm1(xs[:, i] + w * (xs[:, i + 1] - xs[:, i]))
        tail[kept] = tail_carried_means(np.ascontiguousarray(xs), ps)
        shift[kept] = np.fromiter(
            map(operator.attrgetter("projection_shift"), map(quantiles.__getitem__, kept.tolist())),
            dtype=np.float64,
            count=len(kept),
        )
    return code, upper, tail, shift, key


def queued_projection_from_columns(
    derived: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    requested_time: np.ndarray,
    job_id: np.ndarray,
    est: np.ndarray,
) -> tuple[np.ndarray | None, dict[int, str]]:
    """Rule L2 (or T) from :func:`queued_projection_columns`' columns ``derived`` (code, upper runtime,
    shift, levels key), the jobs' requests and ids, and their reservation estimates ``est``:
    each usable job's projected runtime, max(``est``, its upper runtime), never above
    max(request, ``est``), rule D2's shift on top over each set of levels where a usable job has
    one; NaN for the others (None when no job has quantiles); and, by job id, why a job's
    quantiles were refused (by set of levels, as the rule checks them: :func:`_refusals`)."""
    code, upper, shift, key = derived
    if not np.any(code != NO_QUANTILES):
        return None, {}
    out = np.full(len(code), np.nan)
    kept = np.flatnonzero(code == 0)
    if len(kept):
        at_est = np.asarray(est, dtype=np.float64)[kept]
        request = np.asarray(requested_time, dtype=np.float64)[kept]
        out[kept] = np.minimum(np.maximum(at_est, upper[kept]), np.maximum(request, at_est))
        kept_shift = shift[kept]
        if np.any(kept_shift != 0.0):  # rule D2 (off by default): the length scaled by the user's drift,
            kept_key = key[kept]  # over each set of levels with a shift (as the rule checks them)
            for shifted in np.unique(kept_key[kept_shift != 0.0]).tolist():
                at = np.flatnonzero(kept_key == shifted)
                out[kept[at]] = drift_projection_length(out[kept[at]], kept_shift[at], request[at])
    return out, _refusals(code, np.asarray(job_id), key)


def queued_projection_runtimes_of(
    quantiles: Sequence,
    requested_time: np.ndarray,
    job_id: np.ndarray,
    est: np.ndarray,
    level: float = QUEUE_PROJECTION_LEVEL,
    rule: str = ESTIMATE_RULE_L2,
) -> tuple[np.ndarray | None, dict[int, str]]:
    """:func:`queued_projection_runtimes` from the queue's columns (the core's pending columns,
    :class:`rush.core.job_columns.PendingColumns`: each job's ``runtime_quantiles`` or None, its
    request and id), no job object read. Checked and computed per model (one set of levels)
    at once (:func:`_usable_groups`): a pass over 10,000 queued jobs."""
    derived = queued_projection_columns(quantiles, requested_time, level, rule)
    return queued_projection_from_columns(derived, requested_time, job_id, est)
