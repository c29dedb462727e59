"""The runtime-prediction study (issue 29, ``sim/runtime_predictions``): Table 6.6 of the
thesis (``../shared/papers/003_a2a26e2c92a971c9.txt``) with rush's simulator and metrics.

For one trace and job set: walk-forward predictions of each predictor
(:func:`rush.models.runtime_predictors.predict_walkforward`), then EASY simulations under
the thesis's protocol (FCFS, starvation threshold 200,000 s, bounded slowdown with tau =
10 s): the EASY-FCFS base, and each predictor with its scheduling rules (the SJBF backfill
order, stepwise correction: :func:`rush.core.runtime_predictions.prediction_policy`) plus
variants (backfill in FCFS order; correction to the request) to show what each part does.
The improvement is that of the cumulative mean bounded slowdown at the end of the trace
(its mean over all jobs) over EASY-FCFS's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rush.core.config import CoreConfig
from rush.core.runtime_predictions import predicted_runtimes, prediction_policy
from rush.models.runtime_predictors import RuntimePredictions, make_predictor, predict_walkforward
from rush.models.walkforward import published_job_set
from rush.simulator.engine import SimInputs, simulate
from rush.simulator.metrics import compute_metrics, cumulative_bounded_slowdown
from rush.workload.catalogue import load_trace
from rush.workload.model import Workload, workload_from_trace

PREDICTORS = ("easy++", "gaussier")
THRESHOLD = 200_000.0
TAU = 10.0
# (label, backfill order, correction): None means the predictor's own rule.
VARIANTS: tuple[tuple[str, str | None, str | None], ...] = (
    ("main", None, None),
    ("fcfs-backfill", "FCFS", None),
    ("correct-to-request", None, "request"),
)


@dataclass
class TraceRun:
    trace: str
    job_set: str
    rows: list[dict]
    predictions: dict[str, RuntimePredictions]


def load(trace_name: str, job_set: str) -> Workload:
    workload = workload_from_trace(load_trace(trace_name))
    return published_job_set(workload) if job_set == "published" else workload


def _row(
    trace: str,
    job_set: str,
    workload: Workload,
    label: str,
    config: CoreConfig,
    estimate=None,
    online: str | None = None,
    study: dict | None = None,
) -> dict:
    """One simulation's row; ``study``: a study's further ``SimInputs`` fields (jitter seed, loss)."""
    inputs = SimInputs(estimate=estimate, online_prediction=online, **(study or {}))
    result = simulate(workload, config, inputs)
    metrics = compute_metrics(result, tau=TAU)
    times, cumulative = cumulative_bounded_slowdown(result, TAU)
    return {
        "trace": trace,
        "job_set": job_set,
        "jobs": len(workload),
        "scheduler": label,
        "backfill_policy": config.scan_policy.name,
        "correction": config.prediction_correction,
        "mean_bounded_slowdown": metrics["mean_bounded_slowdown"],
        "mean_wait": metrics["mean_wait"],
        "utilization": metrics["utilization"],
        "killed": int(result.killed.sum()),
        "backfilled": int(result.backfilled.sum()),
        "cumulative": (np.asarray(times), np.asarray(cumulative)),
    } | ({"estimate": result.attributes["estimate"]} if online is not None else {})


def _easy_fcfs(trace: str, job_set: str, workload: Workload, threshold: float | None = THRESHOLD) -> dict:
    """EASY-FCFS's row, the reference every improvement is read against (``threshold``: None for
    none, a study's reading of simulators without one)."""
    return _row(trace, job_set, workload, "EASY-FCFS", CoreConfig.from_names("FCFS", "easy", threshold))


def _predictor_config(
    name: str, correction: str | None = None, threshold: float | None = THRESHOLD
) -> CoreConfig:
    """FCFS with EASY under ``name``'s backfill order and correction rule (or ``correction``);
    ``threshold`` None: no starvation threshold, and so no starved-head rule."""
    order, rule = prediction_policy(name)
    return CoreConfig.from_names("FCFS", "easy", threshold, order, prediction_correction=correction or rule)


def _with_improvements(rows: list[dict], base: dict) -> None:
    """Each row's improvement of the mean bounded slowdown over ``base``'s, %."""
    for r in rows:
        r["improvement_over_easy_fcfs_pct"] = (
            100.0
            * (base["mean_bounded_slowdown"] - r["mean_bounded_slowdown"])
            / base["mean_bounded_slowdown"]
        )


def _accuracy(row: dict, predicted: np.ndarray, runtime: np.ndarray, requested: np.ndarray) -> None:
    """The run's prediction accuracy into its row (Tsafrir's mean accuracy among them)."""
    summary = RuntimePredictions(predicted, predicted, runtime, requested, 0, 0, 0, 0.0).summary()
    for key in ("median_absolute_error", "underpredicted", "mean_accuracy"):
        row[key] = summary[key]


def run_trace(trace: str, job_set: str) -> TraceRun:
    """Every simulation of one trace and job set (module docstring)."""
    workload = load(trace, job_set)
    base = CoreConfig.from_names("FCFS", "easy", THRESHOLD)
    rows = [_row(trace, job_set, workload, "EASY-FCFS", base)]
    rows.append(
        _row(
            trace,
            job_set,
            workload,
            "EASY-FCFS+SJBF (requests)",
            CoreConfig.from_names("FCFS", "easy", THRESHOLD, "SPF"),
        )
    )
    predictions = {}
    for name in PREDICTORS:
        predicted = predict_walkforward(workload, make_predictor(name))
        predictions[name] = predicted
        order, correction = prediction_policy(name)
        for variant, v_order, v_correction in VARIANTS:
            config = CoreConfig.from_names(
                "FCFS",
                "easy",
                THRESHOLD,
                v_order or order,
                prediction_correction=v_correction or correction,
            )
            label = name if variant == "main" else f"{name} ({variant})"
            rows.append(_row(trace, job_set, workload, label, config, predicted.predicted))
    clairvoyant = np.minimum(workload.runtime, workload.requested_time)
    rows.append(
        _row(
            trace,
            job_set,
            workload,
            "runtime-clairvoyant (SJBF)",
            CoreConfig.from_names("FCFS", "easy", THRESHOLD, "SPF"),
            clairvoyant,
        )
    )
    base_bsld = rows[0]["mean_bounded_slowdown"]
    for r in rows:
        r["improvement_over_easy_fcfs_pct"] = 100.0 * (base_bsld - r["mean_bounded_slowdown"]) / base_bsld
    return TraceRun(trace, job_set, rows, predictions)


def run_online(trace: str, job_set: str) -> list[dict]:
    """EASY++ with its history from the log (:func:`predict_walkforward`) and from the replay's
    own completions (``SimInputs.online_prediction``), the same scheduling rules (SJBF, stepwise
    correction), each beside EASY-FCFS; with the accuracy of each run's predictions and the
    share of jobs the two histories predict differently (``sim/runtime_predictions``, round 23)."""
    workload = load(trace, job_set)
    base = _easy_fcfs(trace, job_set, workload)
    config = _predictor_config("easy++")
    logged = predict_walkforward(workload, make_predictor("easy++"))
    rows = [
        base,
        _row(trace, job_set, workload, "easy++", config, logged.predicted),
        _row(trace, job_set, workload, "easy++-online", config, online="easy++-online"),
    ]
    _with_improvements(rows, base)
    wait = workload.extra.get("wait")
    for r in rows:
        r["log_mean_wait"] = float(np.mean(np.maximum(wait, 0.0))) if wait is not None else None
        r.pop("cumulative")
        if r is base:
            continue
        predicted = r.pop("estimate", logged.predicted)
        _accuracy(r, predicted, logged.runtime, logged.requested_time)
        r["predicted_as_log_history"] = float(np.mean(predicted == logged.predicted))
    return rows


JITTER = 1e-3  # D-on1: predictions moved by at most 0.1 %, which says nothing about a job


def jittered_easy_pp(trace: str, job_set: str, seeds: list[int]) -> list[dict]:
    """D-on1 (round 23, post hoc): EASY++ on the log's history with every prediction multiplied
    by 1 + e, e uniform in [-JITTER, JITTER] (seeded; the core's guard caps it by the request):
    the spread of the figure under moves that carry no information, against which the online
    history's difference is read."""
    workload = load(trace, job_set)
    base = _easy_fcfs(trace, job_set, workload)
    config = _predictor_config("easy++")
    logged = predict_walkforward(workload, make_predictor("easy++")).predicted
    rows = []
    for seed in seeds:
        factor = 1.0 + np.random.default_rng(seed).uniform(-JITTER, JITTER, len(logged))
        moved = predicted_runtimes(
            logged * factor, np.ascontiguousarray(workload.requested_time, dtype=np.float64)
        )
        r = _row(trace, job_set, workload, f"easy++ jitter seed {seed}", config, moved)
        r.pop("cumulative")
        r["seed"] = seed
        rows.append(r)
    _with_improvements(rows, base)
    return rows


# D-g1 (post hoc): gaussier-online and its two study variants, one part changed each.
GAUSSIER_PARTS = ("gaussier-online", "gaussier-online (no running features)", "gaussier-online (ridge loss)")


def run_gaussier_online(trace: str, job_set: str, parts: bool = False) -> list[dict]:
    """Gaussier et al.'s regression learning online in the replay (``SimInputs.online_prediction
    = "gaussier-online"``) under SJBF with the stepwise correction (Table 6.6's rules) and with
    correction to the request (their cross-validated triple's), each beside EASY-FCFS, with the
    accuracy of each run's predictions (``sim/runtime_predictions``, round 24). ``parts``: D-g1's
    runs instead, :data:`GAUSSIER_PARTS` under the stepwise correction."""
    workload = load(trace, job_set)
    base = _easy_fcfs(trace, job_set, workload)
    rows = [base]
    runs = (
        [(name, name, None) for name in GAUSSIER_PARTS]
        if parts
        else [
            ("gaussier-online", "gaussier-online", None),
            ("gaussier-online (correct-to-request)", "gaussier-online", "request"),
        ]
    )
    for label, source, rule in runs:
        config = _predictor_config("gaussier-online", rule)
        rows.append(_row(trace, job_set, workload, label, config, online=source))
    _with_improvements(rows, base)
    runtime = np.asarray(workload.runtime, dtype=np.float64)
    requested = np.asarray(workload.requested_time, dtype=np.float64)
    for r in rows:
        r.pop("cumulative")
        if r is base:
            continue
        predicted = r.pop("estimate")
        _accuracy(r, predicted, runtime, requested)
        r["predicted_1s"] = float(np.mean(predicted <= 1.0))
        r["predicted_request"] = float(np.mean(predicted >= requested))
    return rows
