"""The queue's predicted mean runtimes calibrated walk-forward, per bin of the mean itself
(issue 29, round 8's H7 in ``sim/runtime_predictions/estimates/dev_log.md``).

The mean read off the quantile function is too long for jobs predicted short and too short for
jobs predicted long, on every trace studied (D5 of that log): one factor for all jobs (H6) cannot
correct both. Here a job's factor is, for the bin of its predicted mean (a factor of 2 wide:
floor(log2 mean)), the sum of the real runtimes over the sum of the predicted means of that bin's
jobs that ended before the job's week began: no future runtime enters it. A bin resting on fewer
than ``min_jobs`` such jobs keeps its mean (factor 1). With ``window`` (H8), only the bin's jobs
among the ``window`` most recently finished before the week count (the rows the week's model was
trained on).
"""

from __future__ import annotations

import numpy as np

from rush.models.runtime_quantiles_walkforward import WEEK

MIN_JOBS = 100


def mean_bins(mean: np.ndarray) -> np.ndarray:
    """The bin of each predicted mean: floor(log2 mean), means under 1 s in bin 0."""
    return np.floor(np.log2(np.maximum(np.asarray(mean, dtype=np.float64), 1.0))).astype(np.int64)


def binned_mean_factors(
    mean: np.ndarray,
    known: np.ndarray,
    submit: np.ndarray,
    end: np.ndarray,
    runtime: np.ndarray,
    *,
    period: float = WEEK,
    min_jobs: int = MIN_JOBS,
    window: int | None = None,
) -> np.ndarray:
    """Each job's factor on its predicted ``mean``. ``known``: the jobs whose prediction and
    real ``runtime`` may enter a factor (a prediction was made and the job ran); ``end``: when
    each ended; periods count from the first submission; ``window``: only the jobs among the
    ``window`` most recently ended (of every known job) before the period count."""
    mean, submit, end, runtime = (np.asarray(a, dtype=np.float64) for a in (mean, submit, end, runtime))
    known = np.asarray(known, dtype=bool) & np.isfinite(end) & np.isfinite(mean) & np.isfinite(runtime)
    origin = float(submit.min())
    period_start = origin + np.floor((submit - origin) / period) * period
    bins = mean_bins(mean)
    order = np.argsort(np.where(known, end, np.inf), kind="stable")[: int(known.sum())]
    ends = end[order]
    # Ended strictly before each job's period began, and the window's first of them.
    seen = np.searchsorted(ends, period_start, side="left")
    first = np.zeros_like(seen) if window is None else np.maximum(seen - int(window), 0)
    factor = np.ones(len(mean))
    for b in np.unique(bins):
        inside = bins[order] == b
        real = np.concatenate([[0.0], np.cumsum(np.where(inside, runtime[order], 0.0))])
        predicted = np.concatenate([[0.0], np.cumsum(np.where(inside, mean[order], 0.0))])
        count = np.concatenate([[0], np.cumsum(inside)])
        mine = bins == b
        hi, lo = seen[mine], first[mine]
        jobs, r, p = count[hi] - count[lo], real[hi] - real[lo], predicted[hi] - predicted[lo]
        enough = (jobs >= min_jobs) & (p > 0)
        factor[mine] = np.where(enough, r / np.where(enough, p, 1.0), 1.0)
    return factor


def calibrated_means(mean: np.ndarray, requested_time: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """The means times their factors, never above the request."""
    return np.minimum(
        np.asarray(mean, dtype=np.float64) * factor, np.asarray(requested_time, dtype=np.float64)
    )


__all__ = ["MIN_JOBS", "WEEK", "binned_mean_factors", "calibrated_means", "mean_bins"]
