"""The reference of rule L2 that tests compare the pending columns with: the per-job rule.

Shared by ``tests/core/test_queued_projection_columns.py`` and
``tests/planner/test_columns_l2_variation.py`` (a test module must not import another).
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from rush.core.remaining_runtime import (
    QUEUE_PROJECTION_LEVEL,
    REFUSED_LEVELS,
    REFUSED_NEGATIVE,
    REFUSED_NO_LIMIT,
    REFUSED_NOT_FINITE,
    quantile_knots,
    quantiles_refused,
)
from rush.core.runtime_drift import drift_projection_length


def l2_reference(pending, est: np.ndarray, level: float = QUEUE_PROJECTION_LEVEL):
    """Rule L2 as a pass computed it from each core job's quantile objects (main at 1535d3b):
    per set of levels, D2 per set of levels, refusals in the order it checked them."""
    groups: dict[tuple[tuple[float, ...], int], list[int]] = {}
    for k, p in enumerate(pending):
        q = p.runtime_quantiles
        if q is not None:
            groups.setdefault((tuple(q.levels), len(q.seconds)), []).append(k)
    if not groups:
        return None, {}
    out = np.full(len(pending), np.nan)
    refused: dict[int, str] = {}
    est = np.asarray(est, dtype=np.float64)
    for (levels, width), rows in groups.items():
        lv = np.asarray(levels, dtype=np.float64)
        if quantiles_refused(lv, lv, 1.0) or width != len(lv):
            refused.update((pending[k].job_id, REFUSED_LEVELS) for k in rows)
            continue
        seconds = np.fromiter(
            chain.from_iterable(pending[k].runtime_quantiles.seconds for k in rows),
            dtype=np.float64,
            count=len(rows) * width,
        ).reshape(len(rows), width)
        request = np.array([pending[k].requested_time for k in rows], dtype=np.float64)
        why = np.where(
            ~np.all(np.isfinite(seconds), axis=1),
            REFUSED_NOT_FINITE,
            np.where(
                np.any(seconds < 0.0, axis=1),
                REFUSED_NEGATIVE,
                np.where(np.isfinite(request) & (request > 0.0), "", REFUSED_NO_LIMIT),
            ),
        )
        ok = why == ""
        refused.update((pending[rows[i]].job_id, str(why[i])) for i in np.flatnonzero(~ok).tolist())
        if not ok.any():
            continue
        kept = np.asarray(rows, dtype=np.int64)[ok]
        request = request[ok]
        q = np.minimum(np.sort(seconds[ok], axis=1), request[:, None])
        xs, ps = quantile_knots(np.log1p(q), lv, np.log1p(request))
        i = min(max(int(np.searchsorted(ps, level, side="right")) - 1, 0), len(ps) - 2)
        w = (level - ps[i]) / (ps[i + 1] - ps[i])
        upper = np.expm1(xs[:, i] + w * (xs[:, i + 1] - xs[:, i]))
        at = est[kept]
        out[kept] = np.minimum(np.maximum(at, upper), np.maximum(request, at))
        shift = np.array([pending[k].runtime_quantiles.projection_shift for k in kept.tolist()])
        if np.any(shift != 0.0):
            out[kept] = drift_projection_length(out[kept], shift, request)
    return out, refused
