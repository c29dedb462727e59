"""Gaussier et al.'s regression learning online inside the replay, as their simulator ran it (round 24).

Table 6.6's Gaussier column refits an asymmetric ridge weekly on the log's finished jobs;
Gaussier, Glesser, Reis & Trystram (SC'15) updated their model at every completion of their
simulation by normalised adaptive gradient on their E-Loss, with features of the user's running
jobs (``SimInputs.online_prediction="gaussier-online"``, :mod:`rush.core.gaussier_online`; the
README's "Gaussier et al. learning online inside the replay" gives the reading). For each trace
and job set this runs EASY-FCFS and gaussier-online under SJBF with the stepwise correction
(Table 6.6's rules) and with correction to the request (their cross-validated triple's)
(``rush.studies.runtime_predictions.run_gaussier_online``). Writes ``results/<job set>/``:

* ``gaussier_online.md`` / ``.csv``: per trace, the improvement of the cumulative bounded
  slowdown over EASY-FCFS, %, beside our weekly Gaussier rows (``schedulers.csv``) and Gaussier
  et al.'s own figures;
* ``gaussier_online_runs.md`` / ``.csv``: every simulation with its prediction accuracy.

Rows of traces not run are kept from the committed files. EASY-FCFS must equal the committed
``schedulers.csv`` row of ``run.py`` (checked: the loop's change moves nothing else).

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 15 \\
        python sim/runtime_predictions/gaussier_online.py [--traces KTH-SP2,...] [--job-set published|full|both]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from rush.studies.arg_types import names
from rush.studies.table_6_6 import TABLE_6_6
from rush.studies.tables import in_trace_order, rows_not_rerun, write_table

TRACES = ("KTH-SP2", "CTC-SP2", "SDSC-BLUE", "SDSC-SP2")
JOB_SETS = ("published", "full")
OUT = Path(__file__).parent / "results"
# Table 6.6 of 003_a2a26e2c92a971c9.txt: Gaussier et al.'s own figures (the thesis has none).
PUBLISHED = {trace: row.gaussier_authors for trace, row in TABLE_6_6.items()}
SUMMARY = [
    "trace",
    "jobs",
    "Gaussier weekly",
    "Gaussier online",
    "online - weekly",
    "Gaussier weekly, correct to request",
    "Gaussier online, correct to request",
    "Gaussier et al.",
]
RUNS = [
    "trace",
    "jobs",
    "scheduler",
    "correction",
    "mean_bounded_slowdown",
    "improvement_over_easy_fcfs_pct",
    "mean_wait",
    "killed",
    "backfilled",
    "median_absolute_error",
    "underpredicted",
    "mean_accuracy",
    "predicted_1s",
    "predicted_request",
]


def committed(out: Path, trace: str) -> dict[str, dict]:
    """``run.py``'s committed rows of ``trace`` by scheduler."""
    path = out / "schedulers.csv"
    if not path.exists():
        return {}
    return {r["scheduler"]: r for r in csv.DictReader(path.open()) if r["trace"] == trace}


def summary(rows: list[dict], weekly: dict[str, dict]) -> dict:
    by = {r["scheduler"]: r["improvement_over_easy_fcfs_pct"] for r in rows}
    trace = rows[0]["trace"]
    online, online_req = by["gaussier-online"], by["gaussier-online (correct-to-request)"]
    week = float(weekly["gaussier"]["improvement_over_easy_fcfs_pct"]) if weekly else float("nan")
    week_req = (
        float(weekly["gaussier (correct-to-request)"]["improvement_over_easy_fcfs_pct"])
        if weekly
        else float("nan")
    )
    return {
        "trace": trace,
        "jobs": rows[0]["jobs"],
        "Gaussier weekly": f"{week:.2f}",
        "Gaussier online": f"{online:.2f}",
        "online - weekly": f"{online - week:+.2f}",
        "Gaussier weekly, correct to request": f"{week_req:.2f}",
        "Gaussier online, correct to request": f"{online_req:.2f}",
        "Gaussier et al.": f"[{PUBLISHED[trace]:02d}]",
    }


def run(traces: list[str], job_set: str) -> None:
    from rush.studies.runtime_predictions import run_gaussier_online

    out = OUT / job_set
    out.mkdir(parents=True, exist_ok=True)
    runs, table = (
        rows_not_rerun(out / "gaussier_online_runs.csv", traces, numbers=True),
        rows_not_rerun(out / "gaussier_online.csv", traces),
    )
    for trace in traces:
        started = time.time()
        rows = run_gaussier_online(trace, job_set)
        weekly = committed(out, trace)
        base = rows[0]["mean_bounded_slowdown"]
        if weekly and abs(base - float(weekly["EASY-FCFS"]["mean_bounded_slowdown"])) > 1e-9 * base:
            logged = weekly["EASY-FCFS"]["mean_bounded_slowdown"]
            sys.exit(f"{trace} ({job_set}): EASY-FCFS gives {base}, run.py committed {logged}")
        runs += rows
        table.append(summary(rows, weekly))
        print(f"{trace} {job_set}: {table[-1]} ({time.time() - started:.0f} s)", flush=True)
    runs = in_trace_order(runs, TRACES)
    table = in_trace_order(table, TRACES)
    write_table(out, "gaussier_online_runs", runs, RUNS)
    write_table(out, "gaussier_online", table, SUMMARY)


PARTS = ["trace", "jobs", "Gaussier weekly", "online", "without running features", "with the ridge loss"]
PARTS += ["online - without running", "online - ridge loss", "Gaussier et al."]


def decompose(traces: list[str], job_set: str) -> None:
    """D-g1 (post hoc): gaussier-online beside its variants without the running-job features and
    with the weekly ridge's loss; ``results/<job set>/gaussier_online_parts.md`` (rows of traces
    not run kept)."""
    from rush.studies.runtime_predictions import run_gaussier_online

    out = OUT / job_set
    runs, table = (
        rows_not_rerun(out / "gaussier_online_parts_runs.csv", traces, numbers=True),
        rows_not_rerun(out / "gaussier_online_parts.csv", traces),
    )
    for trace in traces:
        rows = run_gaussier_online(trace, job_set, parts=True)
        weekly = committed(out, trace)
        by = {r["scheduler"]: r["improvement_over_easy_fcfs_pct"] for r in rows}
        online = by["gaussier-online"]
        bare, ridge = by["gaussier-online (no running features)"], by["gaussier-online (ridge loss)"]
        runs += rows
        table.append(
            {
                "trace": trace,
                "jobs": rows[0]["jobs"],
                "Gaussier weekly": f"{float(weekly['gaussier']['improvement_over_easy_fcfs_pct']):.2f}",
                "online": f"{online:.2f}",
                "without running features": f"{bare:.2f}",
                "with the ridge loss": f"{ridge:.2f}",
                "online - without running": f"{online - bare:+.2f}",
                "online - ridge loss": f"{online - ridge:+.2f}",
                "Gaussier et al.": f"[{PUBLISHED[trace]:02d}]",
            }
        )
        print(table[-1], flush=True)
    runs = in_trace_order(runs, TRACES)
    table = in_trace_order(table, TRACES)
    write_table(out, "gaussier_online_parts_runs", runs, RUNS)
    write_table(out, "gaussier_online_parts", table, PARTS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=names(TRACES), default=",".join(TRACES))
    parser.add_argument("--job-set", default="published", choices=[*JOB_SETS, "both"])
    parser.add_argument(
        "--decompose",
        action="store_true",
        help="D-g1 (post hoc): the variants without the running-job features and with the ridge loss",
    )
    args = parser.parse_args(argv)
    traces = list(args.traces)
    for job_set in JOB_SETS if args.job_set == "both" else [args.job_set]:
        if args.decompose:
            decompose(traces, job_set)
        else:
            run(traces, job_set)


if __name__ == "__main__":
    main()
