"""EASY++ with its history from the replay's own completions, beside the log's (round 23).

Table 6.6's EASY++ column predicts each job from its user's last two runs that ended *in the
log* before its submission; Tsafrir, Etsion & Feitelson (TPDS 2007) predicted from the runs
that ended *in their simulation*. For each trace and job set this runs EASY-FCFS, EASY++ on the
log's history and EASY++ online (``SimInputs.online_prediction="easy++-online"``: the core's
rule called by the simulator's loop at each arrival, its state updated at each finished run),
under the same scheduling rules (SJBF backfilling, stepwise correction, kills at the request;
``rush.studies.runtime_predictions.run_online``). Writes ``results/<job set>/``:

* ``easy_online.md`` / ``.csv``: per trace, the improvement of the cumulative bounded slowdown
  over EASY-FCFS, %, of both histories beside the thesis's and Tsafrir et al.'s figures;
* ``easy_online_runs.md`` / ``.csv``: every simulation with its prediction accuracy.

Rows of traces not run are kept from the committed files. The log-history run must equal the
committed ``schedulers.csv`` row of ``run.py`` (checked: the loop's change moves nothing else).

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 15 \\
        python sim/runtime_predictions/easy_online.py [--traces KTH-SP2,...] [--job-set published|full|both]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from rush.studies.arg_types import count, names
from rush.studies.table_6_6 import TABLE_6_6
from rush.studies.tables import in_trace_order, rows_not_rerun, write_table

TRACES = ("KTH-SP2", "CTC-SP2", "SDSC-BLUE", "SDSC-SP2")
JOB_SETS = ("published", "full")
OUT = Path(__file__).parent / "results"
# Table 6.6 of 003_a2a26e2c92a971c9.txt: EASY++ (the thesis's, Tsafrir et al.'s own).
PUBLISHED = {trace: (row.easy_pp_thesis, row.easy_pp_authors) for trace, row in TABLE_6_6.items()}
SUMMARY = ["trace", "jobs", "EASY++ log history", "EASY++ online", "online - log", "thesis", "Tsafrir et al."]
RUNS = [
    "trace",
    "jobs",
    "scheduler",
    "mean_bounded_slowdown",
    "improvement_over_easy_fcfs_pct",
    "mean_wait",
    "log_mean_wait",
    "killed",
    "backfilled",
    "median_absolute_error",
    "underpredicted",
    "mean_accuracy",
    "predicted_as_log_history",
]


def committed_easy_pp(out: Path, trace: str) -> float | None:
    """``run.py``'s committed mean bounded slowdown of EASY++ (log history) on ``trace``."""
    path = out / "schedulers.csv"
    if not path.exists():
        return None
    for r in csv.DictReader(path.open()):
        if r["trace"] == trace and r["scheduler"] == "easy++":
            return float(r["mean_bounded_slowdown"])
    return None


def summary(rows: list[dict]) -> dict:
    by = {r["scheduler"]: r for r in rows}
    trace = rows[0]["trace"]
    log, online = (by[k]["improvement_over_easy_fcfs_pct"] for k in ("easy++", "easy++-online"))
    thesis, theirs = PUBLISHED[trace]
    return {
        "trace": trace,
        "jobs": rows[0]["jobs"],
        "EASY++ log history": f"{log:.2f}",
        "EASY++ online": f"{online:.2f}",
        "online - log": f"{online - log:+.2f}",
        "thesis": thesis,
        "Tsafrir et al.": f"[{theirs}]",
    }


def run(traces: list[str], job_set: str) -> None:
    from rush.studies.runtime_predictions import run_online

    out = OUT / job_set
    out.mkdir(parents=True, exist_ok=True)
    runs, table = (
        rows_not_rerun(out / "easy_online_runs.csv", traces, numbers=True),
        rows_not_rerun(out / "easy_online.csv", traces),
    )
    for trace in traces:
        started = time.time()
        rows = run_online(trace, job_set)
        committed = committed_easy_pp(out, trace)
        mine = next(r["mean_bounded_slowdown"] for r in rows if r["scheduler"] == "easy++")
        if committed is not None and abs(mine - committed) > 1e-9 * committed:
            sys.exit(
                f"{trace} ({job_set}): EASY++ on the log's history gives {mine}, run.py committed {committed}"
            )
        runs += rows
        table.append(summary(rows))
        print(f"{trace} {job_set}: {table[-1]} ({time.time() - started:.0f} s)", flush=True)
    runs = in_trace_order(runs, TRACES)
    table = in_trace_order(table, TRACES)
    write_table(out, "easy_online_runs", runs, RUNS)
    write_table(out, "easy_online", table, SUMMARY)


def jitter(traces: list[str], job_set: str, seeds: int) -> None:
    """D-on1 (post hoc): EASY++ on the log's history under information-free jitters, seeds 1..N;
    ``results/<job set>/easy_online_jitter.md``: per trace, min, max and sd of the figure beside
    the online history's difference (rows of traces not run kept)."""
    import statistics

    from rush.studies.runtime_predictions import jittered_easy_pp

    out = OUT / job_set
    table = rows_not_rerun(out / "easy_online_jitter.csv", traces)
    online = {r["trace"]: r for r in csv.DictReader((out / "easy_online.csv").open())}
    for trace in traces:
        figures = [
            r["improvement_over_easy_fcfs_pct"]
            for r in jittered_easy_pp(trace, job_set, list(range(1, seeds + 1)))
        ]
        log = float(online[trace]["EASY++ log history"])
        table.append(
            {
                "trace": trace,
                "seeds": seeds,
                "log history": f"{log:.2f}",
                "jitter min - log": f"{min(figures) - log:+.2f}",
                "jitter max - log": f"{max(figures) - log:+.2f}",
                "jitter mean - log": f"{statistics.mean(figures) - log:+.2f}",
                "jitter sd": f"{statistics.stdev(figures):.2f}",
                "online - log": online[trace]["online - log"],
            }
        )
        print(table[-1], flush=True)
    table = in_trace_order(table, TRACES)
    write_table(out, "easy_online_jitter", table, list(table[-1]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=names(TRACES), default=",".join(TRACES))
    parser.add_argument("--job-set", default="published", choices=[*JOB_SETS, "both"])
    parser.add_argument(
        "--jitter-seeds",
        type=count(0),
        default=0,
        help="D-on1 (post hoc): the jitter runs instead, seeds 1..N (>= 2)",
    )
    args = parser.parse_args(argv)
    if args.jitter_seeds == 1:
        parser.error("--jitter-seeds: give 0 (the main runs) or at least 2 seeds")
    traces = list(args.traces)
    for job_set in JOB_SETS if args.job_set == "both" else [args.job_set]:
        if args.jitter_seeds:
            jitter(traces, job_set, args.jitter_seeds)
        else:
            run(traces, job_set)


if __name__ == "__main__":
    main()
