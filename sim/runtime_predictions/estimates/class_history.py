"""Round 9's class rules (issue 29): history columns, training rows and the threshold window.

Each rule is fixed in ``dev_log.md`` (round 9) before it ran. All reuse the newest cached
walk-forward of the default feature set (``class_protocol.default_walkforward``: the `t23`
matrix, weeks, divider, the quantiles' P(small)); every head is round 7's (a
``HistGradientBoostingClassifier`` at the week's divider, 40 iterations at 0.1, 15 leaves, 20 jobs
a leaf), refitted at each week's start on jobs ended before it, and blended with the quantiles'
P(small) (the mean) as round 7's ``blend``:

* ``blend``: round 7's rule, refitted here (the reference; equal to ``class_rules``' cache);
* ``blend-recent`` (R9a): + the share of small jobs among the last 5 and 10 finished jobs of the
  user and of the (user, processors, request) category, the user's streak (+n small, -n large),
  whether the request equals the user's previous submitted job's (:func:`recent_columns`);
* ``blend-all`` (R9b): trained on every job ended before the week (no 10,000 cap);
* ``blend-recency`` (R9c): sample weights 0.5 ** (age / 4 weeks);
* ``blend-big`` (R9d): 100 iterations, 31 leaves;
* ``blend-threshold-4w`` (R9e): ``blend``'s P with the threshold chosen on the last 4 weeks' jobs.
* ``...+cold-start`` (R9g): week 0's jobs (no weekly model) called by a head refitted daily on the
  jobs finished so far (:func:`cold_start`);
* ``blend-recent-wide`` (R9h): R9a's shares also for the (user, request) category and the last 20.
* ``blend-monotone`` / ``blend-monotone-history`` (R9i): R9a's head with P(small) non-increasing in
  the request (and the user's and script category's last and mean log runtime).

Scores, two ways: ``ours`` (every job, week 0 large, the rolling divider: ``class_rules.scores``)
on the first half, second half and all jobs; ``thesis-online`` (week 0 left out, the published
job set: runtime > 0 and < the request). ``--thesis-divider RULES`` refits those rules at Table
6.1's whole-log divider (future data: a bound, never a choice).

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 10 \\
        python sim/runtime_predictions/estimates/class_history.py [--traces KTH-SP2,SDSC-SP2] [--rules ...]

Writes ``results/class_history.{csv,md}`` (``--table`` to rename); ``--gain`` runs ``run.py``'s FCFS
gain protocol (base, classification, classification-idempotent, class-clairvoyant) with each
rule's classes and writes ``results/<table>_gain.{csv,md}``.
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import numpy as np

from rush.studies.arg_types import file_stem, names, trace_specs
from rush.studies.tables import write_table

sys.path.insert(0, str(Path(__file__).parent))

from class_protocol import THESIS_DIVIDER, default_walkforward  # noqa: E402
from run import OUT, load  # noqa: E402

RULES = (
    "blend",
    "blend-recent",
    "blend-all",
    "blend-recency",
    "blend-big",
    "blend-threshold-4w",
    "blend+cold-start",
    "blend-recent+cold-start",
    "blend-recent-wide",
    "blend-monotone",
    "blend-monotone-history",
)
# Every rule rule_proba takes: those above, and each with the cold start added.
RULE_NAMES = (*RULES, *(f"{rule}+cold-start" for rule in RULES if not rule.endswith("+cold-start")))
# R9i: columns of the `t23` matrix along which P(small) may only fall (the head's class 1 is small).
MONOTONE_REQUEST = ("log_requested_time",)
MONOTONE_HISTORY = (
    "log_requested_time",
    "log_lag1_user",
    "log_mean_user",
    "log_lag1_user_procs_reqtime",
    "log_mean_user_procs_reqtime",
)
DAY = 86400
MIN_COLD_START_JOBS = 50
WEEK = 7 * 86400
RECENT = (5, 10)


def recent_columns(jobs, clock, end: np.ndarray, runtime: np.ndarray, wide: bool = False):
    """A function of the divider giving every job's six R9a columns (-1: no history); ``wide``:
    R9h's eleven (also the (user, request) category, and the last 20 jobs)."""
    from rush.models.runtime_features import UNKNOWN, FinishedIndex
    from rush.models.runtime_quantiles_features import USER_CATEGORY, _codes, category_values

    values = category_values(jobs, clock)
    codes = _codes(jobs.user, values)
    picked = [USER_CATEGORY, len(values) - 1]  # the user; (user, procs, request)
    if wide:
        picked.append(1)  # (user, requested time)
    recent = (*RECENT, 20) if wide else RECENT
    index = FinishedIndex(codes[picked], end, np.where(np.isfinite(end), runtime, 0.0))
    lookup = index.lookup(np.arange(len(end)), jobs.submit)
    same_request = previous_request_equal(np.asarray(jobs.user), np.asarray(jobs.requested_time, float))

    def columns(divider: float) -> np.ndarray:
        prefix = index.small_prefix(divider)
        out = []
        for c in range(len(picked)):
            b, s = lookup.begin[c], lookup.stop[c]
            for k in recent:
                lo = np.maximum(b, s - k)
                out.append(np.where(s > b, (prefix[c][s] - prefix[c][lo]) / np.maximum(s - lo, 1), UNKNOWN))
        b, s = lookup.begin[0], lookup.stop[0]
        streak = signed_runs(index.sorted_runtime[0] <= divider, index.sorted_category[0])
        out.append(np.where(s > b, streak[np.maximum(s - 1, 0)], 0.0))
        out.append(same_request)
        return np.column_stack(out)

    return columns


def signed_runs(small: np.ndarray, code: np.ndarray) -> np.ndarray:
    """At each position of a (category, end)-sorted array, the length of the run of equal classes
    ending there within its category: +n small, -n large."""
    n = len(small)
    if not n:
        return np.zeros(0)
    new = np.ones(n, bool)
    new[1:] = (small[1:] != small[:-1]) | (code[1:] != code[:-1])
    start = np.maximum.accumulate(np.where(new, np.arange(n), 0))
    length = np.arange(n) - start + 1
    return np.where(small, length, -length).astype(np.float64)


def previous_request_equal(user: np.ndarray, request: np.ndarray) -> np.ndarray:
    """1 where a job's request equals that of its user's previous submitted job, 0 where not,
    -1 for a user's first job (jobs in submission order)."""
    order = np.lexsort((np.arange(len(user)), user))
    out = np.full(len(user), -1.0)
    same_user = user[order][1:] == user[order][:-1]
    equal = request[order][1:] == request[order][:-1]
    out[order[1:]] = np.where(same_user, equal.astype(np.float64), -1.0)
    return out


def head_proba(
    wf,
    divider,
    extra=None,
    max_train=10_000,
    halflife_weeks=None,
    max_iter=40,
    leaves=15,
    min_leaf=20,
    make_model=None,
):
    """P(small) of a divider classifier refitted at each week's start (jobs ended before it);
    ``extra`` may carry ``monotone``: feature names along which P(small) may only fall;
    ``make_model``: a factory of another (unfitted) classifier than round 7's boosting."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from rush.models.runtime_quantiles_features import feature_names

    n = len(wf.runtime)
    proba = np.full(n, np.nan)
    order = np.argsort(wf.end, kind="stable")
    sorted_end = wf.end[order]
    origin = float(wf.submit[0])
    week = ((wf.submit - origin) // WEEK).astype(np.int64)
    bounds = np.searchsorted(week, np.arange(int(week[-1]) + 2))
    for k in range(len(bounds) - 1):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        if hi == lo or not np.isfinite(divider[lo]):
            continue
        start = origin + WEEK * k
        finished = int(np.searchsorted(sorted_end, start, side="left"))
        train = order[:finished] if max_train is None else order[:finished][-max_train:]
        X = wf.features if extra is None else np.hstack([wf.features, extra(float(divider[lo]))])
        y = wf.runtime[train]
        keep = np.isfinite(y) & (y >= 0) & np.isfinite(X[train]).all(axis=1)
        train = train[keep]
        label = (wf.runtime[train] <= divider[lo]).astype(np.int64)
        if not len(label):
            continue
        if label.min() == label.max():
            proba[lo:hi] = float(label[0])
            continue
        monotone = None
        if getattr(extra, "monotone", None):
            names = feature_names(wf.feature_set)
            monotone = [-1 if i < len(names) and names[i] in extra.monotone else 0 for i in range(X.shape[1])]
        weight = None
        if halflife_weeks is not None:
            weight = 0.5 ** ((start - wf.end[train]) / (halflife_weeks * WEEK))
        model = (
            make_model()
            if make_model is not None
            else HistGradientBoostingClassifier(
                max_iter=max_iter,
                learning_rate=0.1,
                max_leaf_nodes=leaves,
                min_samples_leaf=min_leaf,
                early_stopping=False,
                random_state=0,
                monotonic_cst=monotone,
            )
        ).fit(X[train], label, sample_weight=weight)
        proba[lo:hi] = model.predict_proba(X[lo:hi])[:, list(model.classes_).index(1)]
    return proba


def windowed_thresholds(proba, runtime, divider, end, submit, weeks: int) -> np.ndarray:
    """``walkforward_thresholds`` over the jobs that ended in the ``weeks`` weeks before each week."""
    from rush.models.runtime_quantiles_walkforward import DEFAULT_THRESHOLD, THRESHOLDS

    n = len(proba)
    out = np.full(n, DEFAULT_THRESHOLD)
    origin = float(submit[0])
    week = ((submit - origin) // WEEK).astype(np.int64)
    bounds = np.searchsorted(week, np.arange(int(week[-1]) + 2))
    known = np.isfinite(proba)
    small = runtime <= divider
    for k in range(len(bounds) - 1):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        start = origin + WEEK * k
        rows = known & (end < start) & (end >= start - weeks * WEEK)
        if hi == lo or not rows.any():
            continue
        correct = ((proba[rows][:, None] >= THRESHOLDS[None, :]) == small[rows][:, None]).sum(axis=0)
        best = np.flatnonzero(correct == correct.max())
        out[lo:hi] = THRESHOLDS[best[np.argmin(np.abs(THRESHOLDS[best] - 0.5))]]
    return out


def cold_start(wf, proba: np.ndarray, threshold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """R9g: jobs with no weekly model (week 0) get the P(small) of a head refitted at each day's
    start on the jobs finished so far (>= 50, both classes), at their median runtime, and the
    threshold 0.5."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    proba, threshold = proba.copy(), threshold.copy()
    cold = np.flatnonzero(~np.isfinite(wf.proba_small))
    if not len(cold):
        return proba, threshold
    origin = float(wf.submit[0])
    day = ((wf.submit[cold] - origin) // DAY).astype(np.int64)
    for d in np.unique(day):
        start = origin + DAY * d
        train = np.flatnonzero(np.isfinite(wf.end) & (wf.end < start) & np.isfinite(wf.runtime))
        if len(train) < MIN_COLD_START_JOBS:
            continue
        label = (wf.runtime[train] <= np.median(wf.runtime[train])).astype(np.int64)
        if label.min() == label.max():
            continue
        model = HistGradientBoostingClassifier(
            max_iter=40,
            learning_rate=0.1,
            max_leaf_nodes=15,
            min_samples_leaf=20,
            early_stopping=False,
            random_state=0,
        ).fit(wf.features[train], label)
        rows = cold[day == d]
        proba[rows] = model.predict_proba(wf.features[rows])[:, list(model.classes_).index(1)]
        threshold[rows] = 0.5
    return proba, threshold


def rule_proba(wf, rule: str, divider, quantile_proba, recent) -> tuple[np.ndarray, np.ndarray]:
    """P(small) and the decision threshold per job under ``rule`` at ``divider``."""
    from rush.models.runtime_quantiles_walkforward import walkforward_thresholds

    if rule.endswith("+cold-start"):
        return cold_start(
            wf, *rule_proba(wf, rule.removesuffix("+cold-start"), divider, quantile_proba, recent)
        )
    options = {
        "blend": {},
        "blend-threshold-4w": {},
        "blend-recent": {"extra": recent},
        "blend-recent-wide": {"extra": getattr(recent, "wide", None)},
        "blend-monotone": {"extra": getattr(recent, "monotone_request", None)},
        "blend-monotone-history": {"extra": getattr(recent, "monotone_history", None)},
        "blend-all": {"max_train": None},
        "blend-recency": {"halflife_weeks": 4.0},
        "blend-big": {"max_iter": 100, "leaves": 31},
    }
    if rule not in options:
        raise SystemExit(f"unknown rule {rule!r}; use one of {', '.join(RULES)}")
    if "extra" in options[rule] and options[rule]["extra"] is None:
        # R9h and R9i's columns are attached to ``recent`` by ``trace_rows`` only
        raise SystemExit(f"{rule}: its columns are not attached to the recent columns given")
    proba = (quantile_proba + head_proba(wf, divider, **options[rule])) / 2
    if rule == "blend-threshold-4w":
        return proba, windowed_thresholds(proba, wf.runtime, divider, wf.end, wf.submit, weeks=4)
    return proba, walkforward_thresholds(proba, wf.runtime, divider, wf.end, wf.submit)


def rule_decision(wf, rule: str, divider, quantile_proba, recent) -> np.ndarray:
    """Called small (bool per job) under ``rule`` at ``divider``."""
    proba, threshold = rule_proba(wf, rule, divider, quantile_proba, recent)
    return np.isfinite(proba) & (proba >= threshold)


def score(called: np.ndarray, small: np.ndarray, mask: np.ndarray) -> dict:
    """Accuracy, precision and recall of "small" (scikit-learn's metrics) over the masked jobs."""
    from sklearn.metrics import accuracy_score, precision_score, recall_score

    c, s = called[mask], small[mask]
    return {
        "jobs": int(mask.sum()),
        "accuracy": float(accuracy_score(s, c)),
        "precision": float(precision_score(s, c, zero_division=np.nan)),
        "recall": float(recall_score(s, c, zero_division=np.nan)),
    }


def trace_history(name: str):
    """(the trace's workload, its cached walk-forward, the jobs, the clock, each job's usable end,
    the recent columns): what both protocols read for one trace."""
    from rush.models.runtime_features import TimeBase
    from rush.models.runtime_quantiles_features import usable_history
    from rush.models.runtime_quantiles_walkforward import trace_jobs

    trace, workload = load(name)
    wf = default_walkforward(name)
    time_base = TimeBase.from_header(trace.header)
    jobs = trace_jobs(workload, time_base)
    end = np.where(usable_history(jobs.runtime, jobs.requested_time, jobs.end), jobs.end, np.inf)
    recent = recent_columns(jobs, time_base.clock, end, wf.runtime)
    return workload, wf, jobs, time_base.clock, end, recent


def scoring_masks(workload, wf) -> dict[tuple[str, str], np.ndarray]:
    """The jobs each (protocol, half) scores: ours, every job; thesis-online, the published jobs
    (runtime in (0, request)) of weeks with a model; each over the first half, second, all."""
    raw = np.asarray(workload.runtime, dtype=float)
    published = (raw > 0) & (raw < np.asarray(workload.requested_time, dtype=float))
    has_model = np.isfinite(wf.proba_small)
    n = len(raw)
    first, second = np.arange(n) < n // 2, np.arange(n) >= n // 2
    return {
        ("ours", "first"): first,
        ("ours", "second"): second,
        ("ours", "all"): np.ones(n, bool),
        ("thesis-online", "first"): has_model & published & first,
        ("thesis-online", "second"): has_model & published & second,
        ("thesis-online", "all"): has_model & published,
    }


def trace_rows(name: str, rules: list[str], thesis_rules: list[str]) -> list[dict]:
    from rush.models.runtime_quantiles import proba_below_quantiles

    workload, wf, jobs, clock, end, recent = trace_history(name)
    recent.wide = recent_columns(jobs, clock, end, wf.runtime, wide=True)
    recent.monotone_request = recent_columns(jobs, clock, end, wf.runtime)
    recent.monotone_request.monotone = MONOTONE_REQUEST
    recent.monotone_history = recent_columns(jobs, clock, end, wf.runtime)
    recent.monotone_history.monotone = MONOTONE_HISTORY
    masks = scoring_masks(workload, wf)
    has_model = np.isfinite(wf.proba_small)
    n = len(wf.runtime)
    rolling = np.where(np.isfinite(wf.divider), wf.divider, np.nanmin(wf.divider))
    dividers = {"rolling": (rolling, wf.proba_small)}
    if thesis_rules:
        fixed = np.full(n, THESIS_DIVIDER[name])
        proba = np.full(n, np.nan)
        proba[has_model] = proba_below_quantiles(
            np.log1p(wf.quantiles[has_model]), wf.levels, fixed[has_model], wf.features[has_model]
        )
        dividers["thesis-divider (future data)"] = (fixed, proba)
    rows = []
    for divider_name, (divider, quantile_proba) in dividers.items():
        small = wf.runtime <= divider
        for rule in rules if divider_name == "rolling" else thesis_rules:
            t0 = time.process_time()
            called = rule_decision(copy.copy(wf), rule, divider, quantile_proba, recent)
            cpu = time.process_time() - t0
            for (protocol, half), mask in masks.items():
                if divider_name != "rolling" and protocol == "ours":
                    continue
                row = {"trace": name, "rule": rule, "divider": divider_name, "protocol": protocol}
                row |= {"half": half, **score(called, small, mask), "cpu_seconds": round(cpu, 1)}
                print(row, flush=True)
                rows.append(row)
    return rows


def rule_gain_rows(name: str, wf, rule: str, decide) -> list[dict]:
    """``run.py``'s FCFS gain rows with the classes of ``rule``, whose (P(small), thresholds)
    ``decide(wf)`` gives (weeks with a model only: the simulator's classes have no divider in
    week 0, so the cold-start rules are refused)."""
    from run import gain_rows

    if rule.endswith("+cold-start"):
        raise SystemExit(f"{rule}: the gain protocol has no divider in week 0")
    out = copy.copy(wf)
    out.proba_small, out.threshold = decide(wf)
    known = np.isfinite(out.proba_small)
    out.predicted_class = np.where(known & (out.proba_small >= out.threshold), 0, 1).astype(np.int8)
    rows = []
    for row in gain_rows(name, out, policies=("FCFS",)):
        row = {"rule": rule, **row}
        print(row, flush=True)
        rows.append(row)
    return rows


def gain_main(args) -> None:
    """``run.py``'s FCFS gain protocol with each rule's classes (:func:`rule_gain_rows`)."""
    rows = []
    for name in args.traces:
        _, wf, _, _, _, recent = trace_history(name)
        rolling = np.where(np.isfinite(wf.divider), wf.divider, np.nanmin(wf.divider))
        for rule in args.rules:
            rows += rule_gain_rows(
                name,
                wf,
                rule,
                lambda wf, rule=rule, rolling=rolling, recent=recent: rule_proba(
                    wf, rule, rolling, wf.proba_small, recent
                ),
            )
    write_table(OUT, f"{args.table}_gain", rows, missing="")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=trace_specs, default="KTH-SP2,SDSC-SP2")
    parser.add_argument("--rules", type=names(RULE_NAMES), default=",".join(RULES))
    parser.add_argument(
        "--thesis-divider",
        type=names(RULE_NAMES),
        default=(),
        help="rules also scored at Table 6.1's divider (future data), comma-separated",
    )
    parser.add_argument("--table", type=file_stem, default="class_history")
    parser.add_argument("--gain", action="store_true", help="the FCFS gain protocol per rule instead")
    args = parser.parse_args()
    if args.gain and (cold := [rule for rule in args.rules if rule.endswith("+cold-start")]):
        parser.error(f"--rules: {cold[0]}: the gain protocol (--gain) has no divider in week 0")
    if args.gain:
        return gain_main(args)
    rows = []
    for name in args.traces:
        rows += trace_rows(name, list(args.rules), list(args.thesis_divider))
    write_table(OUT, args.table, rows, missing="")


if __name__ == "__main__":
    main()
