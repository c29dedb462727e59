"""rush's quantile predictor behind the runtime-predictor interface of issue 29's core work.

:class:`RuntimeQuantilePredictor` implements the protocol of
``rush.models.runtime_predictors.protocol.RuntimePredictor`` (branch ``rtcore``: ``observe``
finished jobs in end order, ``fit`` on every finished job at each ``retrain_every`` boundary,
``predict`` one runtime per submitted job; the core's guard turns NaN or non-positive values
into the request and caps the rest by it). It reads the columns of that protocol's
``RuntimeJobs`` (``job_id``, ``user``, ``submit``, ``procs``, ``requested_time``, ``runtime``,
``end``) by name, so it needs no import of it; ``app`` and ``queue`` are read when present.

Which number of the distribution a use takes is ``statistic``: ``"mean"`` (the default: a
runtime that is added up, as a backfilling reservation or a start estimate does) or a
quantile level such as 0.5 or 0.9 (the nearest predicted level); ``feature_set`` the columns
(:data:`~rush.models.runtime_quantiles_features.FEATURE_SETS`), computed from the finished jobs
observed (user, processors, request, runtime, end), so every set works from what a shell has. Each retraining fits a :class:`RuntimeQuantileRegressor`
on the ``max_train_jobs`` most recently finished jobs, features as of their own submission;
``observe`` feeds the live history the features of new submissions are read from.

Trace times are seconds since the log's start: ``unix_start`` (the trace's ``UnixStartTime``)
puts them on the Unix time base the calendar features are read on, ``timezone`` is the site's
zone. Before the first fit every prediction is the job's request (the documented fallback: a
prediction is never NaN nor negative).

The whole-trace path with the same protocol (weekly refits, features at each submission) and
no per-submission calls is :func:`rush.models.runtime_quantiles_walkforward.predict_quantiles_walkforward`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rush.models.runtime_features import Clock
from rush.models.runtime_quantiles import RuntimeQuantileRegressor, mean_of_quantiles
from rush.models.runtime_quantiles_features import (
    DEFAULT_FEATURE_SET,
    REQUEST_COLUMN,
    QuantileHistory,
    QuantileJobs,
    clipped,
    offline_features,
)
from rush.models.runtime_quantiles_walkforward import DEFAULT_MAX_TRAIN_JOBS, WEEK


def _columns(jobs: Any, unix_start: float) -> QuantileJobs:
    """A protocol ``RuntimeJobs`` (or any object with those columns) as quantile columns."""
    return QuantileJobs(
        user=np.asarray(jobs.user, dtype=np.int64),
        procs=np.asarray(jobs.procs, dtype=np.int64),
        requested_time=np.asarray(jobs.requested_time, dtype=np.float64),
        submit=np.asarray(jobs.submit, dtype=np.float64) + unix_start,
        app=getattr(jobs, "app", None),
        queue=getattr(jobs, "queue", None),
        runtime=None if getattr(jobs, "runtime", None) is None else np.asarray(jobs.runtime, np.float64),
        end=None if getattr(jobs, "end", None) is None else np.asarray(jobs.end, np.float64) + unix_start,
    )


class RuntimeQuantilePredictor:
    """The runtime-predictor protocol over rush's quantile model (module docstring)."""

    retrain_every: float | None = float(WEEK)

    def __init__(
        self,
        statistic: str | float = "mean",
        regressor: RuntimeQuantileRegressor | None = None,
        *,
        unix_start: float = 0.0,
        timezone: str | None = None,
        max_train_jobs: int | None = DEFAULT_MAX_TRAIN_JOBS,
        feature_set: str = DEFAULT_FEATURE_SET,
    ) -> None:
        if statistic != "mean" and not (isinstance(statistic, float | int) and 0.0 < float(statistic) < 1.0):
            raise ValueError(f"statistic {statistic!r} is neither 'mean' nor a quantile level in (0, 1)")
        self.statistic = statistic
        self.regressor = regressor
        self.unix_start = float(unix_start)
        self.clock = Clock.of(timezone)
        self.max_train_jobs = max_train_jobs
        self.feature_set = feature_set
        self.history_ = QuantileHistory(self.clock, feature_set)
        self.model_: RuntimeQuantileRegressor | None = None
        # job id -> its uncalibrated predicted mean at its last prediction: the out-of-sample
        # means a retrain calibrates the mean's bands on (rush.models.runtime_mean_bands).
        self.predicted_mean_: dict[int, float] = {}

    def observe(self, done: Any) -> None:
        """Finished jobs, in end order: their runtimes enter the live history."""
        jobs = _columns(done, self.unix_start)
        if len(jobs):
            self.history_.observe_finished(jobs)

    def fit(self, history: Any) -> RuntimeQuantilePredictor:
        """Refit on every finished job (each one's features as of its submission)."""
        from sklearn.base import clone

        jobs = _columns(history, self.unix_start)
        if not len(jobs):
            return self
        X = offline_features(jobs, self.clock, feature_set=self.feature_set)
        runtime = clipped(jobs.runtime, jobs.requested_time)
        rows = np.argsort(jobs.end, kind="stable")
        if self.max_train_jobs is not None:
            rows = rows[-self.max_train_jobs :]
        template = self.regressor or RuntimeQuantileRegressor()
        try:
            model = clone(template).fit(X[rows], runtime[rows])
        except ValueError:  # no usable runtime yet: keep the previous model (or none)
            return self
        ids = getattr(history, "job_id", None)
        if ids is not None:  # the earlier models' predictions of the training rows (H8)
            ids = np.asarray(ids, dtype=np.int64)
            kept = ids[rows].tolist()
            mean = np.array([self.predicted_mean_.get(i, np.nan) for i in kept], dtype=np.float64)
            model.calibrate_mean(mean, runtime[rows])
            # Finished before the window: no later window holds them (the memory stays bounded).
            for i in set(ids.tolist()).difference(kept):
                self.predicted_mean_.pop(i, None)
        self.model_ = model
        return self

    def predict(self, jobs: Any) -> np.ndarray:
        """One runtime per job (seconds); the request before the first fit."""
        return self.predict_with_quantiles(jobs)[0]

    def predict_with_quantiles(self, jobs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """One runtime per job (seconds), the quantile levels and each job's predicted quantiles
        (seconds, (n, levels)) from the same features (one call: predicting observes the jobs'
        submissions); before the first fit the request and no quantiles (None)."""
        columns = _columns(jobs, self.unix_start)
        n = len(columns)
        if self.model_ is None or n == 0:
            return np.asarray(columns.requested_time, dtype=np.float64).copy(), np.empty(0), None
        columns.runtime = columns.end = None
        self.history_.observe_submitted(columns.user, columns.submit)
        X = self.history_.features(columns)
        log_q = self.model_.predict_log_quantiles(X)
        levels = np.asarray(self.model_.levels_, dtype=np.float64)
        if self.statistic == "mean":
            point = self.model_.calibrated_mean(log_q, X[:, REQUEST_COLUMN])
            ids = getattr(jobs, "job_id", None)
            if ids is not None and self.retrain_every is not None:  # a model refit here (not a file's)
                plain = mean_of_quantiles(log_q, levels, X[:, REQUEST_COLUMN])
                self.predicted_mean_.update(
                    zip(np.asarray(ids, dtype=np.int64).tolist(), plain.tolist(), strict=True)
                )
        else:
            point = np.expm1(log_q[:, int(np.argmin(np.abs(levels - float(self.statistic))))])
        return point, levels, np.expm1(log_q)
