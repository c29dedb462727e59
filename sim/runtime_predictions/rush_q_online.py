"""rush's quantile predictor learning from the replay's own schedule (round 27): the fixed point
σ = SIM(WF(σ)) iterated from the committed log-history run.

Per trace, job set (``--job-set published``, the default and round 27's, or ``full``, round
28) and scheduler: iteration 1 is the committed run (the log walk-forward, the newest cached one
of the predictor's default feature set as ``rush_q.py`` takes it; checked against the job set's
committed ``results/<job set>/rush_q.csv`` row to the last digit), then up to ``--iterations``
online ones (:func:`rush.studies.runtime_quantiles_online.online_iterates`). The SPF-CI rules
take the runtime classifier's walk-forward of the same job set, and the verdicts the same job
set's schedule noise (``results/<job set>/online_noise.csv``). A walk-forward is started only if
the last one's wall time (x1.2) still fits before ``--until`` (UTC HH:MM); a trace not reached
is listed as cut. Writes ``results/<job set>/``:

* ``rush_q_online_iterations.{csv,md}``: every run, with what its inputs changed from the
  previous iteration's and, on each trace's last run, what still differs from the inputs its own
  schedule gives (``check_*``: converged, the exact prefix's share of the jobs);
* ``rush_q_online.{csv,md}``: per trace and scheduler, the log-history figure, the online
  iterates, their mean and range, SPF-CI (ours and the thesis's) and the README's verdicts;
* ``rush_q_online.png``: the figure of every iteration by trace, beside SPF-CI's.

Rows of (trace, scheduler) pairs not run are kept. ``--out NAME`` writes ``NAME_iterations`` and
``NAME`` instead (a longer chain beside the one of record; the verdict columns are then computed
the same way but are not the README's verdicts of record).

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 19 \\
        python sim/runtime_predictions/rush_q_online.py [--job-set published|full] [--traces KTH-SP2,...] \\
        [--schedulers "rush-Q,SPF-CI one step where confident"] [--iterations 3] [--until 19:15] \\
        [--out rush_q_online]
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import importlib.util
import sys
import time
from pathlib import Path

from rush.studies.arg_types import count, names

HERE = Path(__file__).parent
RESULTS = HERE / "results"
JOB_SETS = ("published", "full")  # each reads and writes its own results/<job set>/
TRACES = ("KTH-SP2", "CTC-SP2", "SDSC-SP2", "SDSC-BLUE")  # the order fixed in round 27's design
MARGIN = 1.2  # a walk-forward is started if 1.2 x the last one's wall time fits before --until
ITERATION_COLUMNS = (
    "trace",
    "scheduler",
    "iteration",
    "improvement_over_easy_fcfs_pct",
    "false_small_kills",
    "mean_bounded_slowdown",
    "within_factor_two",
    "walkforward_seconds",
    "weeks_refitted",
    "from_previous_rows_differ",
    "from_previous_weeks_differ",
    "from_previous_first_week",
    "from_previous_exact_share",
    "from_previous_predictions_differ",
    "stopped",
    "check_converged",
    "check_rows_differ",
    "check_weeks_differ",
    "check_weeks",
    "check_first_week",
    "check_exact_share",
)


def _script(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def results_dir(job_set: str) -> Path:
    """``results/<job set>/``: where a job set's committed rows and noise are read and its
    tables written."""
    if job_set not in JOB_SETS:
        raise ValueError(f"job set {job_set!r}: choose from {', '.join(JOB_SETS)}")
    return RESULTS / job_set


def yardstick(trace: str, job_set: str = "published") -> float:
    """The job set's schedule noise on ``trace`` (round 26's, and round 27's for the full set):
    the larger sd of easy++-online and gaussier-online."""
    path = results_dir(job_set) / "online_noise.csv"
    with open(path, newline="") as fh:
        sds = [float(r["jitter sd"]) for r in csv.DictReader(fh) if r["trace"] == trace]
    if not sds:
        raise SystemExit(f"{trace}: no schedule noise in {path}")
    return max(sds)


def _committed_rows(trace: str, scheduler: str, job_set: str) -> list[dict]:
    with open(results_dir(job_set) / "rush_q.csv", newline="") as fh:
        return [r for r in csv.DictReader(fh) if r["trace"] == trace and r["scheduler"] == scheduler]


def has_committed_row(trace: str, scheduler: str, job_set: str = "published") -> bool:
    return bool(_committed_rows(trace, scheduler, job_set))


def committed_row(trace: str, scheduler: str, job_set: str = "published") -> dict:
    if rows := _committed_rows(trace, scheduler, job_set):
        return rows[0]
    raise SystemExit(f"{trace}: no committed {scheduler!r} row in results/{job_set}/rush_q.csv")


def summary(trace: str, scheduler: str, runs: list[dict], job_set: str = "published") -> dict:
    """One (trace, scheduler) line of ``rush_q_online``: figures and round 27's verdicts, against
    the job set's committed SPF-CI and schedule noise."""
    from rush.studies.table_6_6 import TABLE_6_6

    log, online = runs[0], runs[1:]
    sd = yardstick(trace, job_set)
    figures = [r["improvement_over_easy_fcfs_pct"] for r in online]
    mean = sum(figures) / len(figures) if figures else float("nan")
    gaps = [f - log["improvement_over_easy_fcfs_pct"] for f in figures]
    last = runs[-1]
    committed = committed_row(trace, scheduler, job_set)
    out = {
        "trace": trace,
        "scheduler": scheduler,
        "log history (committed)": log["improvement_over_easy_fcfs_pct"],
        "online iterates": " / ".join(f"{f:.2f}" for f in figures) or "-",
        "online mean": mean,
        "online mean - log": mean - log["improvement_over_easy_fcfs_pct"],
        "online range": max(figures) - min(figures) if figures else float("nan"),
        "sd (round 26)": sd,
        "kills log / online": " / ".join(str(r["false_small_kills"]) for r in runs),
        "factor-2 share log -> last": f"{log['within_factor_two']:.3f} -> {last['within_factor_two']:.3f}",
        "stopped by": last.get("stopped", "-"),
        "converged": bool(last.get("check_converged")),
        "exact prefix share": last.get("check_exact_share"),
        "jobs / weeks still differing": f"{last.get('check_rows_differ')} / {last.get('check_weeks_differ')}",
        "SPF-CI (ours)": float(committed["spf_ci_pct"]),
        "SPF-CI (thesis)": TABLE_6_6[trace].spf_ci,
    }
    out["HQ1 (not converged, prefix < 10 %)"] = (
        "holds" if not out["converged"] and (out["exact prefix share"] or 0) < 0.10 else "refuted"
    )
    within = (
        bool(gaps)
        and all(abs(g) <= 2 * sd for g in gaps)
        and abs(mean - out["log history (committed)"]) <= sd
    )
    out["HQ2 (each within 2 sd, mean within 1 sd)"] = "holds" if within else ("refuted" if gaps else "-")
    out["HQ3 (range <= 2 sd)"] = (
        "-" if len(figures) < 2 else ("holds" if out["online range"] <= 2 * sd else "refuted")
    )
    share_move = abs(last["within_factor_two"] - log["within_factor_two"])
    out["HQ4 (factor-2 share moves <= 2 points)"] = (
        "-" if not figures else ("holds" if share_move <= 0.02 else "refuted")
    )
    return out


def _kept(path: Path, pairs: set[tuple[str, str]]) -> list[dict]:
    from rush.studies.tables import csv_value

    if not path.exists():
        return []
    with open(path, newline="") as fh:
        return [
            {k: csv_value(v) for k, v in r.items()}
            for r in csv.DictReader(fh)
            if (r["trace"], r["scheduler"]) not in pairs
        ]


def write(
    runs: dict[tuple[str, str], list[dict]], name: str = "rush_q_online", job_set: str = "published"
) -> None:
    from rush.studies.tables import in_trace_order, write_table

    out = results_dir(job_set)
    pairs = set(runs)
    every = in_trace_order(
        _kept(out / f"{name}_iterations.csv", pairs) + [r for rs in runs.values() for r in rs], TRACES
    )
    write_table(out, f"{name}_iterations", every, ITERATION_COLUMNS)
    from rush.studies.plots.runtime_quantiles import plot_online_iterates
    from rush.studies.table_6_6 import TABLE_6_6

    spf_ci = {
        t: (float(committed_row(t, "rush-Q", job_set)["spf_ci_pct"]), TABLE_6_6[t].spf_ci)
        for t in dict.fromkeys(r["trace"] for r in every)
    }
    plot_online_iterates(every, spf_ci, out, name)
    lines = [summary(t, s, rs, job_set) for (t, s), rs in runs.items()]
    lines = in_trace_order(_kept(out / f"{name}.csv", pairs) + lines, TRACES)
    write_table(out, name, lines, list(lines[0]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--job-set", default="published", choices=JOB_SETS)
    parser.add_argument("--traces", type=names(TRACES), default=",".join(TRACES))
    parser.add_argument("--schedulers", type=names(), default="rush-Q")
    parser.add_argument("--iterations", type=count(1), default=3)
    parser.add_argument("--until", default=None, help="UTC HH:MM: no walk-forward that would end later")
    parser.add_argument("--out", default="rush_q_online", help="the tables' file stem (results/<job set>/)")
    args = parser.parse_args(argv)
    traces, schedulers = list(args.traces), list(args.schedulers)
    # Each run's first iterate is checked against its committed row: refuse a missing one
    # before any trace is loaded.
    job_set = args.job_set
    if missing := [f"{t} {s!r}" for t in traces for s in schedulers if not has_committed_row(t, s, job_set)]:
        parser.error(
            f"--schedulers: no committed row in results/{job_set}/rush_q.csv for {', '.join(missing)}"
        )
    if not args.out.isidentifier():
        parser.error("--out must be a file stem (letters, digits, underscores)")
    until = None
    if args.until:
        try:
            clock = dt.datetime.strptime(args.until, "%H:%M")
        except ValueError:
            parser.error(f"--until must be a UTC time HH:MM, not {args.until!r}")
        now = dt.datetime.now(dt.UTC)
        until = now.replace(hour=clock.hour, minute=clock.minute, second=0, microsecond=0).timestamp()
    from rush.models.runtime_quantiles_features import DEFAULT_FEATURE_SET
    from rush.studies.runtime_predictions_quantiles import CLASSIFIER_SCHEDULERS, RowOptions
    from rush.studies.runtime_quantiles_online import OnlineSetup, online_iterates
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    rush_q = _script("rush_q", HERE / "rush_q.py")
    runs: dict[tuple[str, str], list[dict]] = {}
    cut = []
    for trace in traces:
        trace_obj = load_trace(trace)
        workload = workload_from_trace(trace_obj)
        log_wf = rush_q.default_walkforward(trace, DEFAULT_FEATURE_SET)
        for scheduler in schedulers:
            if until is not None and time.time() + MARGIN * log_wf.seconds > until:
                cut.append(f"{trace} {scheduler}")
                continue
            options = RowOptions(
                names=(scheduler,),
                classifier=rush_q.classifier_walkforward(trace, job_set)
                if scheduler in CLASSIFIER_SCHEDULERS
                else None,
            )
            setup = OnlineSetup(trace, workload, trace_obj.header, scheduler, options, job_set)
            committed = committed_row(trace, scheduler, job_set)

            def keep_going(seconds: float) -> bool:
                return until is None or time.time() + MARGIN * seconds <= until

            for row in online_iterates(setup, log_wf, args.iterations, keep_going):
                if row["iteration"] == 1 and (
                    repr(row["improvement_over_easy_fcfs_pct"]) != committed["improvement_over_easy_fcfs_pct"]
                    or str(row["false_small_kills"]) != committed["false_small_kills"]
                ):
                    raise SystemExit(
                        f"{trace} {job_set} {scheduler}: the log-history run gives {row['improvement_over_easy_fcfs_pct']!r} "
                        f"({row['false_small_kills']} kills), committed {committed['improvement_over_easy_fcfs_pct']} "
                        f"({committed['false_small_kills']}): not the committed walk-forward"
                    )
                print(
                    {k: row.get(k) for k in ITERATION_COLUMNS if k in row},
                    time.strftime("%H:%M:%S", time.gmtime()),
                    flush=True,
                )
                runs.setdefault((trace, scheduler), []).append(row)
                write(runs, args.out, job_set)
    if cut:
        print("cut (time):", ", ".join(cut), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
