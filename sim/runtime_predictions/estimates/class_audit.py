"""Round 13's protocol audit (issue 29): rush's class rules counted under each reading of the
thesis's protocol (seed 003, sections 6.2-6.4; ``dev_log.md``, round 13, A1-A10 and H13).

No new rule: the decisions are ``class_history.py``'s (``quantiles``, the deployed rule, and
``blend-recent+cold-start``, R9a + R9g, rush's best with no future data), made at the rolling
divider (the median of the jobs finished before each week) and re-counted under each job set:

* ``R0`` ours: every job, week 0 counted (called large, or by R9g's cold start);
* ``R1`` week 0 left out; ``R2`` thesis-online: R1 and the ``published`` jobs (runtime > 0 and
  < the request: Table 3.1's set, A1);
* ``R3`` R1 and completed jobs only (SWF status 1, A2);
* ``R4`` R2 and a request above the divider (no "non-premature small" job, A3);
* ``R5`` R2 and a history in earlier weeks: at least three jobs submitted in weeks before the
  job's own in both its (user, request) and (user, processors) categories (A9);
* ``R5b`` / ``R5c`` (post hoc): R2 and at least one earlier-week job in both categories / at
  least three in one of them;
* ``R6`` R2 with small = runtime strictly under the divider (A4's "smaller than").

Then the decisions refitted at two other dividers (the head, the quantiles' P(small) re-read, the
threshold re-chosen walk-forward, as ``class_history.py --thesis-divider``), counted as R2 and R5:
``R7`` the median runtime of the jobs submitted in the week before (§6.4.2; no future data) and
``R8`` Table 6.1's whole-log divider (future data: a bound, never a choice). Every row carries the
small share of the counted jobs beside the one Tables 6.4 and 6.5 imply (:func:`implied_by_tables`).

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 15 \\
        python sim/runtime_predictions/estimates/class_audit.py [--traces KTH-SP2,SDSC-SP2] [--dividers rolling,R7,R8]

Writes ``results/class_audit.{csv,md}`` (``--table`` to rename).
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

from class_history import rule_decision, score, trace_history  # noqa: E402
from class_protocol import THESIS_DIVIDER, previous_week_median  # noqa: E402
from run import OUT  # noqa: E402

BEST = "blend-recent+cold-start"
# Seed 003, Table 6.5 (%, the column headed "False Large" first) and Table 6.4's precision (%).
THESIS_TABLE_6_5 = {
    "KTH-SP2": (9.27, 4.03, 79),
    "CTC-SP2": (8.16, 6.29, 82),
    "SDSC-SP2": (7.20, 5.85, 89),
    "SDSC-BLUE": (11.29, 8.52, 78),
}
MIN_EARLIER_JOBS = 3  # the thesis's three lags (Table 6.3)


def implied_by_tables(false_small_pct: float, false_large_pct: float, precision_pct: float) -> dict:
    """Accuracy, recall and small share of the counted jobs that Table 6.5's two columns, read as
    shares of all counted jobs (FS / N, FL / N), and Table 6.4's precision imply (A10):
    TS = FS P / (1 - P), recall = TS / (TS + FL), small share = TS + FL."""
    fs, fl, p = false_small_pct / 100, false_large_pct / 100, precision_pct / 100
    if not (0 < p < 1) or fs < 0 or fl < 0 or fs + fl >= 1:
        raise ValueError(
            f"not a confusion: FS {false_small_pct} %, FL {false_large_pct} %, P {precision_pct} %"
        )
    ts = fs * p / (1 - p)
    return {"accuracy": 1 - fs - fl, "recall": ts / (ts + fl), "small_share": ts + fl}


def earlier_week_counts(code: np.ndarray, week: np.ndarray) -> np.ndarray:
    """Per job, how many jobs of its category (``code``) were submitted in weeks before its own
    (jobs of its own week do not count: the thesis reads lags from previous weeks only)."""
    code = np.asarray(code, dtype=np.int64)
    week = np.asarray(week, dtype=np.int64)
    if len(code) != len(week):
        raise ValueError(f"{len(code)} categories for {len(week)} weeks")
    if not len(code):
        return np.zeros(0, dtype=np.int64)
    if week.min() < 0 or code.min() < 0:
        raise ValueError("categories and weeks must be >= 0")
    span = int(week.max()) + 1
    key = np.sort(code * span + week)
    return np.searchsorted(key, code * span + week, side="left") - np.searchsorted(
        key, code * span, side="left"
    )


def category_codes(*columns: np.ndarray) -> np.ndarray:
    """One code per distinct tuple of the columns' values."""
    return np.unique(np.column_stack(columns), axis=0, return_inverse=True)[1].ravel()


def earlier_history(user, request, procs, week) -> tuple[np.ndarray, np.ndarray]:
    """Per job, its jobs of earlier weeks in the (user, request) and (user, processors)
    categories."""
    by_request = earlier_week_counts(category_codes(user, request), week)
    return by_request, earlier_week_counts(category_codes(user, procs), week)


def history_complete(user, request, procs, week) -> np.ndarray:
    """A9: at least three jobs of earlier weeks in both the (user, request) and (user, processors)
    categories."""
    by_request, by_procs = earlier_history(user, request, procs, week)
    return (by_request >= MIN_EARLIER_JOBS) & (by_procs >= MIN_EARLIER_JOBS)


def job_sets(workload, wf, divider: np.ndarray) -> dict[str, np.ndarray]:
    """The counted jobs of each reading at ``divider`` (R6 is R2's set with strict labels)."""
    raw = np.asarray(workload.runtime, dtype=float)
    request = np.asarray(workload.requested_time, dtype=float)
    published = (raw > 0) & (raw < request)
    has_model = np.isfinite(wf.proba_small)
    status = np.asarray(workload.extra["status"])
    by_request, by_procs = earlier_history(workload.user, request, workload.procs, wf.week)
    thesis_online = has_model & published
    return {
        "R0 ours": np.ones(len(raw), bool),
        "R1 week 0 out": has_model,
        "R2 thesis-online": thesis_online,
        "R3 completed": has_model & (status == 1),
        "R4 request > divider": thesis_online & (request > divider),
        "R5 history-complete": thesis_online & (np.minimum(by_request, by_procs) >= MIN_EARLIER_JOBS),
        "R5b history >= 1": thesis_online & (np.minimum(by_request, by_procs) >= 1),
        "R5c history >= 3 in one": thesis_online & (np.maximum(by_request, by_procs) >= MIN_EARLIER_JOBS),
        "R6 strict <": thesis_online,
    }


DIVIDERS = ("rolling", "R7", "R8")


def trace_rows(name: str, rules: list[str], divider_names: list[str]) -> list[dict]:
    from rush.models.runtime_quantiles import proba_below_quantiles

    workload, wf, _, _, _, recent = trace_history(name)
    has_model = np.isfinite(wf.proba_small)
    n = len(wf.runtime)
    rolling = np.where(np.isfinite(wf.divider), wf.divider, np.nanmin(wf.divider))
    every = {
        "rolling": lambda: rolling,
        "R7 previous week": lambda: previous_week_median(wf.week, wf.runtime, rolling),
        "R8 Table 6.1 (future data)": lambda: np.full(n, THESIS_DIVIDER[name]),
    }
    dividers = {k: make() for k, make in every.items() if k.split()[0] in divider_names}
    implied = implied_by_tables(*THESIS_TABLE_6_5[name]) if name in THESIS_TABLE_6_5 else {}
    rows = []
    for divider_name, divider in dividers.items():
        quantile_proba = wf.proba_small
        if divider_name != "rolling":
            quantile_proba = np.full(n, np.nan)
            quantile_proba[has_model] = proba_below_quantiles(
                np.log1p(wf.quantiles[has_model]), wf.levels, divider[has_model], wf.features[has_model]
            )
        sets = job_sets(workload, wf, divider)
        if divider_name != "rolling":
            sets = {k: sets[k] for k in ("R2 thesis-online", "R5 history-complete")}
        for rule in rules:
            t0 = time.process_time()
            called = _decision(wf, rule, divider, quantile_proba, recent)
            cpu = time.process_time() - t0
            for reading, mask in sets.items():
                small = wf.runtime < divider if reading.startswith("R6") else wf.runtime <= divider
                row = {"trace": name, "rule": rule, "divider": divider_name, "reading": reading}
                row |= {**score(called, small, mask), "small_share": float(small[mask].mean())}
                row |= {
                    "tables_small_share": implied.get("small_share", np.nan),
                    "cpu_seconds": round(cpu, 1),
                }
                print(row, flush=True)
                rows.append(row)
    return rows


def _decision(wf, rule: str, divider: np.ndarray, quantile_proba: np.ndarray, recent) -> np.ndarray:
    """Called small per job: the deployed ``quantiles`` rule (P(small) >= the walk-forward
    threshold) or one of ``class_history.py``'s rules."""
    from rush.models.runtime_quantiles_walkforward import walkforward_thresholds

    if rule != "quantiles":
        return rule_decision(copy.copy(wf), rule, divider, quantile_proba, recent)
    if quantile_proba is wf.proba_small:
        threshold = wf.threshold
    else:
        threshold = walkforward_thresholds(quantile_proba, wf.runtime, divider, wf.end, wf.submit)
    return np.isfinite(quantile_proba) & (quantile_proba >= threshold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    from class_history import RULE_NAMES

    parser.add_argument("--traces", type=trace_specs, default="KTH-SP2,SDSC-SP2")
    parser.add_argument("--rules", type=names(("quantiles", *RULE_NAMES)), default=f"quantiles,{BEST}")
    parser.add_argument(
        "--dividers", type=names(DIVIDERS), default=",".join(DIVIDERS), help="of rolling, R7, R8"
    )
    parser.add_argument("--table", type=file_stem, default="class_audit")
    args = parser.parse_args()
    rows = []
    for name in args.traces:
        rows += trace_rows(name, list(args.rules), list(args.dividers))
        write_table(OUT, args.table, rows, missing="")


if __name__ == "__main__":
    main()
