"""Runtime classifier figures: live prediction latency (target <= 50 ms for 10,000 pending
jobs) and walk-forward time and quality per trace.

1. Fits the deployable pipeline on KTH-SP2's whole history (``fit_on_history``: the feature
   step holds the trace's per-user history, then the classifier), then times the daemon's
   per-pass work on 10,000 pending jobs' raw columns (``LiveRuntimeModel.predict``: the
   submissions recorded, features, classification), cold cache and warm cache. Twice: the
   issue-13 classifier (``rush train``'s default: boosting, P(small) >= 1/3) and, as the
   reference, the previous default (the 50-tree depth-12 forest, compiled).
2. With ``--walkforward NAME ...``: times the walk-forward (both modes) on those traces and
   prints the classification quality.

Run: ``RUSH_TRACE_MIRROR=/work/shared/traces python benchmarks/bench_classifier.py
[--walkforward KTH-SP2 SDSC-SP2 HPC2N]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from rush.models.history import JobColumns
from rush.models.runtime_class import SMALL_THRESHOLD, RuntimeClassifier
from rush.models.runtime_features import TimeBase
from rush.models.walkforward import fit_on_history, predict_classes_walkforward, prepare
from rush.workload.catalogue import load_trace
from rush.workload.model import workload_from_trace


def latency() -> None:
    trace = load_trace("KTH-SP2")
    w = workload_from_trace(trace)
    unix_start = TimeBase.from_header(trace.header).unix_start
    rng = np.random.default_rng(0)
    pick = rng.integers(0, len(w), 10_000)
    # Pending jobs of known users/shapes, submitted within the last day of the trace (Unix time).
    pending = JobColumns(
        w.user[pick],
        w.procs[pick],
        w.requested_time[pick],
        unix_start + w.submit[-1] - rng.random(10_000) * 86400,
    )
    for label, classifier in (
        (
            "boosting, P(small) >= 1/3 (rush train default)",
            RuntimeClassifier(estimator="hgb", n_estimators=100, threshold=SMALL_THRESHOLD),
        ),
        ("reference: 50-tree depth-12 forest (previous default)", RuntimeClassifier()),
    ):
        pipeline = fit_on_history(w, trace.header, mode="live", estimator=classifier).model
        features = pipeline.named_steps["features"]
        history = features.history_
        cold, warm, features_only = [], [], []
        for _ in range(7):
            history._cache.clear()  # a completion since the last pass invalidates summaries
            t0 = time.perf_counter()
            history.observe_submitted(pending.user, pending.submit)  # as LiveRuntimeModel.predict
            pipeline.predict(pending)
            cold.append(time.perf_counter() - t0)
            t1 = time.perf_counter()
            features.transform(pending)
            features_only.append(time.perf_counter() - t1)
            t2 = time.perf_counter()
            history.observe_submitted(pending.user, pending.submit)
            pipeline.predict(pending)
            warm.append(time.perf_counter() - t2)
        ms = lambda xs: statistics.median(xs) * 1e3  # noqa: E731
        print(
            f"live predict, 10,000 pending jobs, {label}: cold {ms(cold):.1f} ms, warm {ms(warm):.1f} ms "
            f"(features alone, warm: {ms(features_only):.1f} ms); target 50 ms",
            flush=True,
        )


def walkforward(names: list[str]) -> None:
    for name in names:
        trace = load_trace(name)
        w = workload_from_trace(trace)
        t0 = time.perf_counter()
        prepared = prepare(w, trace.header)
        t_prep = time.perf_counter() - t0
        for mode in ("weekly", "live"):
            r = predict_classes_walkforward(
                w,
                trace.header,
                mode=mode,
                prepared=prepared,
                estimator=RuntimeClassifier(estimator="hgb", n_estimators=100, threshold=SMALL_THRESHOLD),
                max_train_jobs=20_000,
            )
            q = r.classification()
            print(
                f"{name} {mode}: {len(w)} jobs, {len(r.weekly_report)} weeks, {r.seconds + t_prep:.1f} s; "
                + ", ".join(f"{k} {v:.3f}" for k, v in q.items() if v is not None)
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--walkforward", nargs="*", default=[], metavar="TRACE")
    parser.add_argument("--no-latency", action="store_true")
    args = parser.parse_args()
    if not args.no_latency:
        latency()
    walkforward(args.walkforward)


if __name__ == "__main__":
    main()
