"""Live start estimates on issue 29's window: rush's quantile model beside each RJMS's own.

    python sim/runtime_predictions/live_windows.py            # the table from the committed runs
    python sim/runtime_predictions/live_windows.py --run      # first the runs whose CSV is missing
    python sim/runtime_predictions/live_windows.py --run --rjms flux,fluxion   # only those, again

The window is SDSC-SP2 jobs 10800-10879 at K = 10 on 32 one-CPU nodes (Slurm 25.11's 32 nodes;
on Flux 32 brokers of one core, fake nodes through resource.config). Each run is one
``sim/start_estimates/run_live.py KIND ... runtime-quantiles`` (that script starts the cluster
and runs ``rush replay --estimates``; the model is trained once, on the jobs finished before the
window, times divided by K, and shared by the runs):

* ``slurm``: ``slurm-nodes``, rush's daemon in priority mode beside ``squeue --start``
  (``slurm-burst``: the earlier run of it, whose arrivals came as a burst, kept as a reference);
* ``flux``: ``flux-nodes``, rush's daemon (jobtap priority plugin) beside sched-backfill's
  ``t_estimate``;
* ``fluxion``: ``fluxion-nodes``, the same beside Fluxion's (queue-policy easy, lonodex);
* ``rush-module``: ``flux-rush-nodes``, rush's Flux scheduler module is the scheduler: its
  ``t_estimate`` annotations are rush's estimates (no other estimator in that run).

The table (``results/live_windows.md`` and ``.csv``): per run, estimator and wait class,
coverage (share of the jobs with an estimate at or after submit), mean and median absolute
error at submit (trace minutes), share within 10 % of the wait and within 1 minute, and the
mean absolute error halfway through the wait; then, for runs with two estimators, the same on
the jobs both estimated. Computed with rush.studies.estimate_accuracy.accuracy from each run's
CSV (the replay's per-job predictions), so an older run's JSON without the median still counts.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from rush.studies.estimate_accuracy import WAIT_CLASSES, accuracy  # noqa: E402

TRACE, WINDOW, SPEEDUP, VARIANT = "SDSC-SP2-1998-4.2-cln.swf.gz", "10800:80", "10", "runtime-quantiles"
# --rjms name -> (run_live.py kind, what ran)
RUNS = {
    "slurm": ("slurm-nodes", "Slurm 25.11, 32 nodes; rush's daemon (priority mode)"),
    # The first Slurm run (before the planner warmed its predictor at load): its first cycle
    # took 218 s and 79 jobs were submitted in a burst; a reference, not rerun by --run.
    "slurm-burst": ("slurm-nodes", "the same, the earlier run whose arrivals were a burst (reference)"),
    "flux": ("flux-nodes", "Flux, sched-backfill, 32 brokers; rush's daemon (jobtap priority plugin)"),
    "fluxion": ("fluxion-nodes", "Flux, Fluxion easy/lonodex, 32 brokers; rush's daemon (jobtap plugin)"),
    "rush-module": ("flux-rush-nodes", "Flux, rush's scheduler module, 32 brokers (its t_estimate)"),
}
RESULTS = ROOT / "sim" / "start_estimates" / "results"
OWN = {"slurm": "squeue --start", "flux": "sched-backfill", "fluxion": "Fluxion", "rush": "rush"}


def csv_path(kind: str, rjms: str = "") -> Path:
    suffix = "-burst" if rjms == "slurm-burst" else ""
    return (
        RESULTS / f"{kind}-{TRACE.split('-')[0]}-{WINDOW.replace(':', '_')}-K{SPEEDUP}-{VARIANT}{suffix}.csv"
    )


def read_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for key in ("wait", "error", "halfway_error"):
            r[key] = float(r[key]) if r[key] != "" else None
    return rows


def measures(rows: list[dict]) -> dict:
    """Coverage and errors of one estimator on these jobs (trace seconds)."""
    waits = [r["wait"] for r in rows]
    first = accuracy([r["error"] for r in rows], waits)
    half = accuracy([r["halfway_error"] for r in rows], waits)
    return {**first, "halfway_mean_abs_error": half["mean_abs_error"], "halfway_coverage": half["coverage"]}


def table_rows(rjms: str, rows: list[dict]) -> list[dict]:
    """Per estimator and wait class (the waiting ones: beyond the timing granularity), then the
    same on the jobs every estimator of the run estimated at submit ("both")."""
    estimators = sorted({r["estimator"] for r in rows}, key=lambda n: (n != "rush", n))
    out = []
    for cls in WAIT_CLASSES[1:]:
        jobs = {r["trace_job_id"] for r in rows if r["wait_class"] == cls}
        if not jobs:
            continue
        both = {
            j
            for j in jobs
            if all(r["error"] is not None for r in rows if r["trace_job_id"] == j and r["wait_class"] == cls)
        }
        for subset, ids in (("all", jobs), ("both", both)):
            if subset == "both" and (len(estimators) < 2 or not ids):
                continue
            for name in estimators:
                mine = [r for r in rows if r["estimator"] == name and r["trace_job_id"] in ids]
                out.append({"run": rjms, "estimator": OWN.get(name, name), "wait": cls, "jobs_of": subset,
                            **measures(mine)})  # fmt: skip
    return out


def _min(v: float | None) -> str:
    return "-" if v is None else f"{v / 60:.1f}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.0f} %"


def markdown(table: list[dict], missing: list[str]) -> str:
    lines = [
        f"# Live start estimates, {TRACE} jobs {WINDOW}, K = {SPEEDUP}, rush's quantile model",
        "",
        "Written by `python sim/runtime_predictions/live_windows.py` from "
        "`sim/start_estimates/results/*-SDSC-10800_80-K10-runtime-quantiles.csv`. Errors in trace "
        "minutes, estimate at submit (the first at or after it) against the real start; halfway: "
        "the last estimate made by submit + wait/2. `jobs of`: all the class's jobs, or only those "
        "every estimator of the run estimated at submit.",
        "",
        "| run | estimator | wait | jobs of | jobs | coverage | MAE | median | within 10 % "
        "| within 1 min | MAE halfway (coverage) |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for t in table:
        lines.append(
            f"| {t['run']} | {t['estimator']} | {t['wait']} | {t['jobs_of']} | {t['jobs']} | "
            f"{_pct(t['coverage'])} | {_min(t['mean_abs_error'])} | {_min(t['median_abs_error'])} | "
            f"{_pct(t['within_10pct'])} | {_pct(t['within_1min'])} | "
            f"{_min(t['halfway_mean_abs_error'])} ({_pct(t['halfway_coverage'])}) |"
        )
    lines += ["", "Runs:", ""]
    for rjms, (kind, what) in RUNS.items():
        state = "not run" if rjms in missing else f"`{csv_path(kind, rjms).relative_to(ROOT)}`"
        lines.append(f"* `{rjms}`: {what}: {state}")
    return "\n".join(lines) + "\n"


def run(selected: list[str], again: bool) -> int:
    """run_live.py for each selected run (missing ones only unless ``again``), one at a time,
    sharing one trained model."""
    model = Path(tempfile.mkdtemp(prefix="rush-live-windows-")) / "quantiles.joblib"
    for rjms in selected:
        kind = RUNS[rjms][0]
        if rjms == "slurm-burst":
            print("live window slurm-burst: a reference run of earlier code, not rerun", file=sys.stderr)
            continue
        if csv_path(kind).exists() and not again:
            continue
        argv = [sys.executable, str(ROOT / "sim" / "start_estimates" / "run_live.py"), kind, TRACE, WINDOW]
        argv += [SPEEDUP, VARIANT, str(model)]
        print(f"live window: {' '.join(argv[1:])}", flush=True)
        code = subprocess.run(argv, cwd=ROOT).returncode
        if code:
            print(f"live window {rjms}: run_live.py exited {code}", file=sys.stderr)
            return code
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="run the live windows first (missing CSVs)")
    parser.add_argument("--rjms", default=",".join(RUNS), help=f"runs, comma-separated: {', '.join(RUNS)}")
    args = parser.parse_args(argv)
    selected = [name.strip() for name in args.rjms.split(",") if name.strip()]
    unknown = [name for name in selected if name not in RUNS]
    if unknown:
        print(f"--rjms: unknown run(s) {', '.join(unknown)}; choose from {', '.join(RUNS)}", file=sys.stderr)
        return 2
    if args.run and (code := run(selected, again=args.rjms != ",".join(RUNS))):
        return code
    table, missing = [], []
    for rjms in RUNS:
        path = csv_path(RUNS[rjms][0], rjms)
        if not path.exists():
            missing.append(rjms)
            continue
        table += table_rows(rjms, read_rows(path))
    out = HERE / "results" / "live_windows"
    text = markdown(table, missing)
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]) if table else ["run"])
        writer.writeheader()
        writer.writerows(table)
    out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
