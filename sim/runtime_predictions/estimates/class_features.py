"""Runtime classes from the quantile predictor, round 4: a diagnostic and four tries (``dev_log.md``).

Every try's assumption is written in ``dev_log.md`` before it ran. Each reuses the cached weekly
walk-forward of ``run.py`` with the predictor's default model and ``class_heads.py``'s protocol
(``scores``): threshold chosen walk-forward over past outcomes only, week 0 large.

* ``D1`` (diagnostic, future data): errors near the divider; per-week best threshold in hindsight;
* ``T1``: the plain threshold chosen over the last 8 weeks of known outcomes;
* ``T2``: the divider head on all history with the (user, procs, request) category's history;
* ``T3``: the same head with the outcome (status, killed at request) of the user's last job;
* ``T4``: the mean of the quantiles' P(small) and the best head's.

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 10 \\
        python sim/runtime_predictions/estimates/class_features.py --traces KTH-SP2 [--tries T1,T2]

Writes ``results/class_features_<trace>.{csv,md}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from class_heads import _ORIGIN, head_proba, scores  # noqa: E402
from run import OUT, cached_walkforward, load, write_table  # noqa: E402

from rush.studies.arg_types import names, trace_specs

TRIES = ("D1", "T1", "T2", "T3", "T23", "T4")
WINDOW_WEEKS = 8  # T1's trailing window, fixed before the run


def trailing_thresholds(proba, runtime, divider, end, submit, weeks: int) -> np.ndarray:
    """T1: each week's threshold with the best accuracy over outcomes known at its start whose
    end lies in the ``weeks`` weeks before it (all known ones while fewer exist)."""
    from rush.models.runtime_quantiles_walkforward import DEFAULT_THRESHOLD, THRESHOLDS, WEEK

    threshold = np.full(len(proba), DEFAULT_THRESHOLD)
    origin = float(submit[0])
    week = ((submit - origin) // WEEK).astype(np.int64)
    bounds = np.searchsorted(week, np.arange(int(week[-1]) + 2))
    known_p = np.isfinite(proba)
    small = runtime <= divider
    for k in range(len(bounds) - 1):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        start = origin + WEEK * k
        known = np.flatnonzero(known_p & (end < start) & (end >= start - weeks * WEEK))
        if hi == lo or not len(known):
            continue
        called = proba[known][:, None] >= THRESHOLDS[None, :]
        correct = (called == small[known][:, None]).sum(axis=0)
        best = np.flatnonzero(correct == correct.max())
        threshold[lo:hi] = float(THRESHOLDS[best[np.argmin(np.abs(THRESHOLDS[best] - DEFAULT_THRESHOLD))]])
    return threshold


def diagnostic(wf) -> dict:
    """D1 (future data: a bound, never a choice)."""
    from rush.models.runtime_quantiles_walkforward import THRESHOLDS

    divider = np.where(np.isfinite(wf.divider), wf.divider, np.nanmin(wf.divider))
    small = wf.runtime <= divider
    proba = wf.proba_small
    called = np.isfinite(proba) & (proba >= wf.threshold)
    wrong = called != small
    ratio = np.maximum(wf.runtime, 1.0) / np.maximum(divider, 1.0)
    near = (ratio >= 0.5) & (ratio <= 2.0)
    best_correct = 0
    for k in np.unique(wf.week):
        rows = wf.week == k
        if not np.isfinite(proba[rows]).any():
            best_correct += int((~small[rows]).sum())  # week 0: large
            continue
        hit = (proba[rows][:, None] >= THRESHOLDS[None, :]) == small[rows][:, None]
        best_correct += int(hit.sum(axis=0).max())
    return {
        "accuracy": float(np.mean(~wrong)),
        "errors_within_2x_of_divider": float(np.mean(near[wrong])),
        "jobs_within_2x_of_divider": float(np.mean(near)),
        "accuracy_weekly_hindsight_threshold": best_correct / len(proba),
    }


def script_columns(jobs, end: np.ndarray, runtime: np.ndarray):
    """T2: a function of the divider giving (n, 5) history columns of each job's (user, procs,
    request) category as of its submission."""
    from rush.models.runtime_features import UNKNOWN, FinishedIndex
    from rush.models.runtime_quantiles_features import _codes

    codes = _codes(
        jobs.user,
        [np.asarray(jobs.procs, dtype=np.float64) * 1e7 + np.asarray(jobs.requested_time, dtype=np.float64)],
    )
    rt = np.where(np.isfinite(end), runtime, 0.0)
    index = FinishedIndex(codes, end, rt)
    lookup = index.lookup(np.arange(len(end)), jobs.submit)
    b, s = lookup.begin[0], lookup.stop[0]
    count = s - b
    log_prefix = np.concatenate([[0.0], np.cumsum(np.log1p(index.sorted_runtime[0]))])
    mean = np.where(count > 0, (log_prefix[s] - log_prefix[b]) / np.maximum(count, 1), UNKNOWN)
    lag = np.where(
        np.isnan(lookup.lag_runtime[:, :2]), UNKNOWN, np.log1p(np.nan_to_num(lookup.lag_runtime[:, :2]))
    )
    static = np.column_stack([lag, mean, np.log1p(count)])

    def columns(divider: float) -> np.ndarray:
        prefix = index.small_prefix(divider)[0]
        share = np.where(count > 0, (prefix[s] - prefix[b]) / np.maximum(count, 1), UNKNOWN)
        return np.column_stack([static, share])

    return columns


def outcome_columns(jobs, end: np.ndarray, runtime: np.ndarray, status: np.ndarray):
    """T3: a function of the divider (unused) giving (n, 3): the status of the user's last
    finished job, whether it reached its request, the user's share of finished jobs that did
    not complete (-1: none)."""
    from rush.models.runtime_features import UNKNOWN, FinishedIndex
    from rush.models.runtime_quantiles_features import _codes

    codes = _codes(jobs.user, [np.zeros(len(end))])
    index = FinishedIndex(codes, end, np.where(np.isfinite(end), runtime, 0.0))
    lookup = index.lookup(np.arange(len(end)), jobs.submit)
    b, s = lookup.begin[0], lookup.stop[0]
    count = s - b
    order = index.order[0]
    last = order[np.maximum(s - 1, 0)]
    status = np.asarray(status, dtype=np.float64)
    killed = (runtime >= np.asarray(jobs.requested_time, dtype=np.float64)).astype(np.float64)
    failed_prefix = np.concatenate([[0.0], np.cumsum(status[order] != 1)])
    out = np.column_stack(
        [
            np.where(count > 0, status[last], UNKNOWN),
            np.where(count > 0, killed[last], UNKNOWN),
            np.where(count > 0, (failed_prefix[s] - failed_prefix[b]) / np.maximum(count, 1), UNKNOWN),
        ]
    )
    return lambda divider: out


def write_rows(name: str, rows: list[dict]) -> None:
    """Rows of different kinds (scores, diagnostic) in one table: the union of their columns."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    write_table(OUT, f"class_features_{name}", [{c: row.get(c) for c in columns} for row in rows])


def run_trace(name: str, tries: list[str]) -> None:
    from rush.models.runtime_features import TimeBase
    from rush.models.runtime_quantiles_features import usable_history
    from rush.models.runtime_quantiles_walkforward import trace_jobs

    trace, workload = load(name)
    wf = cached_walkforward(name, 10_000, 20, 1, 0.2)
    jobs = trace_jobs(workload, TimeBase.from_header(trace.header))
    end = np.where(usable_history(jobs.runtime, jobs.requested_time, jobs.end), jobs.end, np.inf)
    _ORIGIN[id(wf)] = float(jobs.submit[0])
    runtime = np.asarray(workload.runtime, dtype=float)
    published = (runtime > 0) & (runtime < np.asarray(workload.requested_time, dtype=float))
    rows: list[dict] = []

    def record(variant: str, proba: np.ndarray, t0: float) -> None:
        row = {"trace": name, "variant": variant, **scores(wf, proba, end, jobs.submit, published)}
        row["seconds"] = time.perf_counter() - t0
        print(row, flush=True)
        rows.append(row)
        write_rows(name, rows)

    record("quantiles (reference)", wf.proba_small, time.perf_counter())
    heads: dict[str, np.ndarray] = {}

    def reference_head() -> np.ndarray:
        if "ref" not in heads:
            t0 = time.perf_counter()
            heads["ref"] = head_proba(wf, end, 40, None)
            record("divider-head-all (reference)", heads["ref"], t0)
        return heads["ref"]

    for tried in tries:
        t0 = time.perf_counter()
        if tried == "D1":
            rows.append({"trace": name, "variant": "D1 diagnostic (future data)", **diagnostic(wf)})
            print(rows[-1], flush=True)
        elif tried == "T1":
            thr = trailing_thresholds(wf.proba_small, wf.runtime, wf.divider, end, jobs.submit, WINDOW_WEEKS)
            known = np.isfinite(wf.proba_small)
            divider = np.where(np.isfinite(wf.divider), wf.divider, np.nanmin(wf.divider))
            acc = float(np.mean((known & (wf.proba_small >= thr)) == (wf.runtime <= divider)))
            rows.append(
                {
                    "trace": name,
                    "variant": f"T1 threshold over the last {WINDOW_WEEKS} weeks",
                    "accuracy": acc,
                }
            )
            print(rows[-1], flush=True)
        elif tried in ("T2", "T3", "T23"):
            reference_head()
            t0 = time.perf_counter()
            parts = []
            if tried in ("T2", "T23"):
                parts.append(script_columns(jobs, end, wf.runtime))
            if tried in ("T3", "T23"):
                parts.append(outcome_columns(jobs, end, wf.runtime, workload.extra["status"]))
            heads[tried] = head_proba(
                wf, end, 40, None, lambda d, parts=parts: np.hstack([p(d) for p in parts])
            )
            record(f"{tried} divider-head-all + columns", heads[tried], t0)
        elif tried == "T4":
            ref = reference_head()
            record("blend quantiles + divider-head-all (reference)", (wf.proba_small + ref) / 2, t0)
            for key in ("T2", "T3", "T23"):
                if key in heads:
                    record(f"T4 blend quantiles + {key}", (wf.proba_small + heads[key]) / 2, t0)
        else:
            raise SystemExit(f"unknown try {tried!r}; use some of {', '.join(TRIES)}")
        write_rows(name, rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=trace_specs, default="KTH-SP2,SDSC-SP2")
    parser.add_argument("--tries", type=names(TRIES), default=",".join(TRIES))
    args = parser.parse_args()
    for name in args.traces:
        run_trace(name, list(args.tries))


if __name__ == "__main__":
    main()
