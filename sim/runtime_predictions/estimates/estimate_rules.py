"""Round 6's development runs for start estimates: projection rule, running jobs' remaining time,
the queue's statistic (hypotheses H1-H3 of ``dev_log.md``, written before these runs).

Per trace: the study's schedule (EASY-FCFS on limits), the cached walk-forward of the deployed
model, the estimate at submit of every k-th job (about ``--queries`` of them), split into the
first and the second half of the trace's jobs (development / confirmation). MAE in minutes (a
job started at once counts 0, as in ``estimates.md``).

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 10 \\
        python sim/runtime_predictions/estimates/estimate_rules.py --traces KTH-SP2 --queries 8000
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

OUT = Path(__file__).parent / "results"

# (name, rule, running ends, queue runtimes): "ladder" = the study's rungs of that statistic,
# "conditional" = E[R | R > elapsed] of the predicted distribution.
CANDIDATES = (
    ("limits", "conservative", "limits", "limits"),
    ("quantiles-mean (deployed)", "conservative", "mean-ladder", "mean"),
    ("clairvoyant", "conservative", "real", "real"),
    ("limits/easy", "easy", "limits", "limits"),
    ("H1: mean, EASY replay", "easy", "mean-ladder", "mean"),
    ("H2: conditional, mean", "easy", "conditional", "mean"),
    ("H3: conditional, median", "easy", "conditional", "median"),
    ("H3: conditional, q0.75", "easy", "conditional", "q0.75"),
    ("H4: conditional median, mean", "easy", "conditional-median", "mean"),
    # Round 7 (dev_log.md), with --other-feature-set: the queue's means of the other set.
    ("H5: conditional q0.4, mean", "easy", "conditional-q0.4", "mean"),
    ("D4: conditional median, other set's mean", "easy", "conditional-median", "mean-other"),
    ("H6: conditional median, calibrated mean", "easy", "conditional-median", "mean-calibrated"),
    # Round 8: the mean calibrated per bin of itself (factor 2), walk-forward.
    ("H7: conditional median, binned calibrated mean", "easy", "conditional-median", "mean-binned"),
    (
        "H8: conditional median, binned calibrated mean, model's window",
        "easy",
        "conditional-median",
        "mean-window",
    ),
    # Round 12 (rule L2): the queue projected for max(its H8 mean, its 0.75 quantile).
    ("L2: conditional median, max(H8 mean, q0.75)", "easy", "conditional-median", "l2"),
    # Round 14 (rule D, rush.core.runtime_drift): L2 with every job's quantiles shifted by its
    # user's drift at its submission (the queue's q0.75 and the running jobs' knots).
    ("D: L2 with per-user drift", "easy", "conditional-median", "l2-drift"),
    # Round 15 (rule D2, post hoc): the same record (offline it already runs over the whole
    # trace's walk-forward), the queue's L2 length itself times exp(shift); running jobs as D.
    ("D2: L2 length times per-user drift", "easy", "conditional-median", "l2-d2"),
    # Round 16 (rule C, rush.core.runtime_conformal): L2 with every job's quantiles at the levels
    # the PITs of the last 64 jobs that ended before its submission map them to (all users).
    ("C: L2 with global conformal levels", "easy", "conditional-median", "l2-c"),
    # Round 30 (rule T, rush.core.remaining_runtime.rule_upper): L2's length raised to the mean
    # with the mass above the top predicted quantile carried up to the request.
    ("T: conditional median, max(L2, tail-carried mean)", "easy", "conditional-median", "t"),
    # Round 30 (rule R, r29run; refuted and its core rule reverted, held by a4366c9): the running
    # jobs' ends at their conditional 0.75 quantile given their elapsed time, the queue as L2.
    ("R: conditional q0.75, L2", "easy", "conditional-q0.75", "l2"),
    # Round 31 (rule M, r29mc, rush.core.start_distribution): the median over 32 scenarios of the
    # job's projected start, every running end and queued length drawn from the knots (the
    # queue's "l2" column is not read).
    ("M: median of sampled starts", "easy", "sampled", "l2"),
    # Round 31, post hoc (rule MR): M's drawn running ends, the queue at L2's length.
    ("MR: sampled running ends, L2 queue", "easy", "sampled-running", "l2"),
    ("clairvoyant/easy", "easy", "real", "real"),
)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from study_trace import study_trace, walkforward

    from rush.studies.estimate_accuracy_offline import (
        REMAINING_LADDER,
        REMAINING_MEAN,
        REMAINING_MEDIAN,
        REMAINING_Q40,
        REMAINING_Q75,
        REMAINING_SAMPLED,
        REMAINING_SAMPLED_RUNNING,
        RULE_CONSERVATIVE,
        RULE_EASY,
        projection,
        sweep_projected,
    )
    from rush.studies.runtime_calibration import binned_mean_factors, calibrated_means

    REMAINING = {
        "conditional": REMAINING_MEAN,
        "conditional-median": REMAINING_MEDIAN,
        "conditional-q0.4": REMAINING_Q40,
        "conditional-q0.75": REMAINING_Q75,
        "sampled": REMAINING_SAMPLED,
        "sampled-running": REMAINING_SAMPLED_RUNNING,
    }
    from rush.models.runtime_quantiles_features import FEATURE_SETS
    from rush.studies.arg_types import count, names, trace_specs

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=trace_specs, default="KTH-SP2")
    parser.add_argument("--queries", type=count(1), default=8000)
    parser.add_argument(
        "--only",
        type=names([c[0] for c in CANDIDATES], sep=";"),
        default=(),
        help="candidate names separated by ; (default: all)",
    )
    parser.add_argument(
        "--feature-set",
        default="base",
        choices=sorted(FEATURE_SETS),
        help="the walk-forward's (round 6: base)",
    )
    parser.add_argument(
        "--other-feature-set",
        default="",
        choices=sorted(FEATURE_SETS),
        help="the D4 candidate's queue means come from this set's walk-forward",
    )
    parser.add_argument(
        "--tag",
        default="",
        type=file_tag,
        help="appended to the results file's name (a run on another sample than the committed one)",
    )
    args = parser.parse_args()
    suffix = ("" if args.feature_set == "base" else f"_{args.feature_set}") + args.tag
    path = OUT / f"estimate_rules{suffix}.json"
    report = json.loads(path.read_text()) if path.exists() else {}
    for trace_name in args.traces:
        t0 = time.time()
        st = study_trace(trace_name, args.feature_set)
        wf, req = st.walkforward, st.request
        other = walkforward(trace_name, args.other_feature_set) if args.other_feature_set else None
        ladders = {
            "limits": st.ladders["limits"],
            "mean-ladder": st.ladders["mean"],
            "real": st.ladders["real"],
        }
        first = {
            "limits": req,
            "mean": wf.mean(),
            "median": wf.quantile(0.5),
            "q0.75": wf.quantile(0.75),
            "real": np.minimum(np.asarray(st.workload.runtime, dtype=np.float64), req),
        }
        if other is not None:
            first["mean-other"] = other.mean()
        runtime = first["real"]
        first["mean-calibrated"] = np.minimum(
            wf.mean() * calibration(wf, st.submit, st.start, st.end, runtime), req
        )
        known = np.isfinite(wf.proba_small) & (st.start >= 0)
        first["mean-binned"] = calibrated_means(
            wf.mean(), req, binned_mean_factors(wf.mean(), known, st.submit, st.end, runtime)
        )
        first["mean-window"] = calibrated_means(
            wf.mean(), req, binned_mean_factors(wf.mean(), known, st.submit, st.end, runtime, window=10_000)
        )
        first["l2"] = np.minimum(np.maximum(first["mean-window"], first["q0.75"]), req)
        first["t"] = np.minimum(np.fmax(first["l2"], tail_means(wf, req)), req)
        knots = {"": st.knots}
        drift_rules = ("D: L2 with per-user drift", "D2: L2 length times per-user drift")
        if not args.only or any(c in args.only for c in drift_rules):
            from rush.core.runtime_drift import drift_projection_length

            drifted, knots["l2-drift"], shift = drift_inputs(st, runtime)
            first["l2-drift"] = np.minimum(np.maximum(first["mean-window"], drifted), req)
            knots["l2-d2"] = knots["l2-drift"]
            first["l2-d2"] = drift_projection_length(first["l2"], shift, req)
            print(trace_name, drift_summary(shift), flush=True)
        if not args.only or "C: L2 with global conformal levels" in args.only:
            q75, knots["l2-c"], maps = conformal_inputs(st, runtime)
            first["l2-c"] = np.minimum(np.maximum(first["mean-window"], q75), req)
            print(trace_name, conformal_summary(maps, st.walkforward.levels), flush=True)
        n = len(st.submit)
        step = max(1, int(np.ceil(n / args.queries)))
        jobs, real, classes = st.sample(step)
        estimates = {}
        for rule_name, rule in (("conservative", RULE_CONSERVATIVE), ("easy", RULE_EASY)):
            wanted = [c for c in CANDIDATES if (not args.only or c[0] in args.only) and c[3] in first]
            chosen = [c for c in wanted if c[1] == rule_name]
            if not chosen:
                continue
            for knot_key in sorted({c[3] if c[3] in knots else "" for c in chosen}):
                group = [c for c in chosen if (c[3] if c[3] in knots else "") == knot_key]
                stacked = []
                for _, _, running, queue in group:
                    conditional = running.startswith(("conditional", "sampled"))
                    lad = ladders["mean-ladder" if conditional else running].copy()
                    lad[:, 0] = np.minimum(np.maximum(first[queue], 1.0), req)  # the queue's runtime
                    stacked.append(lad if conditional else np.maximum.accumulate(lad, axis=1))
                t1 = time.time()
                out = sweep_projected(
                    st.submit[jobs],
                    jobs,
                    st.jobs(),
                    np.ascontiguousarray(np.stack(stacked)),
                    projection(
                        rule,
                        req,
                        np.array([REMAINING.get(c[2], REMAINING_LADDER) for c in group]),
                        knots[knot_key],
                    ),
                )
                print(trace_name, rule_name, knot_key, f"{time.time() - t1:.0f} s", flush=True)
                for c, est in zip(group, out, strict=True):
                    estimates[c[0]] = est
        rows = []
        for name in estimates:
            err = estimates[name] - real
            row = {"estimator": name}
            for part, mask in (
                ("first half", jobs < n // 2),
                ("second half", jobs >= n // 2),
                ("all", np.ones(len(jobs), bool)),
                *((f"class {k}", classes == k) for k in (1, 2, 3)),
            ):
                row[part] = float(np.mean(np.abs(err[mask])) / 60)
                row[f"{part} bias"] = float(np.mean(err[mask]) / 60)
            rows.append(row)
            print(
                f"{trace_name:10s} {name:28s} "
                + " ".join(f"{p}={row[p]:7.1f}" for p in ("first half", "second half", "all", "class 3"))
                + f" bias={row['all bias']:7.1f}",
                flush=True,
            )
        kept = [r for r in report.get(trace_name, {}).get("rows", []) if r["estimator"] not in estimates]
        for row in rows:
            row["other_feature_set"] = args.other_feature_set or None
        report[trace_name] = {
            "step": step,
            "queries": len(jobs),
            "seconds": time.time() - t0,
            "rows": kept + rows,
        }
        OUT.mkdir(exist_ok=True)
        path.write_text(json.dumps(report, indent=1))


def file_tag(text: str) -> str:
    """``--tag``: letters, digits, ``_`` and ``-`` only (it becomes part of a file name)."""
    import re

    if not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise argparse.ArgumentTypeError(f"tag {text!r}: letters, digits, _ and - only")
    return text


def tail_means(wf, req: np.ndarray) -> np.ndarray:
    """Rule T's tail-carried mean of each job (round 30, ``dev_log.md``): the core's function on
    the knots the core reads (the walk-forward's quantiles sorted and capped by the request)."""
    from rush.core.remaining_runtime import quantile_knots, tail_carried_means

    q = np.minimum(np.sort(wf.quantiles, axis=1), req[:, None])
    xs, ps = quantile_knots(np.log1p(q), np.asarray(wf.levels, dtype=np.float64), np.log1p(req))
    return tail_carried_means(np.ascontiguousarray(xs), ps)


def drift_inputs(st, runtime: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray], np.ndarray]:
    """Rule D offline (round 14, ``dev_log.md``): each job's shift for its user at its submission
    (:func:`rush.core.runtime_drift.drift_shifts_walkforward`; a residual from each job that ended
    in the study's schedule, against the median of its walk-forward quantiles), and from the
    shifted quantiles (capped by the request, as the core caps them): the queue's q0.75, the
    quantile function's knots, and the shifts."""
    from rush.core.remaining_runtime import quantile_knots
    from rush.core.runtime_drift import drift_residual, drift_shifts_walkforward

    wf, req = st.walkforward, st.request
    median = wf.quantile(0.5)
    residual = np.array(
        [
            drift_residual(r, m, q)
            for r, m, q in zip(runtime.tolist(), median.tolist(), req.tolist(), strict=True)
        ]
    )
    residual[~np.isfinite(wf.proba_small)] = np.nan  # no prediction at its submission
    end = np.where(st.start >= 0, st.end, np.inf)
    shift = drift_shifts_walkforward(np.asarray(st.workload.user), st.submit, end, residual)
    q = np.minimum(np.sort(wf.quantiles, axis=1) * np.exp(shift)[:, None], req[:, None])
    level = int(np.flatnonzero(np.isclose(wf.levels, 0.75))[0])
    return q[:, level], quantile_knots(np.log1p(q), wf.levels, np.log1p(req)), shift


def conformal_inputs(st, runtime: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray], np.ndarray]:
    """Rule C offline (round 16, ``dev_log.md``): each job's level map at its submission
    (:func:`rush.core.runtime_conformal.conformal_levels_walkforward`; a PIT from each job that
    ended in the study's schedule, against its walk-forward quantiles, so out-of-sample), and from
    the recalibrated quantiles (never above the request): the queue's q0.75, the quantile
    function's knots, and the maps."""
    from rush.core.remaining_runtime import quantile_knots
    from rush.core.runtime_conformal import conformal_levels_walkforward, pit_value, recalibrated_seconds

    wf, req = st.walkforward, st.request
    levels = np.asarray(wf.levels, dtype=np.float64)
    pit = np.array(
        [
            pit_value(levels, row, r, lim)
            for row, r, lim in zip(wf.quantiles.tolist(), runtime.tolist(), req.tolist(), strict=True)
        ]
    )
    pit[~np.isfinite(wf.proba_small)] = np.nan  # no prediction at its submission
    end = np.where(st.start >= 0, st.end, np.inf)
    maps = conformal_levels_walkforward(st.submit, end, pit, levels)
    q = np.minimum(np.sort(recalibrated_seconds(wf.quantiles, levels, maps, req), axis=1), req[:, None])
    level = int(np.flatnonzero(np.isclose(levels, 0.75))[0])
    return q[:, level], quantile_knots(np.log1p(q), levels, np.log1p(req)), maps


def conformal_summary(maps: np.ndarray, levels) -> str:
    """How rule C moved the levels over the trace's jobs: the q10/median/q90 of the mapped median
    and q0.75."""
    lv = np.asarray(levels, dtype=np.float64)
    parts = []
    for tau in (0.5, 0.75):
        k = int(np.flatnonzero(np.isclose(lv, tau))[0])
        parts.append(f"{tau}: " + "/".join(f"{v:.2f}" for v in np.quantile(maps[:, k], [0.1, 0.5, 0.9])))
    return "conformal levels (q10/median/q90 over jobs) " + "; ".join(parts)


def drift_summary(shift: np.ndarray) -> str:
    """How rule D moved the trace's jobs: share shifted, quartiles of exp(shift)."""
    factor = np.exp(shift)
    q = np.quantile(factor, [0.1, 0.25, 0.5, 0.75, 0.9])
    return (
        f"drift: {np.mean(shift != 0) * 100:.0f} % of jobs shifted; exp(shift) q10/25/50/75/90 "
        + "/".join(f"{v:.2f}" for v in q)
    )


def calibration(wf, submit, start, end, runtime) -> np.ndarray:
    """H6's factor per job (round 7, ``dev_log.md``): for the week of its submission, the real
    (clipped) runtimes over the predicted means, summed over the jobs with a prediction that
    ended in the study's schedule before that week began (1 while none has)."""
    from rush.models.runtime_quantiles_walkforward import WEEK

    submit, start, end = (np.asarray(a, dtype=np.float64) for a in (submit, start, end))
    done = np.isfinite(wf.proba_small) & (start >= 0)
    order = np.argsort(end[done], kind="stable")
    ends = end[done][order]
    real = np.concatenate([[0.0], np.cumsum(runtime[done][order])])
    pred = np.concatenate([[0.0], np.cumsum(wf.mean()[done][order])])
    origin = submit.min()
    week_start = origin + np.floor((submit - origin) / WEEK) * WEEK
    seen = np.searchsorted(ends, week_start, side="left")  # ended strictly before the week began
    return np.where(pred[seen] > 0, real[seen] / np.maximum(pred[seen], 1e-9), 1.0)


if __name__ == "__main__":
    main()
