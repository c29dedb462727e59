"""The runtime-quantile predictor walked forward by weeks, as the runtime classifier is.

Weeks count from the first submission. At the start of week k >= 1 (week 0 has no history:
every job gets its request as every quantile and the class large):

1. the training history is every job whose logged end (submit + wait + runtime) is strictly
   before the week's start, the ``max_train_jobs`` most recently finished of them;
2. the divider is the median clipped runtime of *all* jobs finished before the week (the
   classifier's rule, so both are judged against the same classes);
3. a :class:`RuntimeQuantileRegressor` is fitted on their features *as of their own
   submission* and their runtimes;
4. the week's jobs get their features at their submission (``live``: every job finished
   before it, as the daemon sees it), their quantiles and P(runtime <= divider);
5. the class is small when P(small) >= the week's threshold: the threshold of
   :data:`THRESHOLDS` with the best accuracy over every earlier job that had a prediction
   *and* had finished before the week (its class is then known); ties go to the one nearest
   0.5, and 0.5 before any such job. No future data enters any step.

A :class:`ReplaySchedule` replaces the logged start and end of some jobs by a replay's (issue 29,
round 27: the predictor learning from what a simulated schedule finished); every step above then
reads the replay's times.

The idempotent decision (jobs rush may kill at the divider and requeue as large) uses rush's
``IDEMPOTENT_THRESHOLD``, chosen on development traces for the classifier's P(small)
(:mod:`rush.models.decision_thresholds`), not tuned here.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field, replace

import numpy as np

from rush.errors import ModelError
from rush.models.decision_thresholds import IDEMPOTENT_THRESHOLD
from rush.models.runtime_features import TimeBase
from rush.models.runtime_quantiles import QUANTILES, RuntimeQuantileRegressor
from rush.models.runtime_quantiles_features import (
    DEFAULT_FEATURE_SET,
    QuantileJobs,
    clipped,
    feature_names,
    offline_features,
    usable_history,
)
from rush.workload.model import Workload

WEEK = 7 * 86400
THRESHOLDS = np.round(np.arange(0.05, 0.951, 0.05), 2)
DEFAULT_THRESHOLD = 0.5
DEFAULT_MAX_TRAIN_JOBS = 10_000


def default_regressor() -> RuntimeQuantileRegressor:
    return RuntimeQuantileRegressor()


def trace_jobs(workload: Workload, time_base: TimeBase) -> QuantileJobs:
    """A workload's jobs on the one time base, with their logged ends (unknown wait: 0)."""
    shift = time_base.unix_start
    wait = workload.extra.get("wait")
    wait = np.zeros(len(workload)) if wait is None else np.maximum(np.asarray(wait, dtype=np.float64), 0.0)
    runtime = np.asarray(workload.runtime, dtype=np.float64)
    return QuantileJobs(
        user=np.asarray(workload.user, dtype=np.int64),
        procs=np.asarray(workload.procs, dtype=np.int64),
        requested_time=np.asarray(workload.requested_time, dtype=np.float64),
        submit=np.asarray(workload.submit, dtype=np.float64) + shift,
        app=workload.extra.get("app"),
        queue=workload.extra.get("queue"),
        runtime=runtime,
        end=np.asarray(workload.submit, dtype=np.float64)
        + wait
        + np.maximum(np.nan_to_num(runtime), 0.0)
        + shift,
        start=np.asarray(workload.submit, dtype=np.float64) + wait + shift,
    )


@dataclass
class ReplaySchedule:
    """Each job's start and end as a replay ran them, on the workload's clock (as
    ``workload.submit``), in place of the logged ones; NaN in both: not replayed, the log's
    times stay. ``fits`` keeps week fits across walk-forwards of the same workload and model
    under a digest of every input of the fit (a refit with the same inputs gives the same
    predictions: the model's ``random_state`` is fixed and it stops on no validation split)."""

    start: np.ndarray
    end: np.ndarray
    fits: dict = field(default_factory=dict)

    def applied(self, jobs: QuantileJobs, shift: float) -> QuantileJobs:
        """``jobs`` (times already shifted by ``shift``) with the replayed rows' times."""
        start = np.asarray(self.start, dtype=np.float64)
        end = np.asarray(self.end, dtype=np.float64)
        if start.shape != (len(jobs),) or end.shape != (len(jobs),):
            raise ModelError(
                f"a replay schedule of {start.shape} starts and {end.shape} ends for {len(jobs)} jobs",
                where="schedule",
                fix="give one start and one end per job of the workload (NaN: keep the log's)",
            )
        replayed = np.isfinite(end)
        if not np.array_equal(replayed, np.isfinite(start)) or np.any(end[replayed] < start[replayed]):
            raise ModelError(
                "a replayed job needs a finite start at or before its finite end",
                where="schedule",
                fix="give both times of a replayed job, or NaN in both",
            )
        return replace(
            jobs,
            start=np.where(replayed, start + shift, jobs.start),
            end=np.where(replayed, end + shift, jobs.end),
        )


def training_rows(
    end_order: np.ndarray, sorted_end: np.ndarray, week_start: float, max_train_jobs: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """(every job ended strictly before ``week_start``, the ``max_train_jobs`` of them that
    ended last), in end order (``end_order`` sorts the ends into ``sorted_end``)."""
    finished = end_order[: int(np.searchsorted(sorted_end, week_start, side="left"))]
    return finished, finished if max_train_jobs is None else finished[-max_train_jobs:]


@dataclass
class QuantileWalkForward:
    """Per job (workload order): the quantiles it was predicted, P(small) and its class."""

    levels: np.ndarray  # (k,) quantile levels
    quantiles: np.ndarray  # (n, k) seconds
    proba_small: np.ndarray  # (n,) NaN: week 0, no model
    divider: np.ndarray  # (n,) NaN: week 0
    threshold: np.ndarray  # (n,) the plain decision's threshold in force
    predicted_class: np.ndarray  # int8, 0 small, 1 large (plain decision)
    runtime: np.ndarray  # clipped at the request
    requested_time: np.ndarray
    week: np.ndarray
    features: np.ndarray
    weekly: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    fit_seconds: list[float] = field(default_factory=list)
    end: np.ndarray | None = None  # logged ends on the time base (inf: not in any history)
    submit: np.ndarray | None = None  # submissions on the time base
    feature_set: str = "base"  # the columns of ``features`` (FEATURE_SETS)
    max_train_jobs: int | None = DEFAULT_MAX_TRAIN_JOBS  # each week's training rows

    def calibrated_mean(self) -> np.ndarray:
        """Each job's mean as its week's model gives it live: the predicted mean times the factor
        of its band (rush.models.runtime_mean_bands), the bands fitted on that week's training
        rows (the ``max_train_jobs`` most recently ended before the week) from their own
        out-of-sample predictions (their weeks' models); a job without a model keeps its mean."""
        from rush.models.runtime_mean_bands import fit_mean_bands

        mean = self.mean()
        out = mean.copy()
        if self.end is None or self.submit is None or not len(mean):
            return out
        predicted = np.isfinite(self.proba_small)
        origin = float(self.submit[0])
        end_order = np.argsort(self.end, kind="stable")
        sorted_end = self.end[end_order]
        bounds = np.searchsorted(self.week, np.arange(int(self.week[-1]) + 2))
        for k in range(len(bounds) - 1):
            lo, hi = int(bounds[k]), int(bounds[k + 1])
            if hi == lo or not predicted[lo:hi].any():
                continue
            _, train = training_rows(end_order, sorted_end, origin + WEEK * k, self.max_train_jobs)
            train = train[predicted[train]]
            bands = fit_mean_bands(mean[train], self.runtime[train])
            out[lo:hi] = bands.apply(mean[lo:hi], self.requested_time[lo:hi])
        return out

    def quantile(self, level: float) -> np.ndarray:
        """The predicted quantile at ``level`` (one of ``levels``), seconds."""
        hits = np.flatnonzero(np.isclose(self.levels, level))
        if not len(hits):
            raise ModelError(
                f"no quantile {level} was predicted",
                where="quantile",
                fix=f"use one of {self.levels.tolist()}",
            )
        return self.quantiles[:, int(hits[0])]

    def mean(self) -> np.ndarray:
        """Each job's predicted mean runtime (seconds) from its quantiles."""
        from rush.models.runtime_quantiles import mean_of_quantiles

        return mean_of_quantiles(np.log1p(self.quantiles), self.levels, np.log1p(self.requested_time))

    def class_walkforward(self):
        """The classes as a :class:`~rush.models.walkforward.WalkForwardResult` (what the
        runtime-class simulations take), idempotent jobs at ``IDEMPOTENT_THRESHOLD``."""
        from rush.models.walkforward import WalkForwardResult

        return WalkForwardResult(
            predicted_class=self.predicted_class,
            divider=self.divider,
            runtime=self.runtime,
            week=self.week,
            features=self.features,
            weekly_report=self.weekly,
            mode="live",
            seconds=self.seconds,
            feature_names=feature_names(self.feature_set),
            proba_small=self.proba_small,
            idempotent_threshold=IDEMPOTENT_THRESHOLD,
        )


def predict_quantiles_walkforward(
    workload: Workload,
    trace_header: dict[str, str] | None,
    regressor: RuntimeQuantileRegressor | None = None,
    *,
    max_train_jobs: int | None = DEFAULT_MAX_TRAIN_JOBS,
    timezone: str | None = None,
    n_jobs: int = 1,
    feature_set: str = DEFAULT_FEATURE_SET,
    schedule: ReplaySchedule | None = None,
) -> QuantileWalkForward:
    """Walk-forward predictions for every job of ``workload`` (module docstring); ``n_jobs``
    weeks are fitted at once (joblib processes; the result is the same); ``feature_set``: the
    columns (:data:`~rush.models.runtime_quantiles_features.FEATURE_SETS`); ``schedule``: a
    replay's starts and ends in place of the logged ones (its ``fits`` spare refits of weeks
    whose inputs an earlier walk-forward fitted)."""
    from sklearn.base import clone
    from sklearn.utils.parallel import Parallel, delayed  # propagates scikit-learn's config to workers

    if max_train_jobs is not None and max_train_jobs < 1:
        raise ModelError("max_train_jobs must be >= 1", where="max_train_jobs", fix="give a number or none")
    started = time.perf_counter()
    template = regressor or default_regressor()
    jobs, features, runtime, end = walkforward_inputs(workload, trace_header, timezone, feature_set, schedule)
    n = len(jobs)
    levels = np.asarray(template.quantiles, dtype=np.float64)
    quantiles = np.repeat(np.asarray(jobs.requested_time, dtype=np.float64)[:, None], len(levels), axis=1)
    proba = np.full(n, np.nan)
    divider = np.full(n, np.nan)
    submit = jobs.submit
    origin = float(submit[0]) if n else 0.0
    week = ((submit - origin) // WEEK).astype(np.int64)
    n_weeks = int(week[-1]) + 1 if n else 0
    bounds = np.searchsorted(week, np.arange(n_weeks + 1))
    end_order = np.argsort(end, kind="stable")
    sorted_end = end[end_order]
    # The weeks' fits depend on the past only, not on each other: they may run in parallel.
    tasks = []
    for k in range(n_weeks):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        finished, train = training_rows(end_order, sorted_end, origin + WEEK * k, max_train_jobs)
        if hi > lo and len(finished):
            tasks.append((k, lo, hi, train, float(np.median(runtime[finished]))))
    memo = {} if schedule is None else schedule.fits
    keys = [
        _fit_key(template, features[train], runtime[train], features[lo:hi], d)
        if schedule is not None
        else str(k)
        for k, lo, hi, train, d in tasks
    ]
    todo = [i for i, key in enumerate(keys) if key not in memo]
    fits = Parallel(n_jobs=n_jobs)(
        delayed(_fit_week)(
            clone(template).set_params(divider=d), features[train], runtime[train], features[lo:hi], d
        )
        for _, lo, hi, train, d in (tasks[i] for i in todo)
    )
    fresh = {keys[i]: fit for i, fit in zip(todo, fits, strict=True)}
    if schedule is not None:
        memo.update(fresh)
    fitted = {
        task[0]: (task, fresh[key] if key in fresh else memo[key], key in fresh)
        for task, key in zip(tasks, keys, strict=True)
    }
    weekly: list[dict] = []
    fit_seconds: list[float] = []
    for k in range(n_weeks):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        if hi == lo:
            continue
        report: dict = {"week": k, "start": float(origin + WEEK * k), "jobs": hi - lo, "trained_on": 0}
        if k in fitted:
            (_, _, _, train, week_divider), (log_q, week_proba, seconds), refitted = fitted[k]
            if refitted:
                fit_seconds.append(seconds)
            quantiles[lo:hi] = np.expm1(log_q)
            proba[lo:hi] = week_proba
            divider[lo:hi] = week_divider
            report.update(trained_on=len(train), divider=week_divider)
            if schedule is not None:
                report["refitted"] = refitted
        weekly.append(report)
    threshold = walkforward_thresholds(proba, runtime, divider, end, submit)
    for report in weekly:
        if report["trained_on"]:
            report["threshold"] = float(threshold[bounds[report["week"]]])
    predicted = np.where(np.isfinite(proba) & (proba >= threshold), 0, 1).astype(np.int8)
    return QuantileWalkForward(
        levels=levels,
        quantiles=quantiles,
        proba_small=proba,
        divider=divider,
        threshold=threshold,
        predicted_class=predicted,
        runtime=runtime,
        requested_time=np.asarray(jobs.requested_time, dtype=np.float64),
        week=week,
        features=features,
        weekly=weekly,
        seconds=time.perf_counter() - started,
        fit_seconds=fit_seconds,
        end=end,
        submit=submit,
        feature_set=feature_set,
        max_train_jobs=max_train_jobs,
    )


def walkforward_inputs(
    workload: Workload,
    trace_header: dict[str, str] | None,
    timezone: str | None = None,
    feature_set: str = DEFAULT_FEATURE_SET,
    schedule: ReplaySchedule | None = None,
) -> tuple[QuantileJobs, np.ndarray, np.ndarray, np.ndarray]:
    """What a walk-forward reads before any fit: (jobs on the time base, every job's features at
    its submission, runtimes clipped at the request, ends with unusable jobs at inf), the logged
    times or ``schedule``'s."""
    time_base = TimeBase.from_header(trace_header, timezone)
    jobs = trace_jobs(workload, time_base)
    if schedule is not None:
        jobs = schedule.applied(jobs, time_base.unix_start)
    features = offline_features(jobs, time_base.clock, feature_set=feature_set)
    runtime = clipped(jobs.runtime, jobs.requested_time)
    usable = usable_history(jobs.runtime, jobs.requested_time, jobs.end)
    return jobs, features, runtime, np.where(usable, jobs.end, np.inf)


def walkforward_thresholds(
    proba: np.ndarray,
    runtime: np.ndarray,
    divider: np.ndarray,
    end: np.ndarray,
    submit: np.ndarray,
    kill_budget: float | None = None,
    reference_false_small: np.ndarray | None = None,
) -> np.ndarray:
    """Each job's decision threshold, chosen from the past only: at each week's start (weeks
    from the first submission), over every earlier job that had a P(small) (``proba`` finite)
    and had ended (``end``, inf: never) before the week, the candidate of :data:`THRESHOLDS`

    * with the most correct decisions (``kill_budget`` and ``reference_false_small`` None;
      ties to the one nearest 0.5), or
    * the lowest whose false smalls (called small, ran longer than the divider: each one a
      kill at the divider for an idempotent job) are at most ``kill_budget`` of those jobs
      (the highest candidate when none is), or
    * the lowest whose false smalls are at most a reference decision's on the same jobs
      (``reference_false_small``, per job: 1 the reference called it small and it outran the
      reference's divider, 0 it did not, NaN the reference made no decision; only jobs with
      both decisions count): kills no more frequent than the reference's so far (the highest
      candidate when none is);

    0.5 before any such job."""
    if kill_budget is not None and reference_false_small is not None:
        raise ModelError(
            "a kill budget and a reference decision were both given",
            where="walkforward_thresholds",
            fix="give kill_budget (a share of the jobs) or reference_false_small, not both",
        )
    n = len(proba)
    if reference_false_small is not None:
        reference = np.asarray(reference_false_small, dtype=np.float64)
        if reference.shape != (n,) or np.any(np.isfinite(reference) & (reference != 0) & (reference != 1)):
            raise ModelError(
                "reference_false_small must hold 0, 1 or NaN for every job",
                where="reference_false_small",
                fix="give one value per job of proba: 1 false small, 0 not, NaN no reference decision",
            )
        proba = np.where(np.isfinite(reference), proba, np.nan)  # only jobs with both decisions
    else:
        reference = np.zeros(n)
    budget = 0.0
    threshold = np.full(n, DEFAULT_THRESHOLD)
    if not n:
        return threshold
    origin = float(submit[0])
    week = ((submit - origin) // WEEK).astype(np.int64)
    bounds = np.searchsorted(week, np.arange(int(week[-1]) + 2))
    end_order = np.argsort(end, kind="stable")
    sorted_end = end[end_order]
    correct = np.zeros(len(THRESHOLDS))
    false_small = np.zeros(len(THRESHOLDS))
    judged = 0
    seen = 0
    for k in range(len(bounds) - 1):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        finished = int(np.searchsorted(sorted_end, origin + WEEK * k, side="left"))  # end < week start
        known = end_order[judged:finished]  # outcomes newly known at this week's start
        judged = finished
        known = known[np.isfinite(proba[known])]
        if len(known):
            small = runtime[known] <= divider[known]
            called = proba[known][:, None] >= THRESHOLDS[None, :]
            correct += (called == small[:, None]).sum(axis=0)
            false_small += (called & ~small[:, None]).sum(axis=0)
            budget += float(reference[known].sum())
            seen += len(known)
        if hi == lo or not seen:
            continue
        if kill_budget is None and reference_false_small is None:
            best = np.flatnonzero(correct == correct.max())
            threshold[lo:hi] = float(
                THRESHOLDS[best[np.argmin(np.abs(THRESHOLDS[best] - DEFAULT_THRESHOLD))]]
            )
        else:
            allowed = budget if kill_budget is None else kill_budget * seen
            within = np.flatnonzero(false_small <= allowed)
            threshold[lo:hi] = float(THRESHOLDS[within[0]] if len(within) else THRESHOLDS[-1])
    return threshold


def _fit_key(
    template: RuntimeQuantileRegressor, X: np.ndarray, y: np.ndarray, X_week: np.ndarray, divider: float
) -> str:
    """A digest of every input of one week's fit and prediction (the model's parameters, the
    training rows in order, the week's rows, the divider)."""
    digest = hashlib.sha256(repr(sorted(template.get_params().items())).encode())
    for part in (X, y, X_week, np.float64(divider)):
        arr = np.ascontiguousarray(part, dtype=np.float64)
        digest.update(repr(arr.shape).encode())
        digest.update(arr.tobytes())
    return digest.hexdigest()


def _fit_week(
    model: RuntimeQuantileRegressor, X: np.ndarray, y: np.ndarray, X_week: np.ndarray, divider: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """One week's refit: (log quantiles, P(small)) of its jobs, and the fit's seconds."""
    t0 = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - t0
    log_q = model.predict_log_quantiles(X_week)
    return log_q, model.proba_small(X_week, log_q), seconds


__all__ = [
    "QUANTILES",
    "QuantileWalkForward",
    "ReplaySchedule",
    "predict_quantiles_walkforward",
    "trace_jobs",
    "training_rows",
    "walkforward_inputs",
]
