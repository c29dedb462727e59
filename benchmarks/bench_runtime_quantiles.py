"""Runtime-quantile predictor figures (issue 29): live prediction for 10,000 pending jobs
(target <= 50 ms) and a weekly retrain on the largest of the four study traces, SDSC-BLUE
(target <= 10 s), with references measured in the same run.

1. Retrain: ``fit_quantiles_on_history`` on SDSC-BLUE's whole trace (232,562 jobs: every
   job's features at its submission, the history summarised, the five quantile models fitted
   on the 10,000 most recently finished jobs, as the weekly walk-forward does, and the mean's
   bands from two cross-fitted halves of those rows); and the
   quantile models alone on those 10,000 rows. Reference: rush's runtime classifier (the
   issue-13 boosting, ``default_classifier``) fitted on the same rows.
2. Prediction: 10,000 pending jobs of known users and shapes submitted in the trace's last
   day, through the pipeline (features from the live history, five quantile models, P(small)
   at the divider); median of 7, and its parts (features, models).
3. Yardstick: the start-up of ``python -c pass`` (how busy the machine is).

Run: ``RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 python benchmarks/bench_runtime_quantiles.py``
(``--max-iter``, ``--learning-rate``, ``--max-leaf-nodes``: another model than the predictor's default;
``--feature-set``: another feature set; ``--reference-feature-set base`` also times that set's
retrain and prediction in the same run, as the reference for a feature change; ``--class-head``
where P(small) comes from, ``--reference-class-head quantiles`` also times that one in the same run)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import bench_args
import numpy as np
from sklearn.base import clone

from rush.models.runtime_features import TimeBase
from rush.models.runtime_quantiles import CLASS_HEADS, RuntimeQuantileRegressor
from rush.models.runtime_quantiles_features import DEFAULT_FEATURE_SET, FEATURE_SETS, QuantileJobs
from rush.models.runtime_quantiles_pipeline import fit_quantiles_on_history
from rush.models.walkforward import default_classifier
from rush.workload.catalogue import load_trace
from rush.workload.model import workload_from_trace

TRACE = "SDSC-BLUE"
TRAIN_JOBS = 10_000
PENDING = 10_000


def python_pass_ms() -> float:
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def median_ms(work, repeats: int = 7, clock=time.perf_counter) -> float:
    times = []
    for _ in range(repeats):
        t0 = clock()
        work()
        times.append(clock() - t0)
    return statistics.median(times) * 1e3


def model_from_args() -> tuple[RuntimeQuantileRegressor, argparse.Namespace]:
    default = RuntimeQuantileRegressor()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-iter", type=bench_args.positive, default=default.max_iter)
    parser.add_argument("--learning-rate", type=bench_args.positive_number, default=default.learning_rate)
    parser.add_argument("--max-leaf-nodes", type=bench_args.positive, default=default.max_leaf_nodes)
    parser.add_argument("--feature-set", default=DEFAULT_FEATURE_SET, choices=sorted(FEATURE_SETS))
    parser.add_argument("--reference-feature-set", default=None, choices=sorted(FEATURE_SETS))
    parser.add_argument("--class-head", default=default.class_head, choices=CLASS_HEADS)
    parser.add_argument("--reference-class-head", default=None, choices=CLASS_HEADS)
    args = parser.parse_args()
    model = RuntimeQuantileRegressor(
        max_iter=args.max_iter,
        learning_rate=args.learning_rate,
        max_leaf_nodes=args.max_leaf_nodes,
        class_head=args.class_head,
    )
    return model, args


def main() -> None:
    model, args = model_from_args()
    print(
        f"model: {model.max_iter} iterations at {model.learning_rate}, {model.max_leaf_nodes} leaves",
        flush=True,
    )
    print(f"python -c pass: {python_pass_ms():.0f} ms (median of 5)", flush=True)
    trace = load_trace(TRACE)
    w = workload_from_trace(trace)
    runs = [(args.reference_feature_set, args.class_head)] if args.reference_feature_set else []
    runs += [(args.feature_set, args.reference_class_head)] if args.reference_class_head else []
    for feature_set, class_head in [*runs, (args.feature_set, args.class_head)]:
        measure(clone(model).set_params(class_head=class_head), trace, w, feature_set)


def measure(model: RuntimeQuantileRegressor, trace, w, feature_set: str) -> None:
    """Retrain and prediction figures of one feature set (module docstring)."""
    print(f"feature set {feature_set}, class head {model.class_head}:", flush=True)
    t0, c0 = time.perf_counter(), time.process_time()
    pipeline, card = fit_quantiles_on_history(
        w, trace.header, model, max_train_jobs=TRAIN_JOBS, feature_set=feature_set
    )
    retrain, retrain_cpu = time.perf_counter() - t0, time.process_time() - c0
    features, regressor = pipeline.named_steps["features"], pipeline.named_steps["regressor"]
    # The same training rows for the model-only timings: the most recently finished.
    from rush.models.runtime_quantiles_features import clipped, offline_features
    from rush.models.runtime_quantiles_walkforward import trace_jobs

    time_base = TimeBase.from_header(trace.header)
    jobs = trace_jobs(w, time_base)
    all_X = offline_features(jobs, time_base.clock, feature_set=feature_set)
    recent = np.argsort(jobs.end, kind="stable")[-TRAIN_JOBS:]
    runtime = clipped(jobs.runtime, jobs.requested_time)
    t0 = time.perf_counter()
    clone(model).set_params(divider=card["divider"]).fit(all_X[recent], runtime[recent])
    models_only = time.perf_counter() - t0
    labels = np.where(runtime[recent] <= card["divider"], 0, 1)
    t0 = time.perf_counter()
    reference = default_classifier().fit(all_X[recent], labels)
    classifier = time.perf_counter() - t0
    print(
        f"retrain on {TRACE} ({len(w)} jobs, {all_X.shape[1]} features, models on the {TRAIN_JOBS} most "
        f"recently finished): whole pipeline {retrain:.2f} s wall, {retrain_cpu:.2f} s CPU, the "
        f"models alone {models_only:.2f} s; reference: runtime classifier (boosting, 100 "
        f"iterations) on the same rows {classifier:.2f} s; target 10 s",
        flush=True,
    )
    rng = np.random.default_rng(0)
    pick = rng.integers(0, len(w), PENDING)
    pending = QuantileJobs(
        jobs.user[pick],
        jobs.procs[pick],
        jobs.requested_time[pick],
        jobs.submit[-1] - rng.random(PENDING) * 86400 + 86400,  # after the history, as live
        app=jobs.app[pick] if jobs.app is not None else None,
        queue=jobs.queue[pick] if jobs.queue is not None else None,
    )
    features.transform(pending)  # compile and summarise once (the summary is kept between passes)
    feats = features.transform(pending)

    def predict() -> None:  # quantiles and P(small) from one pass over the models
        X = features.transform(pending)
        log_q = regressor.predict_log_quantiles(X)
        regressor.proba_small(X, log_q)

    # The queued jobs' mean (what start estimates add up), with the model's bands and without.
    from rush.models.runtime_quantiles import mean_of_quantiles
    from rush.models.runtime_quantiles_features import REQUEST_COLUMN

    log_q = regressor.predict_log_quantiles(feats)
    calibrated_ms = median_ms(
        lambda: regressor.calibrated_mean(log_q, feats[:, REQUEST_COLUMN]), clock=time.process_time
    )
    plain_ms = median_ms(
        lambda: mean_of_quantiles(log_q, regressor.levels_, feats[:, REQUEST_COLUMN]), clock=time.process_time
    )
    bands = regressor.mean_bands_
    print(
        f"mean of {PENDING} pending jobs from their quantiles: calibrated ({len(bands.bands) if bands else 0} "
        f"bands) {calibrated_ms:.1f} ms CPU; reference: the plain mean {plain_ms:.1f} ms CPU (median of 7)",
        flush=True,
    )
    total = median_ms(predict)
    cpu = median_ms(predict, clock=time.process_time)  # every thread's CPU: what the load does not inflate
    feature_ms = median_ms(lambda: features.transform(pending))
    model_ms = median_ms(lambda: regressor.predict_quantiles(feats))
    reference_ms = median_ms(lambda: reference.predict_proba(feats))
    print(
        f"predict {PENDING} pending jobs (quantiles and P(small)): {total:.1f} ms wall, {cpu:.1f} ms CPU "
        f"(features {feature_ms:.1f} ms, "
        f"five quantile models {model_ms:.1f} ms), median of 7; target 50 ms; reference: the runtime "
        f"classifier's P(small) on the same rows {reference_ms:.1f} ms (same compiled-tree kernel)",
        flush=True,
    )


if __name__ == "__main__":
    main()
