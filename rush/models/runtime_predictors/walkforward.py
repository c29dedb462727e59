"""Walk-forward runtime predictions over a trace: the simulator's prediction source.

Jobs are predicted in submission order. Before the jobs submitted at time t are predicted,
the predictor observes every job that finished strictly before t (logged end ``submit +
wait + runtime``, as the runtime-class walk-forward, :mod:`rush.models.walkforward`), and,
at each ``retrain_every`` boundary counted from the first submission, is refit on all of
them: no future data. Submissions between two such changes are predicted in one call.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from rush.core.runtime_predictions import predicted_runtimes
from rush.models.runtime_predictors.protocol import RuntimeJobs, RuntimePredictor, usable_history
from rush.models.walkforward import logged_end
from rush.workload.model import Workload


@dataclass
class RuntimePredictions:
    """Per job of the workload (submit order): ``predicted`` (what the core schedules with:
    guarded, capped by the request), ``raw`` (what the predictor said), the actual
    ``runtime`` and the ``requested_time``; counts of the documented fallbacks."""

    predicted: np.ndarray
    raw: np.ndarray
    runtime: np.ndarray
    requested_time: np.ndarray
    dropped_history: int  # finished jobs not observed (NaN, infinite or negative runtime)
    clipped_history: int  # finished jobs observed with their runtime clipped to the request
    fallbacks: int  # predictions replaced by the request (NaN, infinite, <= 0)
    seconds: float

    def summary(self) -> dict:
        """Accuracy figures of the predictions (Tsafrir's: mean accuracy = min/max ratio)."""
        actual = np.minimum(np.maximum(self.runtime, 0.0), self.requested_time)
        p = self.predicted
        under = p < actual
        ratio = np.minimum(p, actual) / np.maximum(np.maximum(p, actual), 1.0)
        return {
            "jobs": len(p),
            "mean_absolute_error": float(np.mean(np.abs(p - actual))) if len(p) else None,
            "median_absolute_error": float(np.median(np.abs(p - actual))) if len(p) else None,
            "underpredicted": float(np.mean(under)) if len(p) else None,
            "mean_accuracy": float(np.mean(ratio)) if len(p) else None,
            "request_accuracy": float(
                np.mean(np.minimum(self.requested_time, actual) / np.maximum(self.requested_time, 1.0))
            )
            if len(p)
            else None,
            "fallbacks": self.fallbacks,
            "dropped_history": self.dropped_history,
            "clipped_history": self.clipped_history,
        }


def workload_jobs(workload: Workload) -> RuntimeJobs:
    """The workload as predictor columns; ``job_id`` is the row (submit order)."""
    return RuntimeJobs.of(
        workload.user,
        workload.submit,
        workload.procs,
        workload.requested_time,
        runtime=workload.runtime,
        end=logged_end(workload),
    )


def predict_walkforward(workload: Workload, predictor: RuntimePredictor) -> RuntimePredictions:
    """Each job's prediction at its submission (module docstring)."""
    started = time.perf_counter()
    jobs = workload_jobs(workload)
    n = len(jobs)
    order = np.lexsort((np.arange(n), jobs.end))  # completions by end, ties by submit order
    finished = jobs.take(order)
    finished_usable, dropped, clipped = usable_history(finished)
    # Completions strictly before each submission; the usable ones among them.
    usable_end = finished_usable.end
    seen = np.searchsorted(usable_end, jobs.submit, side="left")
    period = predictor.retrain_every
    t0 = float(jobs.submit[0]) if n else 0.0
    epoch = np.floor((jobs.submit - t0) / period).astype(np.int64) if period else np.zeros(n, np.int64)
    pending = jobs.take(slice(None))
    pending = RuntimeJobs(
        pending.job_id,
        pending.user,
        pending.submit,
        pending.procs,
        pending.requested_time,
        np.full(n, np.nan),
        np.full(n, np.nan),
    )
    raw = np.empty(n, dtype=np.float64)
    # Groups of consecutive submissions with the same history and model.
    change = np.flatnonzero((np.diff(seen) != 0) | (np.diff(epoch) != 0)) + 1
    bounds = np.concatenate(([0], change, [n])) if n else np.zeros(1, np.int64)
    observed = 0
    fitted_epoch = 0
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        upto = int(seen[a])
        if upto > observed:
            predictor.observe(finished_usable.take(slice(observed, upto)))
            observed = upto
        if period and epoch[a] > fitted_epoch:
            predictor.fit(finished_usable.take(slice(0, observed)))
            fitted_epoch = int(epoch[a])
        raw[a:b] = np.asarray(predictor.predict(pending.take(slice(a, b))), dtype=np.float64)
    predicted = predicted_runtimes(raw, np.ascontiguousarray(jobs.requested_time))
    fallbacks = int(np.sum(~(np.isfinite(raw) & (raw > 0))))
    return RuntimePredictions(
        predicted=predicted,
        raw=raw,
        runtime=np.asarray(workload.runtime, dtype=np.float64),
        requested_time=np.asarray(workload.requested_time, dtype=np.float64),
        dropped_history=dropped,
        clipped_history=clipped,
        fallbacks=fallbacks,
        seconds=time.perf_counter() - started,
    )
