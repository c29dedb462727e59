"""Online learning by weeks: predict each week with a model trained on the past only.

Week 1: every job is predicted large (nothing has finished). At the end of each week:
the divider becomes the median runtime of all jobs finished so far; the classifier is
retrained on them (features as computed at their submission, labels runtime <= divider);
the next week's jobs are predicted.

A job counts as finished at its logged end, submit + wait + runtime, from the trace: the
offline loop replays what the original system knew. Runtimes are clipped at the
requested time (a job killed at its walltime ran p~).

Modes: ``weekly`` computes a week's lag and aggregation features at the week's start;
``live`` updates them as jobs finish within the week (what the daemon does).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rush.errors import ModelError
from rush.models.evaluation import classification_summary
from rush.models.runtime_class import LARGE, RuntimeClassifier
from rush.models.runtime_features import FEATURES, RuntimeHistory, local_time
from rush.workload.model import Workload

WEEK = 7 * 86400
MODES = ("weekly", "live")


@dataclass
class WalkForwardResult:
    predicted_class: np.ndarray  # per job, 0 small / 1 large
    divider: np.ndarray  # per job: the divider in force when it was predicted (NaN in week 1)
    features: np.ndarray
    runtime: np.ndarray  # clipped at the requested time
    weekly: list[dict] = field(default_factory=list)
    mode: str = "weekly"
    seconds: float = 0.0

    def divider_or_first(self) -> np.ndarray:
        """Per-job divider; week 1 (no history yet) is judged against the first one computed."""
        known = np.isfinite(self.divider)
        first = float(self.divider[known][0]) if known.any() else float("inf")
        return np.where(known, self.divider, first)

    def summary(self) -> dict:
        """Classification quality over the whole walk-forward run, week 1 included."""
        return classification_summary(self.runtime <= self.divider_or_first(), self.predicted_class == 0)


def logged_end(workload: Workload) -> np.ndarray:
    wait = workload.extra.get("wait")
    wait = np.zeros(len(workload)) if wait is None else np.maximum(np.asarray(wait, dtype=np.float64), 0.0)
    return workload.submit + wait + clipped_runtime(workload)


def clipped_runtime(workload: Workload) -> np.ndarray:
    return np.minimum(workload.runtime, workload.requested_time)


def predict_classes_walkforward(
    workload: Workload,
    trace_header: dict[str, str],
    mode: str = "weekly",
    estimator=None,
    model_path: str | Path | None = None,
    random_state: int = 0,
) -> WalkForwardResult:
    """Walk-forward predictions for every job (module docstring).

    With ``model_path``, a trained model is used for every week instead of retraining
    (its divider from the sidecar); features still come from the replayed history.
    """
    if mode not in MODES:
        raise ModelError(f"unknown mode {mode!r}", where="--mode", fix=f"use one of: {', '.join(MODES)}")
    started = time.perf_counter()
    n = len(workload)
    runtime = clipped_runtime(workload)
    end = logged_end(workload)
    local = local_time(workload.submit, trace_header)
    fixed_model = fixed_divider = None
    if model_path is not None:
        from rush.models.persistence import load_model

        fixed_model, meta = load_model(model_path, expected_features=list(FEATURES))
        fixed_divider = float(meta["divider"])

    history = RuntimeHistory()
    features = np.zeros((n, len(FEATURES)))
    predicted = np.full(n, LARGE, dtype=np.int64)
    divider_of = np.full(n, np.nan)
    finished_order = np.argsort(end, kind="stable")
    finished_count = 0
    weekly: list[dict] = []
    if n == 0:
        return WalkForwardResult(predicted, divider_of, features, runtime, weekly, mode)
    origin = float(workload.submit[0])
    week_of = ((workload.submit - origin) // WEEK).astype(np.int64)
    bounds = np.searchsorted(week_of, np.arange(week_of[-1] + 2))

    def finish_until(t: float) -> None:
        nonlocal finished_count
        while finished_count < n and end[finished_order[finished_count]] <= t:
            j = finished_order[finished_count]
            history.observe_finished(
                workload.user[j], workload.procs[j], workload.requested_time[j], local[j], runtime[j]
            )
            finished_count += 1

    model = None
    divider = np.nan
    for week in range(len(bounds) - 1):
        lo, hi = bounds[week], bounds[week + 1]
        week_start = origin + week * WEEK
        finish_until(week_start)
        done = finished_order[:finished_count]
        importances = None
        if fixed_model is not None:
            model, divider = fixed_model, fixed_divider
        elif finished_count:
            # Retrain on everything finished before this week.
            divider = float(np.median(runtime[done]))
            model = RuntimeClassifier(estimator=estimator, random_state=random_state)
            model.fit(features[done], np.where(runtime[done] <= divider, 0, 1))
            importances = model.feature_importances_
        if hi == lo:
            continue
        index = np.arange(lo, hi)
        if mode == "weekly":
            features[index] = history.features(
                workload.user[index],
                workload.procs[index],
                workload.requested_time[index],
                local[index],
                divider,
            )
        else:
            for j in index:
                finish_until(workload.submit[j])
                features[j] = history.features(
                    workload.user[j : j + 1],
                    workload.procs[j : j + 1],
                    workload.requested_time[j : j + 1],
                    local[j : j + 1],
                    divider,
                )[0]
        if model is not None:
            predicted[index] = model.predict(features[index])
        divider_of[index] = divider
        if np.isfinite(divider):
            quality = classification_summary(runtime[index] <= divider, predicted[index] == 0)
        else:
            quality = {"jobs": int(hi - lo)}
        quality |= {
            "week": week,
            "divider": divider,
            "trained_on": int(finished_count),
            "importances": None
            if importances is None
            else dict(zip(FEATURES, map(float, importances), strict=True)),
        }
        weekly.append(quality)
    return WalkForwardResult(
        predicted, divider_of, features, runtime, weekly, mode, seconds=time.perf_counter() - started
    )
