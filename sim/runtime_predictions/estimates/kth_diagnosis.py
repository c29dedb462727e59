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
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from numba import njit

from rush.core.remaining_runtime import conditional_quantile_runtime, quantile_knots
from rush.core.start_estimates import EasyRunning, project_easy_starts, project_starts
from rush.studies.estimate_accuracy_offline import _running_length, ladder, limits_ladder, wait_class

OUT = Path(__file__).parent / "results"
RULES = ("conservative", "easy")


@njit(cache=True)
def sweep_mixed(
    query_time,
    query_job,
    submit,
    start,
    end,
    procs,
    run_ladders,
    pend_ladders,
    request,
    machine,
    rule,
    conditional,
    knots_x,
    knots_p,
):
    """Estimates at each query: running ends from ``run_ladders[e]`` (or, where
    ``conditional[e]``, the median runtime given the elapsed time: the rule kept in round 6), queue runtimes from
    ``pend_ladders[e]``; rule 0 the conservative projection, 1 the EASY replay on limits."""
    n_est = run_ladders.shape[0]
    nq = len(query_time)
    out = np.full((n_est, nq), np.inf)
    active = np.empty(len(submit), dtype=np.int64)
    n_active = 0
    nxt = 0
    for q in range(nq):
        t = query_time[q]
        j = query_job[q]
        while nxt < len(submit) and submit[nxt] <= t:
            active[n_active] = nxt
            n_active += 1
            nxt += 1
        kept = 0
        for a in range(n_active):
            k = active[a]
            if end[k] > t:
                active[kept] = k
                kept += 1
        n_active = kept
        if start[j] <= t:
            for e in range(n_est):
                out[e, q] = start[j]
            continue
        run_l = []
        pend_l = []
        busy = 0
        for a in range(n_active):
            k = active[a]
            if start[k] <= t:
                run_l.append(k)
                busy += procs[k]
            elif k <= j:
                pend_l.append(k)
        run_k = np.array(run_l, dtype=np.int64)
        pend_k = np.sort(np.array(pend_l, dtype=np.int64))
        n_run = len(run_k)
        n_pend = len(pend_k)
        order = np.arange(n_pend)
        local_procs = procs[pend_k]
        run_procs = procs[run_k]
        run_limit = start[run_k] + request[run_k]
        for e in range(n_est):
            run_end = np.empty(n_run)
            for i in range(n_run):
                k = run_k[i]
                if conditional[e]:
                    run_end[i] = start[k] + conditional_quantile_runtime(
                        knots_x[k], knots_p, t - start[k], 0.5
                    )
                else:
                    run_end[i] = start[k] + _running_length(run_ladders[e, k], t - start[k])
            dur = np.empty(n_pend)
            for i in range(n_pend):
                dur[i] = pend_ladders[e, pend_k[i], 0]
            if rule == 0:
                by_end = np.argsort(run_end)
                starts = project_starts(
                    t,
                    max(machine - busy, 0),
                    run_end[by_end],
                    run_procs[by_end],
                    order,
                    local_procs,
                    dur,
                    False,
                )
            else:
                starts = project_easy_starts(
                    t,
                    max(machine - busy, 0),
                    EasyRunning(run_end, np.maximum(run_limit, run_end), run_procs),
                    order,
                    local_procs,
                    dur,
                    request[pend_k],
                )
            out[e, q] = starts[n_pend - 1]
    return out


def main() -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from run import cached_walkforward, load

    from rush.core.config import CoreConfig
    from rush.models.runtime_quantiles import RuntimeQuantileRegressor
    from rush.simulator.engine import simulate

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", default="KTH-SP2")
    parser.add_argument("--step", type=int, default=10, help="every k-th job")
    args = parser.parse_args()
    model = RuntimeQuantileRegressor()
    report = {}
    for trace_name in args.traces.split(","):
        wf = cached_walkforward(
            trace_name, 10_000, model.max_iter, 1, model.learning_rate, model.max_leaf_nodes
        )
        trace, workload = load(trace_name)
        result = simulate(workload, CoreConfig.from_names("FCFS", "easy", 200_000))
        req = np.asarray(workload.requested_time, dtype=np.float64)
        runtime = np.minimum(np.asarray(workload.runtime, dtype=np.float64), req)
        upper = wf.quantiles[:, wf.levels > 0.5]
        lad = {
            "limits": limits_ladder(req),
            "mean": ladder(wf.mean(), upper, req),
            "real": ladder(runtime, None, req),
        }
        combos = [
            ("limits", "limits"),
            ("mean", "mean"),
            ("real", "mean"),
            ("mean", "real"),
            ("real", "real"),
            ("limits", "real"),
            ("real", "limits"),
            ("conditional", "mean"),
            ("conditional", "real"),
        ]
        knots = quantile_knots(np.log1p(wf.quantiles), wf.levels, np.log1p(req))
        lad["conditional"] = lad["mean"]  # unused: the flag below takes the running ends
        submit = np.asarray(result.submit, dtype=np.float64)
        start = np.asarray(result.start, dtype=np.float64)
        end = np.asarray(result.end, dtype=np.float64)
        jobs = np.arange(0, len(submit), args.step)
        jobs = jobs[start[jobs] >= 0]
        real_start = start[jobs]
        wait = real_start - submit[jobs]
        classes = wait_class(wait)
        n = len(submit)
        half = n // 2
        rows = []
        for rule_index, rule in enumerate(RULES):
            est = sweep_mixed(
                submit[jobs],
                jobs,
                submit,
                np.where(start >= 0, start, np.inf),
                np.where(start >= 0, end, np.inf),
                np.asarray(workload.procs, dtype=np.int64),
                np.ascontiguousarray(np.stack([lad[r] for r, _ in combos])),
                np.ascontiguousarray(np.stack([lad[p] for _, p in combos])),
                req,
                int(workload.machine_procs),
                rule_index,
                np.array([r == "conditional" for r, _ in combos]),
                np.ascontiguousarray(knots[0]),
                knots[1],
            )
            for c, (r, p) in enumerate(combos):
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
    (OUT / "kth_diagnosis.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
