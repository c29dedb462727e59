"""Table 6.6's extra column: rush's predictor-based scheduling (rush-Q) beside SPF-CI and FCFS-CI.

For each trace and job set, the runtime-quantile predictor's newest cached weekly walk-forward
(``estimates/run.py``, which must be of the predictor's default feature set; the full trace,
restricted to the published jobs for ``published``) and
the schedulers of :mod:`rush.studies.runtime_predictions_quantiles`; FCFS-CI and SPF-CI (the
classifier's, with their kill counts) from the runtime-class study's committed results, and
FCFS-CI's decisions job by job (for the schedulers held to its kill rate, and the classes of the
round-13 schedulers, which are SPF-CI's with the predictor for the order) from that study's cached
walk-forward of the same job set (computed and cached through ``sim/runtime_classes/run.py`` when
absent: minutes a trace), checked against the committed kills.
Writes ``results/<job set>/rush_q.{csv,md}`` (the rows of the traces and ``--schedulers`` run; the
file's other rows stay); with ``--class-head R`` (a rule of
``estimates/class_rules.py`` other than ``quantiles``: the classes from that rule's P(small), the
predicted runtimes still the quantiles') ``results/<job set>/rush_q_R.{csv,md}``.

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 10 \\
        python sim/runtime_predictions/rush_q.py [--traces KTH-SP2,...] [--job-set published|full|both] \\
        [--class-head blend] [--schedulers "rush-Q (FCFS-CI's kill rate),..."]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

HERE = Path(__file__).parent


def _table_module():
    """``run.py`` of this folder (the estimates' ``run.py`` shares its name)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("table_6_6_run", HERE / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _class_rules():
    """``estimates/class_rules.py`` (round 7's class rules over a cached walk-forward)."""
    import sys

    sys.path.insert(0, str(HERE / "estimates"))
    import class_rules

    return class_rules


def classifier_walkforward(trace: str, job_set: str):
    """The runtime-class study's cached live walk-forward of this job set (the one FCFS-CI and
    SPF-CI were measured with)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "runtime_classes_run", HERE.parent / "runtime_classes" / "run.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.cached_walkforward(trace, job_set, "live")[3]


def fcfs_ci_false_small(trace: str, job_set: str, n_full: int, rows: np.ndarray, cw=None) -> np.ndarray:
    """FCFS-CI's false smalls per job of the full trace (NaN where it made no decision, and
    outside the job set): the classifier's walk-forward ``cw`` of this job set
    (:func:`classifier_walkforward` when not given) at its idempotent threshold."""
    import numpy as np

    cw = classifier_walkforward(trace, job_set) if cw is None else cw
    if len(cw.runtime) != len(rows):
        raise SystemExit(
            f"{trace} {job_set}: the classifier's walk-forward has {len(cw.runtime)} jobs, not {len(rows)}"
        )
    out = np.full(n_full, np.nan)
    out[rows] = cw.for_idempotent().false_small()
    return out


def default_walkforward(trace: str, feature_set: str):
    """The newest cached walk-forward of ``estimates/run.py`` for this trace whose feature set is
    ``feature_set`` (other studies cache other sets in the same folder)."""
    from rush.studies.study_cache import cache_folder, load_entry

    cache = cache_folder("runtime_quantiles")
    for path in sorted(cache.glob(f"{trace}-*.pkl"), key=lambda p: p.stat().st_mtime, reverse=True):
        wf = load_entry(path)
        if getattr(wf, "feature_set", "base") == feature_set:
            print(f"{trace}: walk-forward {path}", flush=True)
            return wf
    raise SystemExit(
        f"{trace}: no cached walk-forward of feature set {feature_set!r} in {cache}; run "
        f"estimates/run.py --traces {trace} (its default is the predictor's) first"
    )


def _typed(value: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _with_other_traces(path: Path, rows: list[dict], traces: tuple[str, ...]) -> list[dict]:
    """``rows`` and the rows on disk (``path``) of the (trace, scheduler) pairs not run now, in
    ``traces``' order (a run of some traces or schedulers updates their rows, not the table)."""
    run = {(r["trace"], r["scheduler"]) for r in rows}
    kept = []
    if path.exists():
        with open(path) as fh:
            kept = [
                {k: _typed(v) for k, v in r.items()}
                for r in csv.DictReader(fh)
                if (r["trace"], r["scheduler"]) not in run
            ]
    order = {t: i for i, t in enumerate(traces)}
    return sorted(kept + rows, key=lambda r: order.get(r["trace"], len(order)))


def main() -> None:
    import numpy as np

    from rush.models.runtime_features import TimeBase
    from rush.models.runtime_quantiles_features import DEFAULT_FEATURE_SET, usable_history
    from rush.models.runtime_quantiles_walkforward import trace_jobs
    from rush.studies.arg_types import names, trace_specs
    from rush.studies.runtime_predictions_quantiles import (
        CLASSIFIER_SCHEDULERS,
        MATCHED_SCHEDULERS,
        SCHEDULERS,
        RowOptions,
        quantile_rows,
    )
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    table = _table_module()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=trace_specs, default=",".join(table.TRACES))
    parser.add_argument("--job-set", default="both", choices=("published", "full", "both"))
    parser.add_argument(
        "--class-head",
        default="quantiles",
        choices=_class_rules().RULES,
        help="a rule of estimates/class_rules.py",
    )
    # quantile_rows runs each with FCFS-CI's decisions and the classifier's walk-forward given
    parser.add_argument(
        "--schedulers",
        type=names((*SCHEDULERS, *MATCHED_SCHEDULERS, *CLASSIFIER_SCHEDULERS)),
        default=None,
        help="comma-separated names (default: every one); the others' rows stay",
    )
    args = parser.parse_args()
    suffix = "" if args.class_head == "quantiles" else f"_{args.class_head}"
    job_sets = ("published", "full") if args.job_set == "both" else (args.job_set,)
    schedulers = args.schedulers
    # Each trace's FCFS-CI row is its reference: refuse a trace without one before any is loaded.
    if unclassified := [
        f"{trace} ({job_set})"
        for job_set in job_sets
        for trace in args.traces
        if (trace, "FCFS") not in table.classification(job_set)
    ]:
        parser.error(
            f"--traces: no FCFS-CI row in sim/runtime_classes/results/<job set>/improvement.csv for "
            f"{', '.join(unclassified)}; run sim/runtime_classes/run.py for them first"
        )
    for job_set in job_sets:
        ci = table.classification(job_set)
        rows = []
        for trace in args.traces:
            trace_obj = load_trace(trace)
            workload = workload_from_trace(trace_obj)
            wf = default_walkforward(trace, DEFAULT_FEATURE_SET)
            if wf.end is None:  # cached before the walk-forward kept them: the same rule
                jobs = trace_jobs(workload, TimeBase.from_header(trace_obj.header))
                usable = usable_history(jobs.runtime, jobs.requested_time, jobs.end)
                wf.end, wf.submit = np.where(usable, jobs.end, np.inf), jobs.submit
            if args.class_head != "quantiles":
                wf = _class_rules().with_rule(wf, args.class_head)
            rows_of_set = np.flatnonzero(
                (workload.runtime > 0) & (workload.runtime < workload.requested_time)
            )
            rows_of_set = rows_of_set if job_set == "published" else np.arange(len(workload))
            cw = classifier_walkforward(trace, job_set)
            reference = fcfs_ci_false_small(trace, job_set, len(workload), rows_of_set, cw)
            committed = int(ci[(trace, "FCFS")]["kills"])
            if int(np.nansum(reference)) != committed:
                raise SystemExit(
                    f"{trace} {job_set}: the classifier's walk-forward has {int(np.nansum(reference))} "
                    f"idempotent false smalls, FCFS-CI's committed kills are {committed}: rerun "
                    "sim/runtime_classes/run.py"
                )
            found = quantile_rows(
                trace,
                job_set,
                workload,
                wf,
                RowOptions(reference_false_small=reference, names=schedulers, classifier=cw),
            )
            base = float(ci[(trace, "base")]["mean_bounded_slowdown"])
            for r in found:
                if abs(r["base_bsld"] - base) > 1e-6 * base:
                    raise SystemExit(
                        f"{trace} {job_set}: EASY-FCFS base {r['base_bsld']} is not the class study's {base}"
                    )
                fcfs, spf = ci[(trace, "FCFS")], ci[(trace, "SPF")]
                r["fcfs_ci_pct"] = float(fcfs["improvement_over_easy_fcfs_pct"])
                r["fcfs_ci_kills"] = int(fcfs["kills"])
                r["spf_ci_pct"] = float(spf["improvement_over_easy_fcfs_pct"])
                r["spf_ci_kills"] = int(spf["kills"])
                if r["scheduler"] == "SPF-CI (classifier)" and (
                    abs(r["improvement_over_easy_fcfs_pct"] - r["spf_ci_pct"]) > 1e-6
                    or r["false_small_kills"] != r["spf_ci_kills"]
                ):
                    raise SystemExit(
                        f"{trace} {job_set}: SPF-CI rerun from the classifier's walk-forward gives "
                        f"{r['improvement_over_easy_fcfs_pct']} ({r['false_small_kills']} kills), the committed "
                        f"{r['spf_ci_pct']} ({r['spf_ci_kills']}): rerun sim/runtime_classes/run.py"
                    )
                print(
                    {
                        k: r[k]
                        for k in (
                            "trace",
                            "job_set",
                            "scheduler",
                            "improvement_over_easy_fcfs_pct",
                            "false_small_kills",
                            "spf_ci_pct",
                            "fcfs_ci_kills",
                        )
                    },
                    flush=True,
                )
                rows.append(r)
        out = table.OUT / job_set
        out.mkdir(parents=True, exist_ok=True)
        rows = _with_other_traces(out / f"rush_q{suffix}.csv", rows, table.TRACES)
        columns = list(rows[0])
        with open(out / f"rush_q{suffix}.csv", "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += [
            "| " + " | ".join(f"{r[c]:.2f}" if isinstance(r[c], float) else str(r[c]) for c in columns) + " |"
            for r in rows
        ]
        (out / f"rush_q{suffix}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
