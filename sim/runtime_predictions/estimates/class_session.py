"""Round 10's class rules (issue 29): the user's session, a learned blend, per-band thresholds.

Each rule is fixed in ``dev_log.md`` (round 10) before it ran. All are R9a's head
(``class_history``'s ``blend-recent``: round 7's head at the week's divider plus R9a's recent
shares, refitted weekly on the 10,000 most recently finished jobs, blended with the quantiles'
P(small) by the mean) with one change, on the newest cached `t23` walk-forward:

* ``blend-recent``: R9a itself, the reference (rerun here);
* ``blend-session`` (R10a): + the user's session at submit (:func:`session_columns`);
* ``blend-stacked`` (R10b): + the job's walk-forward quantiles relative to the divider and their
  P(small) at it (:func:`stacked_columns`; out of sample for every training row);
* ``blend-recent-bands`` (R10c): R9a's P(small), the threshold chosen walk-forward per band of
  request / divider (:func:`band_thresholds`);
* ``blend-forest`` (R10e): R9a's columns, the head a random forest (the thesis's learner, seed
  003, 6.3.2; :func:`forest`) instead of boosting;
* ``blend-recent+copy`` (R10f, post hoc): a fresh same-script outcome overrides (:func:`fresh_outcome`);
* ``...+cold-start``: R9g's daily cold start in week 0 (``class_history.cold_start``); a ``+``
  between rule names (``blend-session+stacked``, ``...+bands``) is their union (R10d).

Scores as ``class_history.py`` (ours and thesis-online, first half, second half, all).

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 15 \\
        python sim/runtime_predictions/estimates/class_session.py [--traces KTH-SP2,SDSC-SP2] [--rules ...]

Writes ``results/class_session.{csv,md}`` (``--table`` to rename); ``--gain``: ``run.py``'s FCFS gain
protocol with each rule's classes, ``results/<table>_gain.{csv,md}``.
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

from class_history import (  # noqa: E402
    cold_start,
    head_proba,
    rule_gain_rows,
    score,
    scoring_masks,
    trace_history,
)
from run import OUT  # noqa: E402

RULES = (
    "blend-recent",
    "blend-session",
    "blend-stacked",
    "blend-recent-bands",
    "blend-forest",
    "blend-recent+copy",
)
COPY_WINDOW = 3600.0  # R10f: a same-script outcome at most this old at the submission
BURST_GAP = 600.0  # seconds between a user's submits within one burst
HOUR = 3600.0
# What a rule joins with + after its base (blend-<part>); +cold-start and +copy may end it.
RULE_PARTS = frozenset({"recent", "session", "stacked", "recent-bands", "bands", "forest"})
BAND_EDGES = (4.0, 16.0)  # request / divider
MIN_BAND_JOBS = 200
PENDING, RUNNING, FINISHED, NONE = -1.0, 0.0, 1.0, -2.0


def forest():
    """R10e's head: 50 trees, 5 jobs a leaf, sqrt of the columns per split, seed 0 (fixed in the
    dev log before the run)."""
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(
        n_estimators=50, min_samples_leaf=5, max_features="sqrt", random_state=0, n_jobs=1
    )


def session_columns(jobs, end: np.ndarray) -> np.ndarray:
    """R10a, per job (workload order), from what is known at its submission: log(1 + the user's
    submits in the hour before), log(1 + their processors x request summed), its position in the
    user's burst (submits before it with every gap < ``BURST_GAP``), whether the user's previous
    submitted job had the same (processors, request) (-1: none), that job's state at this submit
    (pending -1, running 0, finished 1, none -2) and its runtime (finished) or elapsed time
    (running) over its request (-1 otherwise). ``end``: each job's usable end (inf: never known)."""
    user = np.asarray(jobs.user)
    submit = np.asarray(jobs.submit, dtype=np.float64)
    procs = np.asarray(jobs.procs, dtype=np.float64)
    request = np.asarray(jobs.requested_time, dtype=np.float64)
    start = np.asarray(jobs.start, dtype=np.float64)
    n = len(user)
    order = np.lexsort((np.arange(n), submit, user))
    u, t = user[order], submit[order]
    first = np.ones(n, bool)
    first[1:] = u[1:] != u[:-1]
    group_start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    # The hour before: submits of the same user at or after t - 1 h, earlier in the order.
    code = np.unique(u, return_inverse=True)[1].astype(np.float64)
    key = code * 1e11 + (t - t.min())
    lo = np.maximum(np.searchsorted(key, code * 1e11 + (t - HOUR - t.min()), side="left"), group_start)
    count = np.arange(n) - lo
    area = np.concatenate([[0.0], np.cumsum(procs[order] * request[order])])
    area_hour = area[np.arange(n)] - area[lo]
    # Burst position: consecutive earlier submits of the user with gaps < BURST_GAP.
    new_burst = first.copy()
    new_burst[1:] |= (t[1:] - t[:-1]) >= BURST_GAP
    burst_start = np.maximum.accumulate(np.where(new_burst, np.arange(n), 0))
    position = np.arange(n) - burst_start
    # The previous submitted job of the user.
    prev = np.where(first, -1, np.arange(n) - 1)
    has = prev >= 0
    p = order[np.maximum(prev, 0)]
    same = (procs[order] == procs[p]) & (request[order] == request[p])
    same_script = np.where(has, same.astype(np.float64), -1.0)
    now = t
    state = np.where(
        ~has,
        NONE,
        np.where(start[p] > now, PENDING, np.where(end[p] <= now, FINISHED, RUNNING)),
    )
    runtime = end[p] - start[p]
    ratio = np.where(
        state == FINISHED,
        runtime / np.maximum(request[p], 1.0),
        np.where(state == RUNNING, (now - start[p]) / np.maximum(request[p], 1.0), -1.0),
    )
    out = np.empty((n, 6))
    out[order] = np.column_stack([np.log1p(count), np.log1p(area_hour), position, same_script, state, ratio])
    return out


def stacked_columns(wf):
    """R10b: a function of the divider giving log(1 + q_k) - log(1 + D) for the job's five
    walk-forward quantiles and the quantiles' P(small) at D; NaN in week 0 (no model), so those
    rows leave the head's training."""
    from rush.models.runtime_quantiles import proba_below_quantiles

    model = np.isfinite(wf.proba_small)
    log_q = np.log1p(wf.quantiles)

    def columns(divider: float) -> np.ndarray:
        out = np.full((len(model), log_q.shape[1] + 1), np.nan)
        out[model, :-1] = log_q[model] - np.log1p(divider)
        out[model, -1] = proba_below_quantiles(log_q[model], wf.levels, divider, wf.features[model])
        return out

    return columns


def fresh_outcome(jobs, end: np.ndarray, runtime: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """R10f, per job: the runtime of the user's last job of the same (processors, request) that
    ended before its submission, where that end is at most ``COPY_WINDOW`` old (NaN otherwise),
    and whether there is one (bool)."""
    user = np.asarray(jobs.user, dtype=np.int64)
    procs = np.asarray(jobs.procs, dtype=np.int64)
    request = np.asarray(jobs.requested_time, dtype=np.float64)
    submit = np.asarray(jobs.submit, dtype=np.float64)
    code = np.unique(np.column_stack([user, procs, request]), axis=0, return_inverse=True)[1].ravel()
    done = np.flatnonzero(np.isfinite(end))
    order = done[np.lexsort((end[done], code[done]))]
    origin = min(submit.min(), end[done].min())
    scale = 1e11
    key = code[order] * scale + (end[order] - origin)
    at = np.searchsorted(key, code * scale + (submit - origin), side="left") - 1  # last end < submit
    prev = order[np.maximum(at, 0)]
    found = (at >= 0) & (code[prev] == code) & (end[prev] < submit) & (submit - end[prev] <= COPY_WINDOW)
    return np.where(found, runtime[prev], np.nan), found


def band_of(requested_time: np.ndarray, divider: np.ndarray) -> np.ndarray:
    """0, 1, 2: request / divider <= 4, in (4, 16], > 16."""
    return np.searchsorted(np.asarray(BAND_EDGES), requested_time / np.maximum(divider, 1.0), side="left")


def band_thresholds(proba, runtime, divider, end, submit, requested_time) -> np.ndarray:
    """R10c: ``walkforward_thresholds`` chosen separately per band of request / divider (each
    job's own divider); a band with fewer than ``MIN_BAND_JOBS`` judged jobs takes the global
    threshold."""
    from rush.models.runtime_quantiles_walkforward import (
        DEFAULT_THRESHOLD,
        THRESHOLDS,
        WEEK,
        walkforward_thresholds,
    )

    overall = walkforward_thresholds(proba, runtime, divider, end, submit)
    out = overall.copy()
    band = band_of(requested_time, divider)
    origin = float(submit[0])
    week = ((submit - origin) // WEEK).astype(np.int64)
    bounds = np.searchsorted(week, np.arange(int(week[-1]) + 2))
    end_order = np.argsort(end, kind="stable")
    sorted_end = end[end_order]
    nb = len(BAND_EDGES) + 1
    correct = np.zeros((nb, len(THRESHOLDS)))
    seen = np.zeros(nb)
    judged = 0
    for k in range(len(bounds) - 1):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        finished = int(np.searchsorted(sorted_end, origin + WEEK * k, side="left"))
        known = end_order[judged:finished]
        judged = finished
        known = known[np.isfinite(proba[known])]
        if len(known):
            small = runtime[known] <= divider[known]
            hit = (proba[known][:, None] >= THRESHOLDS[None, :]) == small[:, None]
            for b in range(nb):
                rows = band[known] == b
                correct[b] += hit[rows].sum(axis=0)
                seen[b] += rows.sum()
        for b in range(nb):
            if hi == lo or seen[b] < MIN_BAND_JOBS:
                continue
            best = np.flatnonzero(correct[b] == correct[b].max())
            pick = float(THRESHOLDS[best[np.argmin(np.abs(THRESHOLDS[best] - DEFAULT_THRESHOLD))]])
            rows = np.flatnonzero(band[lo:hi] == b) + lo
            out[rows] = pick
    return out


def crossfit_ceiling(wf, divider: np.ndarray, recent, folds: int = 5) -> np.ndarray:
    """D8 (future data, a diagnostic): R9a's head P(small) for every job of a week with a model,
    cross-fitted over ``folds`` contiguous blocks of weeks (each block predicted by a head trained
    on every other block), each job labelled at its own week's divider with its R9a columns read
    at that divider; NaN for week 0."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    n = len(wf.runtime)
    model_rows = np.isfinite(wf.proba_small)
    X = np.full((n, wf.features.shape[1] + recent(float(divider[0])).shape[1]), np.nan)
    for d in np.unique(divider[model_rows]):
        rows = model_rows & (divider == d)
        X[rows] = np.hstack([wf.features[rows], recent(float(d))[rows]])
    label = (wf.runtime <= divider).astype(np.int64)
    usable = model_rows & np.isfinite(wf.end) & np.isfinite(wf.runtime)
    weeks = np.unique(wf.week[model_rows])
    edges = [chunk[0] for chunk in np.array_split(weeks, folds)[1:]]
    block = np.searchsorted(np.asarray(edges), wf.week, side="right")
    proba = np.full(n, np.nan)
    for b in range(folds):
        train = usable & (block != b)
        model = HistGradientBoostingClassifier(
            max_iter=40,
            learning_rate=0.1,
            max_leaf_nodes=15,
            min_samples_leaf=20,
            early_stopping=False,
            random_state=0,
        ).fit(X[train], label[train])
        rows = model_rows & (block == b)
        proba[rows] = model.predict_proba(X[rows])[:, list(model.classes_).index(1)]
    return proba


def ceiling_rows(name: str) -> list[dict]:
    """D8's rows: the cross-fitted head (thresholds 0.5 and the best in hindsight), the
    walk-forward head alone and R9a's blend, on the jobs of weeks with a model."""
    from rush.models.runtime_quantiles_walkforward import THRESHOLDS, walkforward_thresholds

    _, wf, _, _, _, recent = trace_history(name)
    divider = np.where(np.isfinite(wf.divider), wf.divider, np.nanmin(wf.divider))
    small = wf.runtime <= divider
    mask = np.isfinite(wf.proba_small)
    n = len(small)
    cross = crossfit_ceiling(wf, divider, recent)
    head = head_proba(wf, divider, extra=recent)
    blend = (wf.proba_small + head) / 2
    hindsight = max(THRESHOLDS, key=lambda t: np.mean((cross[mask] >= t) == small[mask]))
    called = {
        "cross-fitted head, threshold 0.5 (future data)": cross >= 0.5,
        f"cross-fitted head, threshold {hindsight:.2f} in hindsight (future data)": cross >= hindsight,
        "walk-forward head alone": head
        >= walkforward_thresholds(head, wf.runtime, divider, wf.end, wf.submit),
        "R9a blend (walk-forward)": blend
        >= walkforward_thresholds(blend, wf.runtime, divider, wf.end, wf.submit),
    }
    rows = []
    for rule, c in called.items():
        for half, part in (
            ("first", np.arange(n) < n // 2),
            ("second", np.arange(n) >= n // 2),
            ("all", True),
        ):
            row = {"trace": name, "rule": rule, "protocol": "weeks with a model", "half": half}
            row |= score(np.isfinite(cross) & c, small, mask & part)
            print(row, flush=True)
            rows.append(row)
    return rows


def rule_proba(wf, rule: str, divider, extras: dict) -> tuple[np.ndarray, np.ndarray]:
    """P(small) and threshold per job under ``rule`` (parts joined by ``+``) at ``divider``."""
    from rush.models.runtime_quantiles_walkforward import walkforward_thresholds

    if rule.endswith("+cold-start"):
        return cold_start(wf, *rule_proba(wf, rule.removesuffix("+cold-start"), divider, extras))
    if rule.endswith("+copy"):
        proba, threshold = rule_proba(wf, rule.removesuffix("+copy"), divider, extras)
        last, found = extras["copy"]
        found = found & np.isfinite(proba)  # weeks with a model only (week 0 stays large)
        return np.where(found, (last <= divider).astype(np.float64), proba), np.where(found, 0.5, threshold)
    base, *more = rule.split("+")
    parts = {base.removeprefix("blend-"), *more}
    unknown = parts - RULE_PARTS
    if unknown:
        raise SystemExit(f"unknown rule {rule!r}; use one of {', '.join(RULES)} (parts joined by +)")
    blocks = [extras["recent"]]
    if "session" in parts:
        blocks.append(lambda d: extras["session"])
    if "stacked" in parts:
        blocks.append(extras["stacked"])

    def extra(d: float) -> np.ndarray:
        return np.hstack([block(d) for block in blocks])

    make_model = forest if "forest" in parts else None
    proba = (wf.proba_small + head_proba(wf, divider, extra=extra, make_model=make_model)) / 2
    if parts & {"recent-bands", "bands"}:
        return proba, band_thresholds(proba, wf.runtime, divider, wf.end, wf.submit, wf.requested_time)
    return proba, walkforward_thresholds(proba, wf.runtime, divider, wf.end, wf.submit)


def trace_rows(name: str, rules: list[str]) -> list[dict]:
    workload, wf, jobs, _, end, recent = trace_history(name)
    extras = {"recent": recent, "session": session_columns(jobs, end), "stacked": stacked_columns(wf)}
    extras["copy"] = fresh_outcome(jobs, end, wf.runtime)
    masks = scoring_masks(workload, wf)
    divider = np.where(np.isfinite(wf.divider), wf.divider, np.nanmin(wf.divider))
    small = wf.runtime <= divider
    rows = []
    for rule in rules:
        t0 = time.process_time()
        proba, threshold = rule_proba(copy.copy(wf), rule, divider, extras)
        called = np.isfinite(proba) & (proba >= threshold)
        cpu = time.process_time() - t0
        for (protocol, half), mask in masks.items():
            row = {"trace": name, "rule": rule, "protocol": protocol, "half": half}
            row |= {**score(called, small, mask), "cpu_seconds": round(cpu, 1)}
            print(row, flush=True)
            rows.append(row)
        if rule.endswith("+copy"):
            found = extras["copy"][1] & np.isfinite(proba)
            for (protocol, half), mask in masks.items():
                if protocol == "ours":
                    row = {
                        "trace": name,
                        "rule": f"{rule} (overridden jobs)",
                        "protocol": protocol,
                        "half": half,
                    }
                    row |= score(called, small, mask & found)
                    print(row, flush=True)
                    rows.append(row)
    return rows


def gain_main(args) -> None:
    """``run.py``'s FCFS gain protocol with each rule's classes (``class_history.rule_gain_rows``)."""
    rows = []
    for name in args.traces:
        _, wf, jobs, _, end, recent = trace_history(name)
        extras = {"recent": recent, "session": session_columns(jobs, end), "stacked": stacked_columns(wf)}
        extras["copy"] = fresh_outcome(jobs, end, wf.runtime)
        divider = np.where(np.isfinite(wf.divider), wf.divider, np.nanmin(wf.divider))
        for rule in args.rules:
            rows += rule_gain_rows(
                name,
                wf,
                rule,
                lambda wf, rule=rule, divider=divider, extras=extras: rule_proba(wf, rule, divider, extras),
            )
    write_table(OUT, f"{args.table}_gain", rows, missing="")


def known_rule(rule: str) -> bool:
    """Whether :func:`rule_proba` takes ``rule`` (checked before any trace is read)."""
    while rule.endswith(("+cold-start", "+copy")):
        rule = rule.rpartition("+")[0]
    base, *more = rule.split("+")
    return not {base.removeprefix("blend-"), *more} - RULE_PARTS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=trace_specs, default="KTH-SP2,SDSC-SP2")
    parser.add_argument("--rules", type=names(), default=",".join(RULES))
    parser.add_argument("--table", type=file_stem, default="class_session")
    parser.add_argument("--gain", action="store_true", help="the FCFS gain protocol per rule instead")
    parser.add_argument("--ceiling", action="store_true", help="D8: R9a's head cross-fitted (future data)")
    args = parser.parse_args()
    if unknown := [rule for rule in args.rules if not known_rule(rule)]:
        parser.error(
            f"--rules: unknown rule {unknown[0]!r}; use one of {', '.join(RULES)} (parts joined by +)"
        )
    if args.gain and (cold := [rule for rule in args.rules if rule.endswith("+cold-start")]):
        parser.error(f"--rules: {cold[0]}: the gain protocol (--gain) has no divider in week 0")
    if args.gain:
        return gain_main(args)
    if args.ceiling:
        rows = [row for name in args.traces for row in ceiling_rows(name)]
        return write_table(OUT, args.table, rows, missing="")
    rows = []
    for name in args.traces:
        rows += trace_rows(name, list(args.rules))
    write_table(OUT, args.table, rows, missing="")


if __name__ == "__main__":
    main()
