"""Waits under predicted reservations: rush-Q and EASY++ beside EASY-FCFS, longest waits first.

For each trace and job set: the EASY-FCFS base, rush-Q and its kill-budget and plain-threshold
variants (``rush.studies.runtime_predictions_quantiles``, the cached runtime-quantile
walk-forward as ``rush_q.py`` reads it) and EASY++ (its walk-forward predictions, SJBF,
stepwise correction); per scheduler the improvement of the mean bounded slowdown over
EASY-FCFS, false-small kills, the maximum and 99th percentile wait, the jobs that waited over
10^6 s, and the three longest waits (job id, processors, wait, how far the start came after the
first reservation the job was promised as EASY's head). Writes
``results/<job set>/starvation_<label>.{csv,md}``; ``--label before`` is meant to be run with
the rush of main (``PYTHONPATH=/work/main``), ``after`` with this branch's.

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 10 \\
        python sim/runtime_predictions/starvation.py --label after [--traces ...] [--job-set both]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
SCHEDULERS = ("rush-Q", "rush-Q (kill budget)", "rush-Q (plain threshold)")


def _summary(trace: str, job_set: str, name: str, result, base_bsld: float, tau: float) -> dict:
    from rush.simulator.metrics import compute_metrics

    bsld = compute_metrics(result, tau=tau)["mean_bounded_slowdown"]
    wait = result.start - result.submit
    first = np.asarray(result.attributes["first_reservation"])
    top = np.argsort(-wait, kind="stable")[:3]
    row = {
        "trace": trace,
        "job_set": job_set,
        "scheduler": name,
        "improvement_pct": 100.0 * (base_bsld - bsld) / base_bsld,
        "false_small_kills": int(result.requeues.sum()),
        "max_wait_s": float(wait.max()),
        "p99_wait_s": float(np.percentile(wait, 99)),
        "waits_over_1e6_s": int(np.sum(wait > 1e6)),
    }
    for k, j in enumerate(top, 1):
        slid = result.start[j] - first[j] if np.isfinite(first[j]) else float("nan")
        row[f"longest_{k}"] = (
            f"job {int(result.job_id[j])}: {int(result.procs[j])} procs, wait {wait[j]:.0f} s, "
            f"start - first reservation {slid:.0f} s"
        )
    return row


def main() -> None:
    from rush.core.config import CoreConfig
    from rush.core.runtime_predictions import prediction_policy
    from rush.models.runtime_predictors import make_predictor, predict_walkforward
    from rush.models.runtime_quantiles_features import DEFAULT_FEATURE_SET
    from rush.models.walkforward import published_job_set
    from rush.simulator.engine import SimInputs, simulate
    from rush.simulator.metrics import compute_metrics
    from rush.studies.arg_types import file_stem, trace_specs
    from rush.studies.runtime_predictions import TAU, THRESHOLD
    from rush.studies.runtime_predictions_quantiles import _published, scheduler_inputs
    from rush.studies.tables import write_table
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    sys.path.insert(0, str(HERE))
    from rush_q import default_walkforward

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--label", type=file_stem, required=True, help="results/<job set>/starvation_<label>")
    parser.add_argument("--traces", type=trace_specs, default="KTH-SP2,CTC-SP2,SDSC-BLUE,SDSC-SP2")
    parser.add_argument("--job-set", default="both", choices=("published", "full", "both"))
    args = parser.parse_args()
    job_sets = ("published", "full") if args.job_set == "both" else (args.job_set,)
    import rush

    print("rush from", rush.__file__, flush=True)
    for job_set in job_sets:
        rows = []
        for trace in args.traces:
            full = workload_from_trace(load_trace(trace))
            wf = default_walkforward(trace, DEFAULT_FEATURE_SET)
            picked = _published(full) if job_set == "published" else np.arange(len(full))
            workload = published_job_set(full) if job_set == "published" else full
            base = simulate(workload, CoreConfig.from_names("FCFS", "easy", THRESHOLD))
            base_bsld = compute_metrics(base, tau=TAU)["mean_bounded_slowdown"]
            rows.append(_summary(trace, job_set, "EASY-FCFS", base, base_bsld, TAU))
            for name in SCHEDULERS:
                inputs, kw = scheduler_inputs(name, wf, picked, 0.1)
                config = CoreConfig.from_names(
                    kw.pop("policy"), "easy", THRESHOLD, kw.pop("scan", None), **kw
                )
                rows.append(
                    _summary(trace, job_set, name, simulate(workload, config, inputs), base_bsld, TAU)
                )
            predicted = predict_walkforward(workload, make_predictor("easy++")).predicted
            order, correction = prediction_policy("easy++")
            config = CoreConfig.from_names("FCFS", "easy", THRESHOLD, order, prediction_correction=correction)
            easy = simulate(workload, config, SimInputs(estimate=predicted))
            rows.append(_summary(trace, job_set, "EASY++", easy, base_bsld, TAU))
            for r in rows[-5:]:
                print({k: r[k] for k in list(r)[:8]}, flush=True)
        out = HERE / "results" / job_set
        write_table(out, f"starvation_{args.label}", rows)


if __name__ == "__main__":
    main()
