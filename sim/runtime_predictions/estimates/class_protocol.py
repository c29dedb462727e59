"""Where the class accuracy is lost against the thesis: a protocol decomposition (D4).

A diagnostic, not a rule (it may use future data and chooses nothing; ``dev_log.md``, round
7). On the newest cached walk-forward of the default feature set (``run.py``'s cache: the same
predicted quantiles for every row), the deployed plain decision (P(small) >= the threshold
chosen walk-forward on past outcomes) is re-scored under each difference between this study's
protocol and the thesis's (seed 003, sections 6.2-6.3):

* ``week0``: the first week (no model, called large here) left out;
* ``published``: the thesis's job set (runtime > 0 and < the request; Table 3.1's sizes);
* ``thesis-divider``: Table 6.1's one divider per trace instead of the median of the jobs
  finished before each week. P(runtime <= D) is re-read off the same quantiles (the quantile
  models and their features do not depend on the divider), the threshold re-chosen
  walk-forward against D;
* ``median-divider``: the median runtime of the evaluated jobs (what Table 6.1 states);
* ``previous-week``: the median runtime of the jobs submitted in the week before (round 8: the
  thesis's scheduling protocol, 6.4.2, "the update includes finding the median execution time
  over the workload log of the previous week", and 6.2's "rolling median"; the log's reading,
  so a job of that week still running at the week's start counts with its runtime);

and their combinations. Also, per trace, the small share of the evaluated jobs that Table 6.4's
rounded accuracy, precision and recall allow (``implied_small_share``).

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 10 \\
        python sim/runtime_predictions/estimates/class_protocol.py [--traces KTH-SP2,CTC-SP2,SDSC-SP2]

Writes ``results/class_protocol.{csv,md}``.
"""

from __future__ import annotations

import argparse
import sys
from itertools import product
from pathlib import Path

import numpy as np

from rush.studies.arg_types import names
from rush.studies.tables import write_table

sys.path.insert(0, str(Path(__file__).parent))

from run import OUT, load  # noqa: E402

# Seed 003, Table 6.1 (divider, s) and Table 6.4 (accuracy, precision, recall, %).
THESIS_DIVIDER = {"KTH-SP2": 847.0, "CTC-SP2": 1114.0, "SDSC-SP2": 359.0, "SDSC-BLUE": 229.0}
THESIS_TABLE_6_4 = {
    "KTH-SP2": (86, 79, 90),
    "CTC-SP2": (85, 82, 86),
    "SDSC-SP2": (87, 89, 91),
    "SDSC-BLUE": (80, 78, 83),
}


def implied_small_share(accuracy: int, precision: int, recall: int) -> tuple[float, float]:
    """The range of small shares s for which some (A, P, R) within half a percent of the
    published integers satisfies A = 1 - s * (R (1 - P) / P + (1 - R)) (small = positive)."""
    grid = np.linspace(-0.005, 0.005, 21)
    shares = []
    for da, dp, dr in product(grid, grid, grid):
        a, p, r = (accuracy / 100 + da), (precision / 100 + dp), (recall / 100 + dr)
        errors_per_small = r * (1 - p) / p + (1 - r)
        shares.append((1 - a) / errors_per_small)
    return float(min(shares)), float(max(shares))


def default_walkforward(trace: str):
    from rush.models.runtime_quantiles_features import DEFAULT_FEATURE_SET

    sys.path.insert(0, str(Path(__file__).parents[1]))
    from rush_q import default_walkforward as newest

    return newest(trace, DEFAULT_FEATURE_SET)


def score(called_small: np.ndarray, small: np.ndarray, mask: np.ndarray) -> dict:
    c, s = called_small[mask], small[mask]
    return {
        "jobs": int(mask.sum()),
        "small_share": float(s.mean()),
        "accuracy": float(np.mean(c == s)),
        "precision": float(s[c].mean()) if c.any() else float("nan"),
        "recall": float(c[s].mean()) if s.any() else float("nan"),
    }


def previous_week_median(week: np.ndarray, runtime: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """Per job, the median runtime of the jobs submitted in the week before its own (the last
    earlier week with jobs when that one has none); ``fallback`` in the first week."""
    out = np.asarray(fallback, dtype=np.float64).copy()
    last = np.nan
    for k in np.unique(week):
        mine = week == k
        if np.isfinite(last):
            out[mine] = last
        last = float(np.median(runtime[mine]))
    return out


def trace_rows(name: str) -> list[dict]:
    from rush.models.runtime_quantiles import proba_below_quantiles
    from rush.models.runtime_quantiles_walkforward import walkforward_thresholds

    trace, workload = load(name)
    wf = default_walkforward(name)
    raw = np.asarray(workload.runtime, dtype=float)
    published = (raw > 0) & (raw < np.asarray(workload.requested_time, dtype=float))
    has_model = np.isfinite(wf.proba_small)
    log_q = np.log1p(wf.quantiles)
    rows = []

    def rescored(divider: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """P(small) against ``divider`` and the plain decision, threshold walk-forward."""
        proba = np.full(len(divider), np.nan)
        proba[has_model] = proba_below_quantiles(
            log_q[has_model], wf.levels, divider[has_model], wf.features[has_model]
        )
        threshold = walkforward_thresholds(proba, wf.runtime, divider, wf.end, wf.submit)
        return proba, has_model & (proba >= threshold)

    rolling = np.where(np.isfinite(wf.divider), wf.divider, np.nanmin(wf.divider))
    dividers = {
        "rolling": rolling,
        "thesis-divider": np.full(len(raw), THESIS_DIVIDER[name]),
        "previous-week": previous_week_median(wf.week, wf.runtime, rolling),
    }
    for divider_name, divider in dividers.items():
        if divider_name == "rolling":
            called = has_model & (wf.proba_small >= wf.threshold)
        else:
            _, called = rescored(divider)
        small = wf.runtime <= divider
        for jobset, week0 in product(("full", "published"), (True, False)):
            mask = (published if jobset == "published" else np.ones(len(raw), bool)) & (week0 | has_model)
            rows.append(
                {
                    "trace": name,
                    "divider": divider_name,
                    "divider_s": float(np.median(divider[mask])),
                    "job_set": jobset,
                    "week0": "in" if week0 else "out",
                    **score(called, small, mask),
                }
            )
    # The median of the evaluated set (Table 6.1's rule), per job set.
    for jobset, week0 in product(("full", "published"), (True, False)):
        mask = (published if jobset == "published" else np.ones(len(raw), bool)) & (week0 | has_model)
        median = float(np.median(wf.runtime[mask]))
        divider = np.full(len(raw), median)
        _, called = rescored(divider)
        rows.append(
            {
                "trace": name,
                "divider": "median-divider",
                "divider_s": median,
                "job_set": jobset,
                "week0": "in" if week0 else "out",
                **score(called, wf.runtime <= divider, mask),
            }
        )
    lo, hi = implied_small_share(*THESIS_TABLE_6_4[name])
    a, p, r = THESIS_TABLE_6_4[name]
    rows.append(
        {
            "trace": name,
            "divider": "thesis Table 6.4",
            "divider_s": THESIS_DIVIDER[name],
            "job_set": "thesis",
            "week0": "?",
            "jobs": None,
            "small_share": f"{lo:.2f}-{hi:.2f}",
            "accuracy": a / 100,
            "precision": p / 100,
            "recall": r / 100,
        }
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=names(tuple(THESIS_DIVIDER)), default="KTH-SP2,CTC-SP2,SDSC-SP2")
    args = parser.parse_args()
    rows = []
    for name in args.traces:
        for row in trace_rows(name):
            print(row, flush=True)
            rows.append(row)
    write_table(OUT, "class_protocol", rows, missing="")


if __name__ == "__main__":
    main()
