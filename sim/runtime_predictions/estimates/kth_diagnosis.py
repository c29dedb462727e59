"""Why are KTH-SP2's start estimates poor? A breakdown of the error at submit (issue 29, round 6).

On the schedule of the study (the simulator's EASY-FCFS on limits) and the cached walk-forward of
the deployed model, the estimate at submit of every job is recomputed with

* runtimes mixed per source: the running jobs' ends from one estimator and the queue's runtimes
  from another (limits, the predictor's mean, the real runtimes), so that the error splits into
  what the running jobs' predicted ends cost and what the queue's predicted runtimes cost;
* two projection rules: ``conservative``, the core's projection until round 5 (each job at the
  earliest hole for its predicted runtime, no arrivals), and ``easy``, a replay of the
  scheduler's own rule without arrivals (EASY on the limits: the head's shadow time and the
  backfill test read the requests; time moves on the predicted ends).

With real runtimes and the scheduler's own rule, what is left is the future: jobs that arrive
later and backfill ahead. That is the floor of any estimator that knows only the present.

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 10 \\
        python sim/runtime_predictions/estimates/kth_diagnosis.py [--traces KTH-SP2] [--step 10]

``--feature-set t23`` (round 8) reads that walk-forward and writes ``kth_diagnosis_t23.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).parent / "results"
RULES = ("conservative", "easy")
# (running jobs' ends, queue's runtimes) per estimator: ladders of study_trace.py's sources;
# "conditional" running ends at the median runtime given the elapsed time (the rule kept in
# round 6).
COMBOS = (
    ("limits", "limits"),
    ("mean", "mean"),
    ("real", "mean"),
    ("mean", "real"),
    ("real", "real"),
    ("limits", "real"),
    ("real", "limits"),
    ("conditional", "mean"),
    ("conditional", "real"),
    # Round 8 (dev_log.md, D7): the queue's means calibrated as H8.
    ("conditional", "calibrated"),
    ("real", "calibrated"),
)


def main() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from study_trace import study_trace

    from rush.models.runtime_quantiles_features import FEATURE_SETS
    from rush.studies.arg_types import count, trace_specs
    from rush.studies.estimate_accuracy_offline import (
        REMAINING_LADDER,
        REMAINING_MEDIAN,
        RULE_CONSERVATIVE,
        RULE_EASY,
        projection,
        sweep_by_source,
    )
    from rush.studies.runtime_calibration import binned_mean_factors, calibrated_means

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=trace_specs, default="KTH-SP2")
    parser.add_argument("--step", type=count(1), default=10, help="every k-th job")
    parser.add_argument(
        "--feature-set",
        default="base",
        choices=sorted(FEATURE_SETS),
        help="the walk-forward's (rounds 6-7: base)",
    )
    args = parser.parse_args()
    report = {}
    for trace_name in args.traces:
        st = study_trace(trace_name, args.feature_set)
        calibrated = st.ladders["mean"].copy()
        known = np.isfinite(st.walkforward.proba_small) & (st.start >= 0)
        mean = st.walkforward.mean()
        real = np.minimum(np.asarray(st.workload.runtime, dtype=np.float64), st.request)
        factor = binned_mean_factors(mean, known, st.submit, st.end, real, window=10_000)
        calibrated[:, 0] = np.minimum(np.maximum(calibrated_means(mean, st.request, factor), 1.0), st.request)
        # rung 0 of "conditional" unused: the code reads the ends
        lad = st.ladders | {"conditional": st.ladders["mean"], "calibrated": calibrated}
        running = np.ascontiguousarray(np.stack([lad[r] for r, _ in COMBOS]))
        queue = np.ascontiguousarray(np.stack([lad[p][:, 0] for _, p in COMBOS]))
        conditional = np.array(
            [REMAINING_MEDIAN if r == "conditional" else REMAINING_LADDER for r, _ in COMBOS]
        )
        jobs, real_start, classes = st.sample(args.step)
        half = len(st.submit) // 2
        rows = []
        for rule, code in zip(RULES, (RULE_CONSERVATIVE, RULE_EASY), strict=True):
            est = sweep_by_source(
                st.submit[jobs],
                jobs,
                st.jobs(),
                (running, queue),
                projection(code, st.request, conditional, st.knots),
            )
            for c, (r, p) in enumerate(COMBOS):
                err = est[c] - real_start
                for part, mask in (
                    ("all", np.ones(len(jobs), bool)),
                    ("first half", jobs < half),
                    ("second half", jobs >= half),
                    *((f"class {k}", classes == k) for k in (1, 2, 3)),
                ):
                    e = err[mask]
                    rows.append(
                        {
                            "trace": trace_name,
                            "rule": rule,
                            "running": r,
                            "queue": p,
                            "part": part,
                            "jobs": int(mask.sum()),
                            "mae_min": float(np.mean(np.abs(e)) / 60),
                            "bias_min": float(np.mean(e) / 60),
                            "late_share": float(np.mean(e > 60)),
                            "early_share": float(np.mean(e < -60)),
                        }
                    )
                    if part == "all" or part.startswith("class"):
                        print(
                            f"{trace_name} {rule:12s} run={r:6s} queue={p:6s} {part:11s} "
                            f"mae={rows[-1]['mae_min']:7.1f} bias={rows[-1]['bias_min']:7.1f} "
                            f"late={rows[-1]['late_share']:.2f} early={rows[-1]['early_share']:.2f}",
                            flush=True,
                        )
        report[trace_name] = rows
    OUT.mkdir(exist_ok=True)
    suffix = "" if args.feature_set == "base" else f"_{args.feature_set}"
    (OUT / f"kth_diagnosis{suffix}.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
