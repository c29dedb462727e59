"""Runtime classifier figures: live prediction latency (target <= 50 ms for 10,000 pending
jobs) and walk-forward time and quality per trace.

1. Fits the deployable pipeline on KTH-SP2's whole history (``fit_on_history``: the feature
   step holds the trace's per-user history, then the classifier), then times the daemon's
   per-pass work on 10,000 pending jobs' raw columns (``LiveRuntimeModel.predict``: the
   submissions recorded, features, classification), median of 7: cold (the per-category
   summary cache cleared, as after completions) and warm; and its parts: the features alone
   (cold and warm cache) and the trees alone (``RuntimeClassifier.predict`` on the feature
   matrix; and on one core, as when another process holds the second). Twice: the issue-13
   classifier (``rush train``'s default: boosting, P(small) >= 0.5; its trees split the rows
   between the cores) and, as the reference, the previous default (the 50-tree depth-12
   forest, compiled, one core). A first line gives the load average, numba's threading layer
   and threads, and the start-up time of ``python -c pass`` as a yardstick of how busy the
   machine was.
2. With ``--walkforward NAME ...``: times the walk-forward (both modes) on those traces and
   prints the classification quality.

Run: ``RUSH_TRACE_MIRROR=/work/shared/traces python benchmarks/bench_classifier.py
[--walkforward KTH-SP2 SDSC-SP2 HPC2N]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from rush.models import runtime_class

try:
    from rush.models import trees
except ImportError:  # before issue 19: the kernels lived in runtime_class
    trees = None
from rush.models.history import JobColumns
from rush.models.runtime_class import RuntimeClassifier
from rush.models.runtime_features import TimeBase
from rush.models.walkforward import (
    DEFAULT_MAX_TRAIN_JOBS,
    default_classifier,
    fit_on_history,
    predict_classes_walkforward,
    prepare,
)
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
            "boosting, P(small) >= 0.5 (0.1 if killable) (rush train default)",
            default_classifier(),
        ),
        ("reference: 50-tree depth-12 forest (previous default)", RuntimeClassifier()),
    ):
        pipeline = fit_on_history(w, trace.header, mode="live", estimator=classifier).model
        ms = pass_times(pipeline, pending)
        print(
            f"live predict, 10,000 pending jobs, {label}: cold {ms['cold']:.1f} ms, warm {ms['warm']:.1f} ms "
            f"(features alone: cold {ms['features cold']:.1f} ms, warm {ms['features warm']:.1f} ms; "
            f"trees alone {ms['trees']:.1f} ms, on one core {ms['trees one core']:.1f} ms); target 50 ms",
            flush=True,
        )


def pass_times(pipeline, pending: JobColumns, repeats: int = 7) -> dict[str, float]:
    """Median milliseconds of a live pass (cold, warm) and of its parts."""
    features = pipeline.named_steps["features"]
    model = pipeline.steps[-1][1]
    history = features.history_
    X = features.transform(pending)
    times: dict[str, list[float]] = {}

    def timed(name: str, work, cold: bool = False) -> None:
        if cold:
            history._cache.clear()  # a completion since the last pass invalidates summaries
        t0 = time.perf_counter()
        work()
        times.setdefault(name, []).append(time.perf_counter() - t0)

    def live_predict() -> None:  # as LiveRuntimeModel.predict
        history.observe_submitted(pending.user, pending.submit)
        pipeline.predict(pending)

    for _ in range(repeats):
        timed("cold", live_predict, cold=True)
        timed("warm", live_predict)
        timed("features cold", lambda: features.transform(pending), cold=True)
        timed("features warm", lambda: features.transform(pending))
        timed("trees", lambda: model.predict(X))
        timed("trees one core", lambda: one_core(model, X))
    return {name: statistics.median(xs) * 1e3 for name, xs in times.items()}


def one_core(model, X: np.ndarray) -> None:
    """The trees on one core: the parallel kernel held, as if another thread were in it."""
    # rush.models.trees since issue 19; runtime_class before it; none before issue 13's speed-up
    lock = getattr(trees, "PARALLEL", None) if trees is not None else None
    with lock or getattr(runtime_class, "_PARALLEL", contextlib.nullcontext()):
        model.predict(X)


def machine() -> None:
    """How busy the machine was: load, numba's threads, and a yardstick (``python -c pass``)."""
    import numba

    starts = []
    for _ in range(7):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        starts.append(time.perf_counter() - t0)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"machine: {os.cpu_count()} cores, load average {load}; numba {numba.config.NUMBA_NUM_THREADS} "
        f"threads, layer setting {numba.config.THREADING_LAYER!r}; python -c pass "
        f"{statistics.median(starts) * 1e3:.1f} ms",
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
                estimator=default_classifier(),
                max_train_jobs=DEFAULT_MAX_TRAIN_JOBS,
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
        machine()
        latency()
    walkforward(args.walkforward)


if __name__ == "__main__":
    main()
