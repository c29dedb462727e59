"""Round 7's class rules under this study's protocol, chosen on first halves (``dev_log.md``).

Each rule is fixed in ``dev_log.md`` (round 7) before it ran, and reuses the newest cached
walk-forward of the default feature set (same `t23` feature matrix, weeks, divider; the
threshold always chosen walk-forward on past outcomes, ``walkforward_thresholds``):

* ``quantiles``: the deployed P(small), read off the five predicted quantiles (reference);
* ``head``: a ``HistGradientBoostingClassifier`` (log loss on runtime <= the week's divider,
  40 iterations at 0.1, 15 leaves, 20 jobs a leaf: the quantile models' size) refitted each
  week on the quantile models' training rows (the 10,000 most recently finished jobs);
* ``blend``: the mean of ``quantiles``' and ``head``'s P(small);
* ``head-daily`` / ``blend-daily``: the head refitted at every day's start instead of every
  week's (C2; the divider still changes weekly);
* ``head-shares`` / ``blend-shares`` (round 8, T5): the head with the thesis's aggregation
  features (Table 6.3: the share of small jobs, at the week's divider, among each category's
  jobs finished before the job's submission; ``class_heads.share_columns``), which the
  divider-free quantile features cannot carry but a head fitted at the divider can.

Scores: accuracy (every job, week 0 large), precision, recall, on the first and the second
half of each trace's jobs (by submission); a rule is kept by ``dev_log.md``'s criterion on
the first halves and confirmed on the second.

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 10 \\
        python sim/runtime_predictions/estimates/class_rules.py [--traces KTH-SP2,SDSC-SP2,CTC-SP2]

Writes ``results/class_rules.{csv,md}``; ``--gain`` also runs ``run.py``'s FCFS gain protocol
(base, classification, classification-idempotent, class-clairvoyant) with each rule's classes
and writes ``results/class_rules_gain.{csv,md}``. :func:`with_rule` gives a walk-forward whose
classes are a rule's (``../rush_q.py --class-head`` reads it); the heads' P(small) are cached
beside the walk-forwards (``class_rules/``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from rush.studies.arg_types import file_stem, names, trace_specs
from rush.studies.tables import write_table

sys.path.insert(0, str(Path(__file__).parent))

from class_protocol import default_walkforward  # noqa: E402
from run import OUT  # noqa: E402

RULES = ("quantiles", "head", "blend", "head-daily", "blend-daily", "head-shares", "blend-shares")
DAY = 86400
WEEK_SECONDS = 7 * DAY


def head_proba(
    wf, period: int, max_train_jobs: int = 10_000, head_params: dict | None = None, extra=None
) -> np.ndarray:
    """P(small) of a divider classifier refitted every ``period`` seconds on the walk-forward's
    training rule (jobs ended strictly before the refit, the most recent ``max_train_jobs``);
    ``extra``: a function of the divider giving more columns for every job."""
    from rush.models.runtime_quantiles import RuntimeClassHead

    n = len(wf.runtime)
    proba = np.full(n, np.nan)
    order = np.argsort(wf.end, kind="stable")
    sorted_end = wf.end[order]
    origin = float(wf.submit[0])
    slot = ((wf.submit - origin) // period).astype(np.int64)
    bounds = np.searchsorted(slot, np.arange(int(slot[-1]) + 2))
    for k in range(len(bounds) - 1):
        lo, hi = int(bounds[k]), int(bounds[k + 1])
        if hi == lo or not np.isfinite(wf.divider[lo]):
            continue
        finished = int(np.searchsorted(sorted_end, origin + period * k, side="left"))
        train = order[:finished][-max_train_jobs:]
        X = wf.features if extra is None else np.hstack([wf.features, extra(float(wf.divider[lo]))])
        head = RuntimeClassHead(divider=float(wf.divider[lo]), **(head_params or {}))
        head.fit(X[train], wf.runtime[train])
        proba[lo:hi] = head.predict_proba(X[lo:hi])[:, 0]
    return proba


def trace_shares(trace_name: str, wf):
    """``class_heads.share_columns`` for the walk-forward's trace (the thesis's aggregation
    features as a function of the divider)."""
    from class_heads import share_columns
    from run import load

    from rush.models.runtime_features import TimeBase
    from rush.models.runtime_quantiles_features import usable_history
    from rush.models.runtime_quantiles_walkforward import trace_jobs

    trace, workload = load(trace_name)
    jobs = trace_jobs(workload, TimeBase.from_header(trace.header))
    end = np.where(usable_history(jobs.runtime, jobs.requested_time, jobs.end), jobs.end, np.inf)
    return share_columns(jobs, TimeBase.from_header(trace.header).clock, end, wf.runtime)


def cached_head(wf, daily: bool, shares_of: str | None = None) -> np.ndarray:
    """``head_proba`` of this walk-forward, kept on disk beside the walk-forward cache (keyed by
    the walk-forward's identity: its trace size, feature set, first quantiles and P(small))."""
    import hashlib

    from rush.models.runtime_quantiles_walkforward import WEEK
    from rush.studies.study_cache import cache_folder

    key = f"{len(wf.runtime)} {wf.feature_set} {daily}"
    digest = hashlib.sha256((f"{key} shares" if shares_of else key).encode())
    digest.update(np.ascontiguousarray(wf.quantiles).tobytes())
    digest.update(np.nan_to_num(wf.proba_small, nan=-1.0).tobytes())
    path = cache_folder("runtime_quantiles") / "class_rules" / f"{digest.hexdigest()[:16]}.npy"
    if path.exists():
        return np.load(path)
    proba = head_proba(wf, DAY if daily else WEEK, extra=trace_shares(shares_of, wf) if shares_of else None)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, proba)
    return proba


def rule_proba(wf, rule: str, trace_name: str | None = None) -> np.ndarray:
    """P(small) of a rule of :data:`RULES` on this walk-forward (of ``trace_name``: the
    ``-shares`` rules read the trace)."""
    if rule not in RULES:
        raise SystemExit(f"unknown rule {rule!r}; use one of {', '.join(RULES)}")
    if rule == "quantiles":
        return wf.proba_small
    shares_of = trace_name if rule.endswith("-shares") else None
    if rule.endswith("-shares") and trace_name is None:
        raise SystemExit(f"rule {rule!r} needs the trace's name")
    head = cached_head(wf, rule.endswith("-daily"), shares_of)
    return head if rule.startswith("head") else (wf.proba_small + head) / 2


def with_rule(wf, rule: str):
    """A copy of the walk-forward whose P(small), plain threshold (walk-forward) and classes are
    the rule's; its quantiles are the walk-forward's own."""
    import copy

    from rush.models.runtime_quantiles_walkforward import walkforward_thresholds

    out = copy.copy(wf)
    out.proba_small = rule_proba(wf, rule)
    out.threshold = walkforward_thresholds(out.proba_small, wf.runtime, wf.divider, wf.end, wf.submit)
    known = np.isfinite(out.proba_small)
    out.predicted_class = np.where(known & (out.proba_small >= out.threshold), 0, 1).astype(np.int8)
    return out


def scores(wf, proba: np.ndarray, mask: np.ndarray) -> dict:
    from rush.models.runtime_quantiles_walkforward import walkforward_thresholds

    threshold = walkforward_thresholds(proba, wf.runtime, wf.divider, wf.end, wf.submit)
    called = np.isfinite(proba) & (proba >= threshold)
    divider = np.where(np.isfinite(wf.divider), wf.divider, np.nanmin(wf.divider))
    small = wf.runtime <= divider
    c, s = called[mask], small[mask]
    return {
        "accuracy": float(np.mean(c == s)),
        "precision": float(s[c].mean()) if c.any() else None,
        "recall": float(c[s].mean()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=trace_specs, default="KTH-SP2,SDSC-SP2,CTC-SP2")
    parser.add_argument("--rules", type=names(RULES), default=",".join(RULES))
    parser.add_argument("--gain", action="store_true", help="also the FCFS gain protocol per rule")
    parser.add_argument(
        "--table",
        type=file_stem,
        default="class_rules",
        help="results/<table>.{csv,md} (round 8: class_rules_shares)",
    )
    args = parser.parse_args()
    if args.gain:
        return gain_main(args)

    rows = []
    for name in args.traces:
        wf = default_walkforward(name)
        n = len(wf.runtime)
        halves = {"first": np.arange(n) < n // 2, "second": np.arange(n) >= n // 2, "all": np.ones(n, bool)}
        for rule in args.rules:
            t0 = time.process_time()
            proba = rule_proba(wf, rule, name)
            for half, mask in halves.items():
                row = {"trace": name, "rule": rule, "half": half, **scores(wf, proba, mask)}
                row["cpu_seconds"] = time.process_time() - t0
                print(row, flush=True)
                rows.append(row)
    write_table(OUT, args.table, rows, missing="")


def gain_main(args) -> None:
    from run import gain_rows

    rows = []
    for name in args.traces:
        wf = default_walkforward(name)
        for rule in args.rules:
            for row in gain_rows(name, with_rule(wf, rule), policies=("FCFS",)):
                row = {"rule": rule, **row}
                print(row, flush=True)
                rows.append(row)
    write_table(OUT, "class_rules_gain", rows, missing="")


if __name__ == "__main__":
    main()
