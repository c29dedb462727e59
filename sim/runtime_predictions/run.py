"""Table 6.6 of the thesis with rush: EASY++, Gaussier et al., FCFS-CI and SPF-CI.

For each trace (KTH-SP2, CTC-SP2, SDSC-BLUE, SDSC-SP2) and job set (``published``: jobs with
runtime <= 0 or >= the request dropped, the thesis's sizes; ``full``: the trace as rush reads
it): walk-forward runtime predictions of EASY++ and of Gaussier et al.'s regression, EASY
simulations (FCFS, threshold 200,000 s, tau 10 s; ``rush.studies.runtime_predictions``), and
the improvement of the cumulative bounded slowdown over EASY-FCFS. FCFS-CI and SPF-CI
(classification-idempotent) are read from the runtime-class study's committed results
(``sim/runtime_classes/results/<job set>/improvement.csv``, same simulator, same base: the
EASY-FCFS mean bounded slowdown is checked to be equal). Writes ``results/<job set>/``:

* ``table_6_6.md`` / ``.csv``: the table, published figures beside ours;
* ``schedulers.md`` / ``.csv``: every simulation (variants: backfill in FCFS order, correction
  to the request, no correction; SJBF on requests; runtime-clairvoyant SJBF);
* ``accuracy.md`` / ``.csv``: prediction accuracy per predictor;
* ``predicted_vs_real_<trace>.png``, ``cumulative_bsld_<trace>.png``; ``run.json``.

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 10 \\
        python sim/runtime_predictions/run.py [--traces KTH-SP2,...] [--job-set published|full|both] [--jobs 1]
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

from joblib import Parallel, delayed

from rush.studies.arg_types import count, names
from rush.studies.table_6_6 import TABLE_6_6
from rush.studies.tables import write_table

TRACES = ("KTH-SP2", "CTC-SP2", "SDSC-BLUE", "SDSC-SP2")
JOB_SETS = ("published", "full")
OUT = Path(__file__).parent / "results"
CLASSES = Path(__file__).parent.parent / "runtime_classes" / "results"
# Table 6.6 of 003_a2a26e2c92a971c9.txt, as published.
PUBLISHED = TABLE_6_6


def one(trace: str, job_set: str, out: Path):
    from rush.studies.plots.runtime_predictions import cumulative, scatter
    from rush.studies.runtime_predictions import run_trace

    done = run_trace(trace, job_set)
    scatter(trace, job_set, done.predictions, out)
    cumulative(trace, job_set, done.rows, out)
    accuracy = [
        {"trace": trace, "job_set": job_set, "predictor": name, "walkforward_seconds": p.seconds}
        | p.summary()
        for name, p in done.predictions.items()
    ]
    for r in done.rows:
        r.pop("cumulative")
    return done.rows, accuracy


def classification(job_set: str) -> dict[tuple[str, str], dict]:
    """(trace, policy) -> the runtime-class study's classification-idempotent row and its base."""
    path = CLASSES / job_set / "improvement.csv"
    rows = list(csv.DictReader(path.open()))
    out = {}
    for r in rows:
        if r["variant"] == "classification-idempotent":
            out[(r["trace"], r["policy"])] = r
        if r["variant"] == "base" and r["policy"] == "FCFS":
            out[(r["trace"], "base")] = r
    return out


def table_rows(rows: list[dict], job_set: str) -> list[dict]:
    classes = classification(job_set)
    out = []
    for trace in dict.fromkeys(r["trace"] for r in rows):
        mine = {r["scheduler"]: r for r in rows if r["trace"] == trace}
        base = mine["EASY-FCFS"]["mean_bounded_slowdown"]
        theirs = classes.get((trace, "base"))
        if theirs is not None and abs(float(theirs["mean_bounded_slowdown"]) - base) > 1e-6 * base:
            raise SystemExit(f"{trace}: EASY-FCFS differs from the runtime-class study's base; rerun it")
        thesis_easy, orig_easy, orig_gaussier, thesis_fcfs_ci, thesis_spf_ci = PUBLISHED[trace]

        def ci(policy: str, trace: str = trace) -> float | None:
            row = classes.get((trace, policy))
            return None if row is None else float(row["improvement_over_easy_fcfs_pct"])

        out.append(
            {
                "trace": trace,
                "jobs": mine["EASY-FCFS"]["jobs"],
                "EASY++": f"{mine['easy++']['improvement_over_easy_fcfs_pct']:.0f} ({thesis_easy} [{orig_easy}])",
                "Gaussier et al.": f"{mine['gaussier']['improvement_over_easy_fcfs_pct']:.0f} ([{orig_gaussier:02d}])",
                "FCFS-CI": f"{ci('FCFS'):.0f} ({thesis_fcfs_ci})" if ci("FCFS") is not None else "-",
                "SPF-CI": f"{ci('SPF'):.0f} ({thesis_spf_ci})" if ci("SPF") is not None else "-",
                "EASY-FCFS bsld": base,
                "easy++_pct": mine["easy++"]["improvement_over_easy_fcfs_pct"],
                "gaussier_pct": mine["gaussier"]["improvement_over_easy_fcfs_pct"],
                "fcfs_ci_pct": ci("FCFS"),
                "spf_ci_pct": ci("SPF"),
            }
        )
    return out


def run(traces: list[str], job_set: str, n_jobs: int) -> None:
    out = OUT / job_set
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    done = Parallel(n_jobs=n_jobs, verbose=5)(delayed(one)(t, job_set, out) for t in traces)
    rows = [r for batch, _ in done for r in batch]
    accuracy = [a for _, batch in done for a in batch]
    table = table_rows(rows, job_set)
    write_table(
        out,
        "table_6_6",
        table,
        ["trace", "jobs", "EASY++", "Gaussier et al.", "FCFS-CI", "SPF-CI", "EASY-FCFS bsld"],
    )
    with open(out / "table_6_6.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    write_table(
        out,
        "schedulers",
        rows,
        [
            "trace",
            "jobs",
            "scheduler",
            "backfill_policy",
            "correction",
            "mean_bounded_slowdown",
            "improvement_over_easy_fcfs_pct",
            "mean_wait",
            "utilization",
            "killed",
            "backfilled",
        ],
    )
    write_table(out, "accuracy", accuracy, list(accuracy[0]))
    (out / "run.json").write_text(
        json.dumps(
            {
                "traces": traces,
                "job_set": job_set,
                "seconds": time.time() - started,
                "command": f"python sim/runtime_predictions/run.py --traces {','.join(traces)} --job-set {job_set}",
            },
            indent=2,
        )
    )
    print(f"{job_set}: done in {time.time() - started:.0f} s; tables and plots in {out}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # Table 6.6's traces (PUBLISHED's)
    parser.add_argument("--traces", type=names(tuple(PUBLISHED)), default=",".join(TRACES))
    parser.add_argument("--job-set", choices=(*JOB_SETS, "both"), default="both")
    parser.add_argument("--jobs", type=count(1), default=1, help="parallel workers (joblib)")
    args = parser.parse_args()
    traces = list(args.traces)
    for job_set in JOB_SETS if args.job_set == "both" else (args.job_set,):
        run(traces, job_set, args.jobs)


if __name__ == "__main__":
    main()
