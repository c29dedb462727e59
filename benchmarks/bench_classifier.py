"""Runtime classifier figures: live prediction latency (target <= 50 ms for 10,000 pending
jobs) and walk-forward time and quality per trace.

1. Fits the deployable pipeline on KTH-SP2's whole history (``fit_on_history``: the feature
   step holds the trace's per-user history, then the default classifier), then times the
   pipeline's ``predict`` on 10,000 pending jobs' raw columns (the daemon's per-pass work:
   features + classification), cold cache and warm cache.
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
from rush.models.runtime_features import TimeBase
from rush.models.walkforward import fit_on_history, predict_classes_walkforward, prepare
from rush.workload.catalogue import load_trace
from rush.workload.model import workload_from_trace


def latency() -> None:
    trace = load_trace("KTH-SP2")
    w = workload_from_trace(trace)
    trained = fit_on_history(w, trace.header)
    pipeline = trained.model
    features, classifier = pipeline.named_steps["features"], pipeline.named_steps["classifier"]
    history = features.history_
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
    cold, warm, features_only = [], [], []
    for _ in range(7):
        history._cache.clear()  # a completion since the last pass invalidates summaries
        t0 = time.perf_counter()
        pipeline.predict(pending)
        cold.append(time.perf_counter() - t0)
        t1 = time.perf_counter()
        features.transform(pending)
        features_only.append(time.perf_counter() - t1)
        t2 = time.perf_counter()
        pipeline.predict(pending)
        warm.append(time.perf_counter() - t2)
    ms = lambda xs: statistics.median(xs) * 1e3  # noqa: E731
    print(
        f"live predict, 10,000 pending jobs ({len(classifier.model_.estimators_)} trees, depth "
        f"{classifier.max_depth}): cold {ms(cold):.1f} ms, warm {ms(warm):.1f} ms "
        f"(features alone, warm: {ms(features_only):.1f} ms); target 50 ms"
    )


def walkforward(names: list[str]) -> None:
    for name in names:
        trace = load_trace(name)
        w = workload_from_trace(trace)
        t0 = time.perf_counter()
        prepared = prepare(w, trace.header)
        t_prep = time.perf_counter() - t0
        for mode in ("weekly", "live"):
            r = predict_classes_walkforward(w, trace.header, mode=mode, prepared=prepared)
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
