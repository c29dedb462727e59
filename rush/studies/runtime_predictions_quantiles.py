"""rush's predictor-based scheduling beside Table 6.6 (issue 29's target "at or above SPF-CI
on three of four traces, with kills no more frequent than FCFS-CI's").

One model, both uses: the runtime-quantile predictor's weekly walk-forward
(:mod:`rush.models.runtime_quantiles_walkforward`) gives every job its classes (P(runtime <=
divider): the plain threshold chosen walk-forward, idempotent jobs at ``idempotent_threshold``)
and its predicted runtime (the mean of its predicted distribution: a reservation adds runtimes
up). The schedulers, fixed before any run (the study's README says why):

* ``quantile FCFS-CI`` / ``quantile SPF-CI``: the runtime-class study's
  classification-idempotent with these classes (estimates: the requests);
* ``rush-Q``: SPF over the predicted runtimes, small class first, EASY backfilling scanning
  the shortest predicted job first, false smalls killed at the divider (every job idempotent,
  as in FCFS-CI), any other job killed only at its request; a running job that outlives its
  prediction gets its request (``prediction_correction = "request"``);
* ``rush-Q (plain threshold)``: the same with every job judged at the plain decision's
  walk-forward threshold (the accuracy-optimal one, about 0.5) instead of 0.1: fewer jobs called
  small, so fewer false-small kills (the target bounds kills by FCFS-CI's);
* ``... (kill budget)``: every job judged at the lowest threshold whose false smalls over the
  past (jobs ended before the week) are at most :data:`KILL_BUDGET` of those jobs, chosen
  walk-forward (:func:`~rush.models.runtime_quantiles_walkforward.walkforward_thresholds`);
* ``... (FCFS-CI's kill rate)`` (round 12, :data:`MATCHED_SCHEDULERS`, given FCFS-CI's decisions):
  every job judged at the lowest threshold whose false smalls over the past (jobs ended before
  the week, with an FCFS-CI decision) are at most FCFS-CI's on the same jobs
  (``walkforward_thresholds(reference_false_small=...)``): the target's own kill bound, held
  walk-forward, in place of a fixed share;
* ``rush-Q (stepwise)`` (not in :data:`SCHEDULERS`; KTH-SP2 only, by hand): Tsafrir's stepwise
  correction (EASY++'s rule) instead of the request;
* :data:`CLASSIFIER_SCHEDULERS` (round 13, given the runtime classifier's walk-forward of the job
  set, the one SPF-CI and FCFS-CI were measured with): SPF-CI itself, its classes, dividers and
  kills (FCFS-CI's, job for job), with the predictor only where classes say nothing.
  ``SPF-CI (classifier)`` is SPF-CI rerun (the check that the classes are the committed ones);
  ``SPF-CI ranked on predictions`` (H13a) ranks the queue within each class and the backfill
  scan by the predicted runtime and plans on the limits (``SimInputs.rank_estimate``);
  ``SPF-CI with predictions`` (H13b) schedules on the predictions as rush-Q does (SJBF,
  reservations on predictions, corrected to the request); ``SPF-CI ranked on slowdown risk``
  (H14, round 17) ranks as H13a on the slowdown index of the predicted distribution
  (:func:`rush.core.slowdown_rank.slowdown_ranking_runtimes`, tau the metric's) instead of its mean;
  ``SPF-CI with predicted tie-breaks`` (H15, round 17, post hoc) keeps SPF-CI's order by request
  and orders only equal requests by the predicted mean
  (:func:`rush.core.runtime_predictions.request_first_runtimes`).
  ``SPF-CI ranked where confident`` (H17, round 20) ranks as H13a, but on the predictor's upper
  quantile (q0.9) only for jobs whose q0.9 is at most half the request, every other job on its
  request as SPF-CI (:func:`rush.core.runtime_predictions.confident_ranking_runtimes`).
  ``SPF-CI one step where confident`` (H18, round 21, post hoc) uses H17's gate but moves a
  confident job one request step only (it ranks on half its request, not on its q0.9)
  (:func:`rush.core.runtime_predictions.confident_step_ranking_runtimes`).
  ``SPF-CI backfilled on Gaussier online`` (H19, round 25) is SPF-CI exactly (classes,
  dividers, kills, its queue order on the requests, the starvation threshold) with Gaussier et
  al.'s online E-Loss predictions (``SimInputs.online_prediction = "gaussier-online"``) given
  to the EASY backfill scan, the backfill test and the head's reservation only
  (``prediction_scope = "backfill"``), corrected stepwise; ``SPF-CI backfilled on EASY++
  online`` the same with EASY++'s online predictions (context). Both ignore the quantile
  predictor's ``predicted`` values.
  ``SAF-CI ranked on predictions`` (H16, round 19) is H13a with the core's SAF policy in place of
  SPF: each class and the backfill scan ordered by the predicted area (predicted runtime x
  processors), planned on the limits; ``SAF-CI (classifier)`` its control, the same classes
  ordered by the requested area (no predictor).

The same protocol as Table 6.6 (EASY, starvation threshold 200,000 s, tau 10 s; improvement of
the mean bounded slowdown over EASY-FCFS on the requests). Kills are counted as the simulator
counts them (false-small kills at the divider; kills at the request are the trace's own).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rush.core.config import CoreConfig
from rush.models.walkforward import published_job_set
from rush.simulator.engine import SimInputs, simulate
from rush.simulator.metrics import compute_metrics
from rush.simulator.result import SimResult
from rush.studies.runtime_predictions import TAU, THRESHOLD
from rush.workload.model import Workload

SCHEDULERS = (
    "quantile FCFS-CI",
    "quantile SPF-CI",
    "rush-Q",
    "rush-Q (plain threshold)",
    "quantile SPF-CI (kill budget)",
    "rush-Q (kill budget)",
)
# Run only when FCFS-CI's walk-forward decisions are given (quantile_rows' reference_false_small).
MATCHED_SCHEDULERS = ("quantile SPF-CI (FCFS-CI's kill rate)", "rush-Q (FCFS-CI's kill rate)")
# Run only when the classifier's walk-forward of the job set is given (quantile_rows' classifier).
CLASSIFIER_SCHEDULERS = (
    "SPF-CI (classifier)",
    "SPF-CI ranked on predictions",
    "SPF-CI with predictions",
    "SPF-CI ranked on slowdown risk",
    "SPF-CI with predicted tie-breaks",
    "SAF-CI ranked on predictions",
    "SAF-CI (classifier)",
    "SPF-CI ranked where confident",
    "SPF-CI one step where confident",
    "SPF-CI backfilled on Gaussier online",
    "SPF-CI backfilled on EASY++ online",
)
# The schedulers whose online predictions are given to the backfill only (the order keeps the
# request): name -> SimInputs.online_prediction.
BACKFILL_ONLINE_SCHEDULERS = {
    "SPF-CI backfilled on Gaussier online": "gaussier-online",
    "SPF-CI backfilled on EASY++ online": "easy++-online",
}
# The schedulers whose predictions only rank the classes (planned on the limits).
RANKING_SCHEDULERS = (
    "SPF-CI ranked on predictions",
    "SPF-CI ranked on slowdown risk",
    "SPF-CI with predicted tie-breaks",
    "SAF-CI ranked on predictions",
    "SPF-CI ranked where confident",
    "SPF-CI one step where confident",
)
# The schedulers that order each class by area (the core's SAF: runtime x processors) instead of runtime.
AREA_SCHEDULERS = ("SAF-CI ranked on predictions", "SAF-CI (classifier)")
# The share of jobs the kill-budget decision may kill at the divider (false smalls among the
# jobs whose outcome is known): FCFS-CI kills 26-30 % of the jobs on the four traces
# (sim/runtime_classes, published job set), so 25 % keeps rush-Q's kills under FCFS-CI's.
KILL_BUDGET = 0.25


def _published(workload: Workload) -> np.ndarray:
    return np.flatnonzero((workload.runtime > 0) & (workload.runtime < workload.requested_time))


def scheduler_inputs(
    name: str,
    wf,
    rows: np.ndarray,
    idempotent_threshold: float,
    reference_false_small: np.ndarray | None = None,
    classifier=None,
) -> tuple[SimInputs, dict]:
    """(inputs, CoreConfig keywords) of one scheduler for the jobs ``rows`` of the walk-forward;
    ``reference_false_small`` (per job of the walk-forward) for :data:`MATCHED_SCHEDULERS`,
    ``classifier`` (the runtime classifier's walk-forward of the jobs ``rows``) for
    :data:`CLASSIFIER_SCHEDULERS`."""
    if name == "SPF-CI ranked on slowdown risk":
        from rush.core.slowdown_rank import slowdown_ranking_runtimes

        risk = slowdown_ranking_runtimes(wf.quantiles[rows], wf.levels, wf.requested_time[rows], TAU)
        return classifier_inputs(name, risk, classifier)
    if name == "SPF-CI with predicted tie-breaks":
        from rush.core.runtime_predictions import request_first_runtimes

        keys = request_first_runtimes(wf.calibrated_mean()[rows], wf.requested_time[rows])
        return classifier_inputs(name, keys, classifier)
    if name == "SPF-CI ranked where confident":
        from rush.core.runtime_predictions import confident_ranking_runtimes

        keys = confident_ranking_runtimes(wf.quantiles[rows], wf.levels, wf.requested_time[rows])
        return classifier_inputs(name, keys, classifier)
    if name == "SPF-CI one step where confident":
        from rush.core.runtime_predictions import confident_step_ranking_runtimes

        keys = confident_step_ranking_runtimes(wf.quantiles[rows], wf.levels, wf.requested_time[rows])
        return classifier_inputs(name, keys, classifier)
    if name in CLASSIFIER_SCHEDULERS:
        return classifier_inputs(name, wf.calibrated_mean()[rows], classifier)
    proba = wf.proba_small[rows]
    divider = wf.class_walkforward().divider_or_first()[rows]
    if "FCFS-CI's kill rate" in name:
        if reference_false_small is None:
            raise ValueError(f"{name} needs FCFS-CI's decisions (reference_false_small)")
        threshold = matched_threshold(wf, reference_false_small)[rows]
        classes = np.where(np.isfinite(proba) & (proba >= threshold), 0, 1).astype(np.int64)
    elif "plain threshold" in name:
        classes = np.asarray(wf.predicted_class[rows], dtype=np.int64)
    elif "kill budget" in name:
        classes = np.where(np.isfinite(proba) & (proba >= kill_budget_threshold(wf)[rows]), 0, 1).astype(
            np.int64
        )
    else:
        classes = np.where(np.isfinite(proba) & (proba >= idempotent_threshold), 0, 1).astype(np.int64)
    config = {
        "use_classes": True,
        "kill_false_small": True,
        "divider": float(np.median(divider)),
        "policy": "FCFS" if name.startswith("quantile FCFS") else "SPF",
    }
    if not name.startswith("rush-Q"):
        return SimInputs(runtime_class=classes, divider=divider), config
    config |= {"scan": "SPF", "prediction_correction": "stepwise" if "stepwise" in name else "request"}
    # The mean rush deploys (rule H8): the model's mean times its band's factor.
    estimate = wf.calibrated_mean()[rows]
    return SimInputs(estimate=estimate, runtime_class=classes, divider=divider), config


def classifier_inputs(name: str, predicted: np.ndarray, classifier) -> tuple[SimInputs, dict]:
    """One of :data:`CLASSIFIER_SCHEDULERS`: SPF-CI's inputs (the runtime-class study's
    classification-idempotent from the classifier's walk-forward ``classifier``; SAF in place of
    SPF for :data:`AREA_SCHEDULERS`), and for the others the predicted (or slowdown-equivalent)
    runtimes ``predicted`` (one per job of it)."""
    from rush.studies.runtime_variants import variant_inputs

    if classifier is None:
        raise ValueError(f"{name} needs the runtime classifier's walk-forward of the job set")
    if len(predicted) != len(classifier.runtime):
        raise ValueError(f"{len(predicted)} predictions for {len(classifier.runtime)} classified jobs")
    inputs, config, _ = variant_inputs("classification-idempotent", None, None, walkforward=classifier)
    config["policy"] = "SAF" if name in AREA_SCHEDULERS else "SPF"
    if name in RANKING_SCHEDULERS:
        inputs.rank_estimate = predicted
    elif name in BACKFILL_ONLINE_SCHEDULERS:
        inputs.online_prediction = BACKFILL_ONLINE_SCHEDULERS[name]
        inputs.prediction_scope = "backfill"
        config["prediction_correction"] = "stepwise"
    elif name == "SPF-CI with predictions":
        inputs.estimate = predicted
        config |= {"scan": "SPF", "prediction_correction": "request"}
    return inputs, config


def kill_budget_threshold(wf) -> np.ndarray:
    """Each job's kill-budget threshold (:data:`KILL_BUDGET`), from the walk-forward's past."""
    from rush.models.runtime_quantiles_walkforward import walkforward_thresholds

    end = getattr(wf, "end", None)
    if end is None:
        raise ValueError("the walk-forward carries no job ends: rerun it with this rush")
    submit = wf.submit
    return walkforward_thresholds(wf.proba_small, wf.runtime, wf.divider, end, submit, KILL_BUDGET)


def matched_threshold(wf, reference_false_small: np.ndarray) -> np.ndarray:
    """Each job's threshold under FCFS-CI's kill rate so far (round 12), from the walk-forward's
    past: ``reference_false_small`` per job of ``wf`` (1 FCFS-CI's false small, 0 not, NaN no
    FCFS-CI decision: such jobs do not count)."""
    from rush.models.runtime_quantiles_walkforward import walkforward_thresholds

    if wf.end is None:
        raise ValueError("the walk-forward carries no job ends: rerun it with this rush")
    return walkforward_thresholds(
        wf.proba_small, wf.runtime, wf.divider, wf.end, wf.submit, reference_false_small=reference_false_small
    )


@dataclass(frozen=True)
class RowOptions:
    """What :func:`quantile_rows` runs beyond the default schedulers (each field below)."""

    idempotent_threshold: float = 0.1
    reference_false_small: np.ndarray | None = None
    names: tuple[str, ...] | None = None
    classifier: object = None
    tie_seeds: tuple[int | None, ...] = (None,)


def quantile_rows(
    trace: str, job_set: str, workload_full: Workload, wf, options: RowOptions = RowOptions()
) -> list[dict]:
    """Every scheduler of :data:`SCHEDULERS` (and the EASY-FCFS base) on one trace and job set,
    and of :data:`MATCHED_SCHEDULERS` when ``reference_false_small`` (FCFS-CI's false smalls, per
    job of the full trace; NaN where FCFS-CI made no decision) is given.
    ``published``: the walk-forward of the full trace restricted to the published jobs (the
    predictor saw every logged job, as a site's would). ``names``: only these schedulers.
    ``classifier`` (the runtime classifier's walk-forward of the job set) adds
    :data:`CLASSIFIER_SCHEDULERS`. ``tie_seeds``: each scheduler once per seed, its equal ranking
    keys ordered by the seed's permutation of the jobs
    (:func:`rush.core.runtime_predictions.random_tie_breaks`; ``None``: by arrival, as
    always); a seed's rows say it (``tie_seed``). Each is a field of ``options``."""
    idempotent_threshold, reference_false_small = options.idempotent_threshold, options.reference_false_small
    names, classifier, tie_seeds = options.names, options.classifier, options.tie_seeds
    every = SCHEDULERS + (MATCHED_SCHEDULERS if reference_false_small is not None else ())
    every += CLASSIFIER_SCHEDULERS if classifier is not None else ()
    unknown = [n for n in names or () if n not in every]
    if unknown:
        raise ValueError(f"unknown scheduler(s) {unknown}: use some of {list(every)}")
    rows = _published(workload_full) if job_set == "published" else np.arange(len(workload_full))
    workload = published_job_set(workload_full) if job_set == "published" else workload_full
    base = compute_metrics(simulate(workload, CoreConfig.from_names("FCFS", "easy", THRESHOLD)), tau=TAU)
    out = []
    for name in every if names is None else names:
        for seed in tie_seeds:
            inputs, config = scheduler_run_inputs(name, wf, rows, options)
            if seed is not None:
                inputs.rank_estimate = _random_ties(inputs, workload, seed)
            out.append(_row(trace, job_set, workload, name, idempotent_threshold, config, inputs, base))
            if seed is not None:
                out[-1]["tie_seed"] = seed
    return out


def scheduler_run_inputs(
    name: str, wf, rows: np.ndarray, options: RowOptions
) -> tuple[SimInputs, CoreConfig]:
    """(inputs, configuration) of one scheduler's run on the jobs ``rows`` of the walk-forward
    (:func:`scheduler_inputs` with ``options``' decisions, under Table 6.6's protocol)."""
    inputs, kw = scheduler_inputs(
        name, wf, rows, options.idempotent_threshold, options.reference_false_small, options.classifier
    )
    return inputs, CoreConfig.from_names(kw.pop("policy"), "easy", THRESHOLD, kw.pop("scan", None), **kw)


def _random_ties(inputs: SimInputs, workload: Workload, seed: int) -> np.ndarray:
    """The ranking keys the simulator would use for ``inputs``, their ties ordered by ``seed``."""
    from rush.core.runtime_predictions import random_tie_breaks, ranking_runtimes

    requested = np.asarray(workload.requested_time, dtype=np.float64)
    estimate = requested if inputs.estimate is None else np.asarray(inputs.estimate, dtype=np.float64)
    return random_tie_breaks(ranking_runtimes(inputs.rank_estimate, estimate, requested), seed)


def _row(
    trace: str,
    job_set: str,
    workload: Workload,
    name: str,
    idempotent_threshold: float,
    config: CoreConfig,
    inputs: SimInputs,
    base: dict,
) -> dict:
    """One scheduler's row: its run beside the EASY-FCFS ``base`` metrics."""
    return result_row(trace, job_set, name, idempotent_threshold, simulate(workload, config, inputs), base)


def result_row(
    trace: str, job_set: str, name: str, idempotent_threshold: float, result: SimResult, base: dict
) -> dict:
    """One scheduler's row from its run ``result`` beside the EASY-FCFS ``base`` metrics."""
    metrics = compute_metrics(result, tau=TAU)
    return {
        "trace": trace,
        "job_set": job_set,
        "jobs": len(result),
        "scheduler": name,
        "idempotent_threshold": idempotent_threshold,
        "mean_bounded_slowdown": metrics["mean_bounded_slowdown"],
        "improvement_over_easy_fcfs_pct": 100.0
        * (base["mean_bounded_slowdown"] - metrics["mean_bounded_slowdown"])
        / base["mean_bounded_slowdown"],
        "false_small_kills": int(result.requeues.sum()),
        "base_bsld": base["mean_bounded_slowdown"],
    }
