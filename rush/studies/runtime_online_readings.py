"""Two readings of the online schedulers of the runtime-prediction study (``sim/runtime_predictions``,
round 26), each a list of simulation rows for one trace and job set:

* :func:`online_noise_runs`: easy++-online and gaussier-online under Table 6.6's rules, unjittered
  (seed 0) and under an information-free jitter of their predictions inside the loop
  (``SimInputs.prediction_jitter_seed``, :func:`rush.core.runtime_predictions.jittered_prediction`),
  the same seeds for both (paired);
* :func:`log_noise_runs` (round 28): Table 6.6's EASY++ (the log's history) and Gaussier et al.
  (weekly) columns under the same information-free jitter, the draw the loop would make for each
  job (:func:`jittered_log_predictions`) applied to their predictions made before the run;
* :func:`gaussier_grid_runs`: gaussier-online under each of :data:`GRID`'s losses, a subset of
  Gaussier et al.'s own grid (:func:`rush.core.gaussier_online.composite_loss`): a sensitivity
  reading, not a tuned result.
"""

from __future__ import annotations

import numpy as np

from rush.core.gaussier_online import composite_loss
from rush.core.runtime_predictions import JITTER_OFF, jittered_prediction
from rush.models.runtime_predictors import make_predictor, predict_walkforward
from rush.studies.runtime_predictions import (
    PREDICTORS,
    THRESHOLD,
    _easy_fcfs,
    _predictor_config,
    _row,
    _with_improvements,
    load,
)

ONLINE_SCHEDULERS = ("easy++-online", "gaussier-online")
# (right curve, its parameter, left curve, its parameter, threshold s, weight): the README's table,
# chosen before any run; point 1 is their cross-validated triple (the committed online column).
GRID: tuple[tuple[str, float, str, float, float, str], ...] = (
    ("square", 1, "abs", 1, 0, "1+log(m*r)"),
    ("abs", 1, "abs", 1, 0, "1+log(m*r)"),
    ("square", 1, "square", 1, 0, "1+log(m*r)"),
    ("abs", 1, "square", 1, 0, "1+log(m*r)"),
    ("exp", 0.0001, "abs", 1, 0, "1+log(m*r)"),
    ("square", 1, "exp", 0.0001, 0, "1+log(m*r)"),
    ("square", 100, "abs", 1, 0, "1+log(m*r)"),
    ("square", 10000, "abs", 1, 0, "1+log(m*r)"),
    ("square", 1, "abs", 100, 0, "1+log(m*r)"),
    ("square", 1, "abs", 10000, 0, "1+log(m*r)"),
    ("square", 1, "abs", 1, 60, "1+log(m*r)"),
    ("square", 1, "abs", 1, 600, "1+log(m*r)"),
    ("square", 1, "abs", 1, 0, "1"),
    ("square", 1, "abs", 1, 0, "5+log(r/m)"),
    ("square", 1, "abs", 1, 0, "5+log(m/r)"),
    ("square", 1, "abs", 1, 0, "11+log(1/(r*m))"),
    ("abs", 1, "abs", 1, 0, "1"),
    ("square", 1, "square", 1, 0, "1"),
    ("abs", 1, "square", 1, 0, "1"),
    ("abs", 1, "abs", 1, 600, "1+log(m*r)"),
    ("square", 1, "square", 1, 600, "1+log(m*r)"),
    ("abs", 1, "square", 1, 600, "1+log(m*r)"),
    ("abs", 1, "abs", 100, 0, "1+log(m*r)"),
    ("abs", 100, "abs", 1, 0, "1+log(m*r)"),
)


def grid_label(point: tuple[str, float, str, float, float, str]) -> str:
    """A grid point as text: ``over square 1 / under abs 1 / threshold 0 / weight 1+log(m*r)``."""
    right, rp, left, lp, threshold, weight = point
    return f"over {right} {rp:g} / under {left} {lp:g} / threshold {threshold:g} / weight {weight}"


def _predictions(row: dict, workload) -> None:
    """The run's predictions, summarised into its row (and dropped from it)."""
    predicted = row.pop("estimate")
    runtime = np.minimum(np.asarray(workload.runtime, float), np.asarray(workload.requested_time, float))
    row["underpredicted"] = float(np.mean(predicted < runtime))
    row["predicted_1s"] = float(np.mean(predicted <= 1.0))


def _against_easy_fcfs(base: dict, rows: list[dict]) -> None:
    """Each row's improvement over EASY-FCFS's ``base``; the cumulative curves dropped (not tabled)."""
    _with_improvements([base, *rows], base)
    for r in [base, *rows]:
        r.pop("cumulative")


def online_noise_runs(trace: str, job_set: str, seeds: list[int]) -> list[dict]:
    """EASY-FCFS, then each of :data:`ONLINE_SCHEDULERS` (SJBF, stepwise correction) with every
    jitter seed in ``seeds`` (0: none), each row with its ``seed`` and improvement over EASY-FCFS."""
    workload = load(trace, job_set)
    base = _easy_fcfs(trace, job_set, workload)
    rows = []
    for source in ONLINE_SCHEDULERS:
        config = _predictor_config(source)
        for seed in seeds:
            r = _row(
                trace,
                job_set,
                workload,
                source,
                config,
                online=source,
                study={"prediction_jitter_seed": seed},
            )
            _predictions(r, workload)
            rows.append(r | {"seed": seed})
    _against_easy_fcfs(base, rows)
    return [base | {"seed": None}, *rows]


def jittered_log_predictions(predicted: np.ndarray, requested_time: np.ndarray, seed: int) -> np.ndarray:
    """Predictions made before the run (the log's history, the weekly fit), each moved as the
    simulator's loop moves an online one under ``seed``: job j (its index in submit order) by the
    core's :func:`~rush.core.runtime_predictions.jittered_prediction` with the same (seed, j) draw,
    so a seed perturbs a log column's job exactly as it perturbs that job's online prediction.
    ``seed`` :data:`~rush.core.runtime_predictions.JITTER_OFF` returns ``predicted`` itself."""
    if seed == JITTER_OFF:
        return predicted
    requested = np.asarray(requested_time, dtype=np.float64)
    values = np.asarray(predicted, dtype=np.float64)
    return np.array(
        [jittered_prediction(v, r, seed, j) for j, (v, r) in enumerate(zip(values, requested, strict=True))]
    )


def log_noise_runs(trace: str, job_set: str, seeds: list[int]) -> list[dict]:
    """EASY-FCFS, then each of Table 6.6's two regression columns (``easy++``: the log's history;
    ``gaussier``: the weekly fit; SJBF, stepwise correction) with its walk-forward predictions made
    once and each jitter seed of ``seeds`` applied (0: none, the committed ``schedulers.csv`` run),
    each row with its ``seed`` and improvement over EASY-FCFS (round 28)."""
    workload = load(trace, job_set)
    base = _easy_fcfs(trace, job_set, workload)
    rows = []
    for name in PREDICTORS:
        predicted = predict_walkforward(workload, make_predictor(name)).predicted
        config = _predictor_config(name)
        for seed in seeds:
            moved = jittered_log_predictions(predicted, workload.requested_time, seed)
            r = _row(trace, job_set, workload, name, config, moved)
            r["estimate"] = moved
            _predictions(r, workload)
            rows.append(r | {"seed": seed})
    _against_easy_fcfs(base, rows)
    return [base | {"seed": None}, *rows]


def gaussier_grid_runs(
    trace: str,
    job_set: str,
    points: tuple = GRID,
    correction: str | None = None,
    threshold: float | None = THRESHOLD,
    jitter_seed: int = 0,
) -> list[dict]:
    """EASY-FCFS, then gaussier-online (SJBF, no jitter; stepwise correction, or ``correction``, e.g.
    ``"request"``, their triple's other rule) learning on each of ``points``' losses, each row with
    its ``point`` (1-based) and ``loss`` label. ``threshold`` None: both without a starvation
    threshold (and so without the starved-head rule), as Gaussier et al.'s simulator ran;
    ``jitter_seed`` (0: none) jitters every point's predictions as round 26's noise reading does."""
    workload = load(trace, job_set)
    base = _easy_fcfs(trace, job_set, workload, threshold)
    config = _predictor_config("gaussier-online", correction, threshold)
    rows = []
    for k, point in enumerate(points, start=1):
        study = {"gaussier_loss": composite_loss(*point)}
        if jitter_seed:
            study["prediction_jitter_seed"] = jitter_seed
        r = _row(trace, job_set, workload, "gaussier-online", config, online="gaussier-online", study=study)
        _predictions(r, workload)
        rows.append(r | {"point": k, "loss": grid_label(point)})
    _against_easy_fcfs(base, rows)
    return [base | {"point": None, "loss": None}, *rows]
