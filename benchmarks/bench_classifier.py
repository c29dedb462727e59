"""Live runtime-class prediction for 10,000 pending jobs (features + model). Target <= 50 ms.

Trains the default classifier on KTH-SP2's walk-forward features, fills a live history
from the trace, then times ``RuntimeHistory.features`` + ``predict`` for 10,000 pending jobs.

Run: ``RUSH_TRACE_MIRROR=../shared/traces python benchmarks/bench_classifier.py``
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import numpy as np

from rush.models.runtime_class import RuntimeClassifier
from rush.models.runtime_features import RuntimeHistory, local_time
from rush.models.walkforward import clipped_runtime, predict_classes_walkforward
from rush.workload.model import workload_from_trace
from rush.workload.swf import read_swf


def main() -> None:
    mirror = Path(os.environ.get("RUSH_TRACE_MIRROR", "../shared/traces"))
    trace = read_swf(mirror / "KTH-SP2-1996-2.1-cln.swf.gz")
    w = workload_from_trace(trace)
    t0 = time.perf_counter()
    wf = predict_classes_walkforward(w, trace.header)
    print(
        f"walk-forward on KTH-SP2 ({len(w)} jobs, {len(wf.weekly)} weekly retrainings): {time.perf_counter() - t0:.1f} s"
    )
    runtime = clipped_runtime(w)
    divider = float(np.median(runtime))
    model = RuntimeClassifier().fit(wf.features, np.where(runtime <= divider, 0, 1))
    history = RuntimeHistory()
    local = local_time(w.submit, trace.header)
    for j in range(len(w)):
        history.observe_finished(w.user[j], w.procs[j], w.requested_time[j], local[j], runtime[j])
    rng = np.random.default_rng(0)
    pick = rng.integers(0, len(w), 10_000)
    now = local[-1] + 3600
    times, feature_times = [], []
    for _ in range(7):
        t1 = time.perf_counter()
        X = history.features(
            w.user[pick], w.procs[pick], w.requested_time[pick], np.full(len(pick), now), divider
        )
        t2 = time.perf_counter()
        model.predict(X)
        times.append(time.perf_counter() - t1)
        feature_times.append(t2 - t1)
    print(
        f"predict 10,000 pending jobs: median {statistics.median(times) * 1e3:.1f} ms "
        f"(features {statistics.median(feature_times) * 1e3:.1f} ms; target 50 ms)"
    )


if __name__ == "__main__":
    main()
