"""The queue's predicted mean runtimes calibrated walk-forward, per band of the mean itself
(issue 29, round 8's H7 and H8 in ``sim/runtime_predictions/estimates/dev_log.md``), with the
deployed model's own rule (:mod:`rush.models.runtime_mean_bands`).

The mean read off the quantile function is too long for jobs predicted short and too short for
jobs predicted long, on every trace studied (D5 of that log): one factor for all jobs (H6) cannot
correct both. Here each period (a week) gets the bands the deployed model would fit
(:func:`rush.models.runtime_mean_bands.fit_mean_bands`) on the jobs that ended before the period
began: no future runtime enters them. With ``window`` (H8, deployed), only the ``window`` most
recently finished of them count (the rows the week's model was trained on).
"""

from __future__ import annotations

import numpy as np

from rush.models.runtime_mean_bands import MIN_JOBS, MeanBands, fit_mean_bands, mean_bands_of
from rush.models.runtime_quantiles_walkforward import WEEK

# The study's name for the deployed bands (floor(log2 mean), means under 1 s in band 0).
mean_bins = mean_bands_of


def period_bands(
    mean: np.ndarray,
    known: np.ndarray,
    submit: np.ndarray,
    end: np.ndarray,
    runtime: np.ndarray,
    *,
    period: float = WEEK,
    min_jobs: int = MIN_JOBS,
    window: int | None = None,
) -> list[tuple[np.ndarray, MeanBands]]:
    """(the jobs of one period, the bands fitted for it) for every period with jobs. ``known``:
    the jobs whose prediction and real ``runtime`` may enter the bands (a prediction was made
    and the job ran); ``end``: when each ended; periods count from the first submission;
    ``window``: only the jobs among the ``window`` most recently ended (of every known job)
    before the period count."""
    mean, submit, end, runtime = (np.asarray(a, dtype=np.float64) for a in (mean, submit, end, runtime))
    known = np.asarray(known, dtype=bool) & np.isfinite(end) & np.isfinite(mean) & np.isfinite(runtime)
    origin = float(submit.min())
    period_start = origin + np.floor((submit - origin) / period) * period
    order = np.argsort(np.where(known, end, np.inf), kind="stable")[: int(known.sum())]
    # Ended strictly before each job's period began, and the window's first of them.
    seen = np.searchsorted(end[order], period_start, side="left")
    first = np.zeros_like(seen) if window is None else np.maximum(seen - int(window), 0)
    out = []
    for lo, hi in sorted(set(zip(first.tolist(), seen.tolist(), strict=True))):
        rows = order[lo:hi]
        jobs = np.flatnonzero((first == lo) & (seen == hi))
        out.append((jobs, fit_mean_bands(mean[rows], runtime[rows], min_jobs)))
    return out


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
    """Each job's factor on its predicted ``mean``: its period's bands' (:func:`period_bands`)."""
    mean = np.asarray(mean, dtype=np.float64)
    factor = np.ones(len(mean))
    for jobs, bands in period_bands(
        mean, known, submit, end, runtime, period=period, min_jobs=min_jobs, window=window
    ):
        factor[jobs] = bands.factor(mean[jobs])
    return factor


def calibrated_means(mean: np.ndarray, requested_time: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """The means times their factors, never above the request (round 8's study rows; the
    deployed :meth:`MeanBands.apply` also keeps them at least 1 s)."""
    return np.minimum(
        np.asarray(mean, dtype=np.float64) * factor, np.asarray(requested_time, dtype=np.float64)
    )


__all__ = ["MIN_JOBS", "WEEK", "binned_mean_factors", "calibrated_means", "mean_bins", "period_bands"]
