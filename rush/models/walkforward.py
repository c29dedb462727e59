"""Online learning by weeks: predict each week with a model trained on the past only.

Weeks are counted from the first submission. Week 1: every job is predicted large (nothing
has finished, there is no divider). At the start of every later week k:

1. the *training history* is every job that finished before the week starts (logged end
   ``submit + wait + runtime`` < week start; optionally only those that finished in the
   last ``train_weeks`` weeks);
2. the divider becomes the median of their runtimes (clipped at p~, as the simulator kills
   there);
3. the classifier is retrained on them: features as they were when each job was predicted,
   relabelled under the new divider, label = runtime > divider (0 small, 1 large);
4. the week's submissions are predicted.

The offline loop replays what the original system knew: "finished" follows the logged end
times. The live daemon uses real completion events instead (:mod:`rush.models.history`).
Times are on the one time base of :mod:`rush.models.runtime_pipeline` (the trace's times
plus its ``UnixStartTime``, calendar features in its zone); :func:`fit_on_history` builds
the deployable pipeline the daemon loads.

Modes (how fresh the lag and aggregation features are):

* ``weekly``: computed at the week's start, frozen for the week;
* ``live``: computed at each job's submission, from every job finished before it (the
  daemon's behaviour). The model and divider still change only at week boundaries.

Everything is vectorised (:class:`~rush.models.runtime_features.FinishedIndex`): per week
the cost is one forest fit and a few array passes, whichever the mode.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import clone

from rush.errors import ModelError
from rush.models.evaluation import classification_block, classification_summary
from rush.models.runtime_class import IDEMPOTENT_THRESHOLD, LARGE, SMALL, SMALL_THRESHOLD, RuntimeClassifier
from rush.models.runtime_features import (
    FEATURES,
    N_STATIC,
    FinishedIndex,
    TimeBase,
    category_codes,
    history_features,
    local_day,
    static_features,
    submit_stream,
)
from rush.models.runtime_pipeline import (
    MODES,
    WEEK,
    RuntimeFeatures,
    job_table,
    make_runtime_pipeline,
    runtime_labels,
)
from rush.models.users import trace_user_keys
from rush.workload.model import Workload


@dataclass
class WalkForwardResult:
    """Per-job predictions aligned with the workload (submit order), and per-week reports."""

    predicted_class: np.ndarray  # int8: 0 small, 1 large
    divider: np.ndarray  # float64: divider in force when the job was predicted (NaN: no history)
    runtime: np.ndarray  # float64: runtime clipped at p~ (what the labels use)
    week: np.ndarray  # int64: week index of the job's submission (0 = the first week)
    features: np.ndarray  # (n, len(FEATURES)): features the prediction used
    weekly_report: list[dict] = field(default_factory=list)
    importances: np.ndarray = field(default_factory=lambda: np.zeros((0, len(FEATURES))))
    mode: str = "weekly"
    seconds: float = 0.0
    feature_names: tuple[str, ...] = FEATURES
    # P(small) the week's model gave each job (NaN: no model that week, or none with
    # probabilities): lets a decision threshold be chosen without refitting (at_threshold).
    proba_small: np.ndarray | None = None
    # The classifier's threshold for idempotent jobs (None: the same decision for every job).
    idempotent_threshold: float | None = None

    def at_threshold(self, threshold: float) -> WalkForwardResult:
        """The same walk-forward with "small when P(small) >= threshold" as the decision;
        jobs without a probability keep their prediction (week 1: large)."""
        if self.proba_small is None:
            raise ModelError(
                "this walk-forward kept no probabilities",
                where="at_threshold",
                fix="run it with a classifier that has predict_proba",
            )
        if not 0.0 < threshold < 1.0:
            raise ModelError(
                f"threshold {threshold!r} is not a probability in (0, 1)",
                where="at_threshold",
                fix="give a value strictly between 0 and 1",
            )
        known = np.isfinite(self.proba_small)
        predicted = np.where(
            known, np.where(self.proba_small >= threshold, SMALL, LARGE), self.predicted_class
        ).astype(np.int8)
        return replace(self, predicted_class=predicted, idempotent_threshold=None)

    def for_idempotent(self) -> WalkForwardResult:
        """Predictions for jobs that may be killed and requeued at the divider: at the
        classifier's ``idempotent_threshold`` when it has one (else these predictions)."""
        if self.idempotent_threshold is None or self.proba_small is None:
            return self
        return self.at_threshold(self.idempotent_threshold)

    @property
    def weekly(self) -> list[dict]:
        return self.weekly_report

    def divider_or_first(self) -> np.ndarray:
        """Per-job divider; jobs predicted before any history are judged against the first one."""
        known = np.isfinite(self.divider)
        first = float(self.divider[known][0]) if known.any() else float(np.median(self.runtime))
        return np.where(known, self.divider, first)

    def actual_class(self) -> np.ndarray:
        return np.where(self.runtime <= self.divider_or_first(), 0, 1).astype(np.int8)

    def false_small(self) -> np.ndarray:
        """Per job: 1.0 where this decision called it small and it outran its divider (a kill at
        the divider if it is idempotent), 0.0 where not, NaN where no model decided (no divider:
        week 1): what ``walkforward_thresholds(reference_false_small=...)`` takes."""
        known = np.isfinite(self.divider)
        outran = self.runtime > np.where(known, self.divider, np.inf)
        return np.where(known, ((self.predicted_class == SMALL) & outran).astype(np.float64), np.nan)

    def summary(self) -> dict:
        """Classification quality over the whole run (week 1 included, all large)."""
        return classification_summary(self.actual_class() == 0, self.predicted_class == 0)

    def classification(self) -> dict:
        """The ``classification`` JSON block (the simulator adds kills and wasted area)."""
        return classification_block(self.actual_class() == 0, self.predicted_class == 0)


def published_job_set(workload: Workload) -> Workload:
    """The thesis's job set: jobs with runtime <= 0 or runtime >= the requested time dropped.

    An option (off by default: the full trace is what a live system sees); the published
    trace sizes match it. A job without a request has ``requested_time == runtime`` in a
    :class:`Workload`, so it is dropped too."""
    keep = (workload.runtime > 0) & (workload.runtime < workload.requested_time)
    return workload.subset(np.flatnonzero(keep))


def clipped_runtime(workload: Workload) -> np.ndarray:
    return np.minimum(workload.runtime, workload.requested_time).astype(np.float64)


def logged_end(workload: Workload) -> np.ndarray:
    """submit + wait + runtime from the trace (an unknown wait counts as 0)."""
    wait = workload.extra.get("wait")
    wait = np.zeros(len(workload)) if wait is None else np.maximum(np.asarray(wait, dtype=np.float64), 0.0)
    return workload.submit + wait + np.maximum(workload.runtime, 0.0)


# The issue-13 classifier, as the experiment, ``rush train`` and ``rush simulate --classes``
# use it: boosting (100 iterations), the chosen decision thresholds, weekly refits on the
# most recently finished jobs.
DEFAULT_ITERATIONS = 100
DEFAULT_MAX_TRAIN_JOBS = 20_000


def default_classifier() -> RuntimeClassifier:
    return RuntimeClassifier(
        estimator="hgb",
        n_estimators=DEFAULT_ITERATIONS,
        threshold=SMALL_THRESHOLD,
        idempotent_threshold=IDEMPOTENT_THRESHOLD,
    )


def _classifier(estimator: Any) -> RuntimeClassifier:
    if isinstance(estimator, RuntimeClassifier):
        return clone(estimator)
    return RuntimeClassifier(estimator=estimator)


@dataclass
class PreparedTrace:
    """The per-trace work shared by every week (and reusable across modes)."""

    static: np.ndarray
    runtime: np.ndarray
    end: np.ndarray
    index: FinishedIndex
    week: np.ndarray
    week_start: np.ndarray  # trace time of each week's start
    time_base: TimeBase


def prepare(
    workload: Workload, trace_header: dict[str, str] | None, timezone: str | None = None
) -> PreparedTrace:
    time_base = TimeBase.from_header(trace_header, timezone)
    local = time_base.clock.local(workload.submit + time_base.unix_start)
    runtime = clipped_runtime(workload)
    end = logged_end(workload)
    codes = category_codes(workload.user, workload.procs, workload.requested_time, local_day(local))
    origin = float(workload.submit[0]) if len(workload) else 0.0
    week = ((workload.submit - origin) // WEEK).astype(np.int64)
    n_weeks = int(week[-1]) + 1 if len(workload) else 0
    return PreparedTrace(
        static=static_features(
            workload.requested_time, workload.procs, local, submit_stream(workload.user, workload.submit)
        ),
        runtime=runtime,
        end=end,
        index=FinishedIndex(codes, end, runtime, workload.requested_time, workload.submit),
        week=week,
        week_start=origin + WEEK * np.arange(n_weeks, dtype=np.float64),
        time_base=time_base,
    )


def predict_classes_walkforward(
    workload: Workload,
    trace_header: dict[str, str] | None,
    mode: str = "weekly",
    estimator: Any = None,
    model_path: str | Path | None = None,
    *,
    train_weeks: int | None = None,
    max_train_jobs: int | None = None,
    prepared: PreparedTrace | None = None,
) -> WalkForwardResult:
    """Walk-forward predictions for every job of ``workload`` (module docstring).

    * ``estimator``: None (the default forest), a name from ``ESTIMATORS``, any scikit-learn
      classifier, or a configured :class:`RuntimeClassifier` (its size and seed, e.g.
      ``RuntimeClassifier(estimator="logreg", n_estimators=10)``).
    * ``model_path``: use that trained model (and its sidecar's divider) for every week
      instead of retraining; features still come from the replayed history. A model trained
      on the same trace has seen its future: its quality is optimistic.
    * ``train_weeks``: train only on jobs finished in the last ``train_weeks`` weeks (a
      sliding window; bounds the cost on long traces and follows workload drift).
    * ``max_train_jobs``: fit on the most recently finished jobs only (the divider is still
      the median of the whole training history); bounds a boosted model's weekly refit.
    * ``prepared``: reuse :func:`prepare`'s result across calls on the same workload.
    """
    if mode not in MODES:
        raise ModelError(f"unknown mode {mode!r}", where="--mode", fix=f"use one of: {', '.join(MODES)}")
    if max_train_jobs is not None and max_train_jobs < 1:
        raise ModelError(
            "max_train_jobs must be >= 1", where="max_train_jobs", fix="give a number of jobs, or none"
        )
    if train_weeks is not None and train_weeks < 1:
        raise ModelError(
            "train_weeks must be >= 1", where="train_weeks", fix="give a number of weeks, or none"
        )
    started = time.perf_counter()
    n = len(workload)
    p = prepared or prepare(workload, trace_header)
    fixed_model = fixed_divider = None
    if model_path is not None:
        from rush.models.runtime_pipeline import load_runtime_model

        pipeline, card = load_runtime_model(model_path)
        fixed_model, fixed_divider = pipeline.named_steps["classifier"], float(card["divider"])

    # When each job's history is read: its week's start (weekly) or its submission (live).
    tau = p.week_start[p.week] if mode == "weekly" else np.asarray(workload.submit, dtype=np.float64)
    lookup = p.index.lookup(np.arange(n), tau)
    end_order = np.argsort(p.end, kind="stable")
    sorted_end = p.end[end_order]

    features = np.empty((n, len(FEATURES)), dtype=np.float64)
    features[:, :N_STATIC] = p.static
    predicted = np.full(n, LARGE, dtype=np.int8)
    proba_small = np.full(n, np.nan)
    divider_of = np.full(n, np.nan)
    bounds = np.searchsorted(p.week, np.arange(len(p.week_start) + 1))
    weekly: list[dict] = []
    importances: list[np.ndarray] = []
    for week, week_start in enumerate(p.week_start):
        lo, hi = int(bounds[week]), int(bounds[week + 1])
        finished = int(np.searchsorted(sorted_end, week_start, side="left"))  # end < week start
        first = (
            0 if train_weeks is None else int(np.searchsorted(sorted_end, week_start - train_weeks * WEEK))
        )
        train = end_order[first:finished]
        report: dict = {"week": week, "start": float(week_start), "jobs": hi - lo, "trained_on": 0}
        if hi == lo:
            continue
        rows = np.arange(lo, hi)
        model, divider = None, float("nan")
        if fixed_model is not None:
            model, divider = fixed_model, fixed_divider
        elif len(train):
            divider = float(np.median(p.runtime[train]))
            if max_train_jobs is not None:
                train = train[-max_train_jobs:]  # end order: the most recently finished
            prefix = p.index.small_prefix(divider)
            X_train = np.empty((len(train), len(FEATURES)))
            X_train[:, :N_STATIC] = p.static[train]
            X_train[:, N_STATIC:] = history_features(lookup, train, divider, prefix)
            model = _classifier(estimator)
            model.fit(X_train, np.where(p.runtime[train] <= divider, 0, 1))
            report["trained_on"] = len(train)
            imp = getattr(model, "feature_importances_", None)
            if imp is not None:
                importances.append(np.asarray(imp, dtype=np.float64))
                report["importances"] = dict(zip(FEATURES, map(float, imp), strict=True))
        prefix = p.index.small_prefix(divider) if np.isfinite(divider) else None
        features[rows, N_STATIC:] = history_features(lookup, rows, divider, prefix)
        if model is not None:
            predicted[rows] = model.predict(features[rows])
            proba_small[rows] = _proba_small(model, features[rows])
        divider_of[rows] = divider
        report["divider"] = divider
        weekly.append(report)

    result = WalkForwardResult(
        predicted_class=predicted,
        divider=divider_of,
        runtime=p.runtime,
        week=p.week,
        features=features,
        weekly_report=weekly,
        importances=np.array(importances).reshape(-1, len(FEATURES)),
        mode=mode,
        proba_small=proba_small,
        idempotent_threshold=getattr(
            fixed_model if fixed_model is not None else estimator, "idempotent_threshold", None
        ),
    )
    # Per-week quality, judged against the divider in force (week 1: the first one).
    actual_small = result.actual_class() == 0
    for report in weekly:
        lo, hi = int(bounds[report["week"]]), int(bounds[report["week"] + 1])
        report.update(classification_summary(actual_small[lo:hi], predicted[lo:hi] == 0))
    result.seconds = time.perf_counter() - started
    return result


def _proba_small(model: Any, X: np.ndarray) -> np.ndarray:
    """P(class 0, small) per row; NaN when the model has no probabilities."""
    if not hasattr(model, "predict_proba"):
        return np.full(len(X), np.nan)
    classes = np.asarray(getattr(model, "classes_", [SMALL, LARGE]))
    proba = model.predict_proba(X)
    if SMALL not in classes:
        return np.zeros(len(X))
    return np.asarray(proba[:, int(np.flatnonzero(classes == SMALL)[0])], dtype=np.float64)


@dataclass
class TrainedModel:
    """A pipeline fitted on a whole history, with what its model card needs."""

    model: Any  # sklearn Pipeline: RuntimeFeatures, then RuntimeClassifier
    divider: float
    jobs: int
    metadata: dict


def fit_on_history(
    workload: Workload,
    trace_header: dict[str, str] | None,
    mode: str = "weekly",
    estimator: Any = None,
    *,
    n_estimators: int = 50,
    random_state: int | None = 0,
    user_names: dict[int, str] | None = None,
    timezone: str | None = None,
) -> TrainedModel:
    """Fit the deployable pipeline on every job of the trace (all have finished by its end).

    Features are those each job had when it was submitted (per ``mode``), labels against
    the divider of the whole history, the median clipped runtime. ``user_names``
    (``Trace.labels["user"]``, sacct) make the user keys match live Slurm names;
    ``timezone`` overrides the trace header's zone for the calendar features.
    """
    if mode not in MODES:
        raise ModelError(f"unknown mode {mode!r}", where="--mode", fix=f"use one of: {', '.join(MODES)}")
    if len(workload) == 0:
        raise ModelError("the trace has no jobs to train on", where=workload.name or "trace")
    time_base = TimeBase.from_header(trace_header, timezone)
    users, kind = trace_user_keys(workload.user, user_names)
    runtime = clipped_runtime(workload)
    table = job_table(
        workload.submit,
        users,
        workload.procs,
        workload.requested_time,
        time_base,
        runtime=workload.runtime,
        end=logged_end(workload),
    )
    divider = float(np.median(runtime))
    features = RuntimeFeatures(
        divider=divider,
        mode=mode,
        timezone=time_base.clock.timezone,
        utc_offset=time_base.clock.utc_offset,
        user_key_kind=kind,
    )
    model = make_runtime_pipeline(features, estimator, n_estimators, random_state)
    try:
        model.fit(table, runtime_labels(table, divider))
    except ValueError as exc:  # the jobs' own values (times out of range, ...): not a bug
        raise ModelError(
            f"cannot train on this trace: {exc}",
            where=workload.name or "trace",
            fix="check the trace's times and sizes (rush trace info TRACE)",
        ) from exc
    classifier = model.named_steps["classifier"]
    n = len(workload)
    metadata = {
        "model": "runtime-class",
        "features": list(FEATURES),
        "classes": classifier.classes_.tolist(),
        "divider": divider,
        "mode": mode,
        "estimator": type(classifier.model_).__name__ if classifier.model_ is not None else "constant",
        "time_base": time_base.to_dict(),
        "user_key_kind": kind,
        "training_window": {
            "trace": workload.name or "trace",
            "jobs": n,
            "first_submit": float(table.submit[0]),
            "last_submit": float(table.submit[-1]),
            "first_week": 0,
            "last_week": int((workload.submit[-1] - workload.submit[0]) // WEEK),
            "calendar_zone": time_base.clock.describe(),
        },
    }
    return TrainedModel(model, divider, n, metadata)
