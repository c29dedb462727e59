"""rush's runtime-quantile predictor learning from the replay's own schedule (issue 29, round 27).

The committed quantile schedulers (:mod:`rush.studies.runtime_predictions_quantiles`) take the
predictor's walk-forward over the *log*: each week's model trained on the jobs whose logged end
is before the week, each job's features read from the logged starts and ends. The online run of
a scheduler X is instead a schedule σ with σ = SIM_X(WF(σ)): the walk-forward
(:func:`~rush.models.runtime_quantiles_walkforward.predict_quantiles_walkforward`) with the
simulated jobs' starts and ends in place of the logged ones
(:class:`~rush.models.runtime_quantiles_walkforward.ReplaySchedule`). It is reached by iterating
P_1 = WF(log), σ_i = SIM_X(P_i), P_{i+1} = WF(σ_i): when WF(σ_i)'s inputs equal P_i's (every
job's feature row, every week's finished jobs, training rows and their features), σ_i is the
online run exactly. scikit-learn never runs inside the compiled loop; the loop only carries the
predictions, as for the log-history runs. The rules stay the core's and the walk-forward's; this
module only carries the iteration and says what still differs
(``sim/runtime_predictions/README.md``, round 27).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from rush.models.runtime_quantiles_walkforward import (
    WEEK,
    ReplaySchedule,
    predict_quantiles_walkforward,
    training_rows,
    walkforward_inputs,
)
from rush.models.walkforward import published_job_set
from rush.simulator.engine import simulate
from rush.simulator.metrics import compute_metrics
from rush.simulator.result import SimResult
from rush.studies.runtime_predictions import TAU, THRESHOLD
from rush.studies.runtime_predictions_quantiles import RowOptions, result_row, scheduler_run_inputs
from rush.workload.model import Workload

JOB_SETS = ("published", "full")


@dataclass(frozen=True)
class OnlineSetup:
    """One scheduler on one trace's job set: the full trace (every logged job is in the
    predictor's history; for ``published`` only the published ones are simulated, for ``full``
    every one, as Table 6.6's two job sets do) and the scheduler's options (e.g. the runtime
    classifier's walk-forward of the same job set for the SPF-CI rules)."""

    trace: str
    workload_full: Workload
    header: dict | None
    scheduler: str
    options: RowOptions = RowOptions()
    job_set: str = "published"

    def __post_init__(self) -> None:
        if self.job_set not in JOB_SETS:
            raise ValueError(f"job set {self.job_set!r}: choose from {', '.join(JOB_SETS)}")

    @property
    def rows(self) -> np.ndarray:
        """The job set's rows in the full trace (what the replay runs)."""
        w = self.workload_full
        if self.job_set == "full":
            return np.arange(len(w))
        return np.flatnonzero((w.runtime > 0) & (w.runtime < w.requested_time))

    @property
    def workload(self) -> Workload:
        """The simulated workload: the job set's jobs, aligned with :attr:`rows`."""
        return published_job_set(self.workload_full) if self.job_set == "published" else self.workload_full


@dataclass(frozen=True)
class WalkForwardTimes:
    """What a walk-forward read from its schedule, before any fit: every job's features at its
    submission, ends (inf: never in a history), submissions (time base, submit order) and the
    training-row cap."""

    features: np.ndarray
    end: np.ndarray
    submit: np.ndarray
    max_train_jobs: int | None


def replay_schedule(result: SimResult, rows: np.ndarray, n: int, fits: dict | None = None) -> ReplaySchedule:
    """The replay's starts and ends (its final runs) for the full trace's ``rows`` it ran (the
    result is aligned with them); NaN elsewhere (jobs not replayed keep their logged times)."""
    if len(result) != len(rows):
        raise ValueError(f"a replay of {len(result)} jobs for {len(rows)} rows")
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    start[rows] = result.start
    end[rows] = result.end
    return ReplaySchedule(start, end, {} if fits is None else fits)


def times_of(setup: OnlineSetup, schedule: ReplaySchedule | None, wf) -> WalkForwardTimes:
    """What the walk-forward ``wf`` (of the default model) would read from ``schedule``
    (``None``: the log), without fitting."""
    _, features, _, end = walkforward_inputs(
        setup.workload_full, setup.header, feature_set=wf.feature_set, schedule=schedule
    )
    return WalkForwardTimes(features, end, wf.submit, wf.max_train_jobs)


def input_changes(before, after) -> dict:
    """Where two walk-forwards' inputs differ (each a :class:`WalkForwardTimes` or a
    :class:`~rush.models.runtime_quantiles_walkforward.QuantileWalkForward` of the same jobs):
    jobs whose feature row differs, weeks whose model differs (the jobs ended before the week,
    the training rows in order, or a training row's features) and the first job (submit order)
    from which predictions may differ; ``converged`` when nothing does."""
    submit = np.asarray(before.submit, dtype=np.float64)
    n = len(submit)
    same = (before.features == after.features) | (np.isnan(before.features) & np.isnan(after.features))
    row_differs = ~same.all(axis=1)
    origin = float(submit[0]) if n else 0.0
    week = ((submit - origin) // WEEK).astype(np.int64)
    bounds = np.searchsorted(week, np.arange(int(week[-1]) + 2)) if n else np.zeros(1, np.int64)
    orders = [np.argsort(x.end, kind="stable") for x in (before, after)]
    model_differs = []
    for k in range(len(bounds) - 1):
        t = origin + WEEK * k
        (f0, r0), (f1, r1) = (
            training_rows(o, x.end[o], t, x.max_train_jobs)
            for o, x in zip(orders, (before, after), strict=True)
        )
        if (
            len(f0) != len(f1)
            or not np.array_equal(np.sort(f0), np.sort(f1))
            or not np.array_equal(r0, r1)
            or row_differs[r0].any()
        ):
            model_differs.append(k)
    first_row = int(np.argmax(row_differs)) if row_differs.any() else n
    first_model = int(bounds[model_differs[0]]) if model_differs else n
    first = min(first_row, first_model)
    return {
        "rows_differ": int(row_differs.sum()),
        "weeks_differ": len(model_differs),
        "weeks": len(bounds) - 1,
        "first_job": first,
        "first_week": int(week[first]) if first < n else -1,
        "exact_share": first / n if n else 1.0,
        "converged": first == n,
    }


def prediction_changes(before, after, rows: np.ndarray) -> int:
    """The jobs of ``rows`` whose predicted quantiles, P(small) or calibrated mean differ."""
    q = ~np.all(before.quantiles[rows] == after.quantiles[rows], axis=1)
    a, b = before.proba_small[rows], after.proba_small[rows]
    p = ~((a == b) | (np.isnan(a) & np.isnan(b)))
    m = before.calibrated_mean()[rows] != after.calibrated_mean()[rows]
    return int((q | p | m).sum())


def within_factor_two(wf, rows: np.ndarray) -> float:
    """The share of ``rows`` with a positive runtime and a model whose calibrated mean is within
    a factor 2 of the runtime (every published job's runtime is positive; the full set's
    zero-runtime jobs have no ratio and are left out)."""
    rows = rows[np.asarray(wf.runtime)[rows] > 0]
    predicted = rows[np.isfinite(wf.proba_small[rows])]
    ratio = wf.calibrated_mean()[predicted] / wf.runtime[predicted]
    return float(np.mean((ratio >= 0.5) & (ratio <= 2.0))) if len(predicted) else float("nan")


def online_iterates(
    setup: OnlineSetup, log_wf, iterations: int, keep_going: Callable[[float], bool] = lambda s: True
) -> Iterator[dict]:
    """One row per run: iteration 1 the log walk-forward ``log_wf`` (the committed run), then up
    to ``iterations`` online ones, each on the walk-forward of the previous run's schedule;
    stops early when converged or when ``keep_going(seconds the last walk-forward took)`` is
    false (asked before each new walk-forward).
    The last row's ``check_*`` fields compare its inputs with those its own schedule gives
    (computed without fitting): converged or not, and how much still differs."""
    rows = setup.rows
    n = len(setup.workload_full)
    workload = setup.workload
    from rush.core.config import CoreConfig

    base = compute_metrics(simulate(workload, CoreConfig.from_names("FCFS", "easy", THRESHOLD)), tau=TAU)
    fits: dict = {}
    wf, change = log_wf, None
    for i in range(1, iterations + 2):
        inputs, config = scheduler_run_inputs(setup.scheduler, wf, rows, setup.options)
        result = simulate(workload, config, inputs)
        row = result_row(
            setup.trace, setup.job_set, setup.scheduler, setup.options.idempotent_threshold, result, base
        )
        row |= {
            "iteration": i,
            "walkforward_seconds": wf.seconds,
            "weeks_refitted": sum(bool(r.get("refitted")) for r in wf.weekly) if i > 1 else -1,
            "within_factor_two": within_factor_two(wf, rows),
        }
        for key, value in (change or {}).items():
            row[f"from_previous_{key}"] = value
        schedule = replay_schedule(result, rows, n, fits)
        stopped = "cap" if i == iterations + 1 else "" if keep_going(wf.seconds) else "time"
        if stopped:
            row["stopped"] = stopped
            for key, value in input_changes(wf, times_of(setup, schedule, wf)).items():
                row[f"check_{key}"] = value
            yield row
            return
        new_wf = predict_quantiles_walkforward(
            setup.workload_full,
            setup.header,
            max_train_jobs=wf.max_train_jobs,
            feature_set=wf.feature_set,
            schedule=schedule,
        )
        change = input_changes(wf, new_wf)
        change["predictions_differ"] = prediction_changes(wf, new_wf, rows)
        if change["converged"]:
            row["stopped"] = "converged"
            for key, value in change.items():
                row[f"check_{key}"] = value
            yield row
            return
        yield row
        wf = new_wf


__all__ = [
    "JOB_SETS",
    "OnlineSetup",
    "WalkForwardTimes",
    "input_changes",
    "online_iterates",
    "replay_schedule",
]
