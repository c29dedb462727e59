"""Live start estimates on issue 29's windows: rush's quantile model beside each RJMS's own.

    python sim/runtime_predictions/live_windows.py            # the tables from the committed runs
    python sim/runtime_predictions/live_windows.py --run      # first the runs whose CSV is missing
    python sim/runtime_predictions/live_windows.py --run --window CTC --rjms flux,fluxion   # those, again
    python sim/runtime_predictions/live_windows.py --run ... --models DIR   # the windows' models kept in DIR
    python sim/runtime_predictions/live_windows.py --choose   # the windows the rule picks (simulator only)

Windows (``WINDOWS``), each on 32 one-CPU nodes (Slurm 25.11's 32 nodes; on Flux 32 brokers of
one core, fake nodes through resource.config):

* ``SDSC``: SDSC-SP2 jobs 10800-10879 at K = 10 (round 10's window; no wait over an hour);
* ``CTC``, ``BLUE``, ``KTH``: waits over an hour, chosen by the rule of
  :mod:`rush.studies.live_window_choice` (fixed before any estimate was looked at): from half of
  the trace's jobs, the first window of 60 jobs, every 10 jobs, whose simulated FCFS + EASY
  replay at K = 60 on 32 CPUs has at least 10 jobs waiting over an hour, a longest run of at
  most 360 wall s and a makespan of at most 420 wall s.
* round 16 (a labelled protocol change for the head-only estimators, ``CANDIDATES``): CTC-SP2
  again, by the same rule with Flux's whole-second limits and, further, at least 5 of the waits
  over an hour spent at least 2 wall s at the blocked head of the simulated FCFS queue (the only
  job sched-backfill and Fluxion estimate). No CTC-SP2 window qualifies (``--choose`` says so), so
  there is no such window to run; 44051:60 has 1 such job.

Each run is one ``sim/start_estimates/run_live.py KIND TRACE WINDOW K runtime-quantiles MODEL``
(that script starts the cluster and runs ``rush replay --estimates``; the model is trained once
per window, on the jobs finished before it, times divided by K, and shared by its runs):

* ``slurm``: ``slurm-nodes``, rush's daemon in priority mode beside ``squeue --start``
  (``slurm-burst``, SDSC only: the earlier run whose arrivals came as a burst, a reference);
* ``flux``: ``flux-nodes``, rush's daemon (jobtap priority plugin) beside sched-backfill's
  ``t_estimate``;
* ``fluxion``: ``fluxion-nodes``, the same beside Fluxion's (queue-policy easy, lonodex);
* ``rush-module`` (SDSC only): ``flux-rush-nodes``, rush's Flux scheduler module is the
  scheduler: its ``t_estimate`` annotations are rush's estimates (no other estimator in that run).

The tables (``results/live_windows.md`` and ``.csv``): per window, run, estimator and wait class,
coverage (share of the jobs with an estimate at or after submit), mean and median absolute
error at submit (trace minutes), share within 10 % of the wait and within 1 minute, the mean
signed error (estimate minus real start: positive is late) and the share of late estimates,
and the mean absolute error halfway through the wait; then, for runs with two estimators, the
same on the jobs both estimated. Computed with rush.studies.estimate_accuracy.accuracy from each
run's CSV (the replay's per-job predictions), so an older run's JSON without the median still counts.

Every run ``--run`` makes is also kept, as ``sim/start_estimates/results/repeats/<stem>-repN``
(N: the next number), and the runs made before rule L2 that a rerun replaced (round 11's, round
10's of SDSC) are kept in ``sim/start_estimates/results/before_l2/``;
``results/live_windows_repeats.md`` (and ``.csv``) puts every kept run's MAE at submit side by
side, with the spread between the repeats.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from rush.studies.arg_types import names  # noqa: E402
from rush.studies.estimate_accuracy import WAIT_CLASSES, accuracy  # noqa: E402
from rush.studies.live_window_choice import WindowRule  # noqa: E402

VARIANT = "runtime-quantiles"
# --rjms name -> (run_live.py kind, what ran)
RUNS = {
    "slurm": ("slurm-nodes", "Slurm 25.11, 32 nodes; rush's daemon (priority mode)"),
    # The first Slurm run of SDSC (before the planner warmed its predictor at load): its first
    # cycle took 218 s and 79 jobs were submitted in a burst; a reference, not rerun by --run.
    "slurm-burst": ("slurm-nodes", "the same, the earlier run whose arrivals were a burst (reference)"),
    "flux": ("flux-nodes", "Flux, sched-backfill, 32 brokers; rush's daemon (jobtap priority plugin)"),
    "fluxion": ("fluxion-nodes", "Flux, Fluxion easy/lonodex, 32 brokers; rush's daemon (jobtap plugin)"),
    "rush-module": ("flux-rush-nodes", "Flux, rush's scheduler module, 32 brokers (its t_estimate)"),
}


@dataclass(frozen=True)
class LiveWindow:
    name: str
    trace: str
    window: str
    speedup: str
    runs: tuple[str, ...]
    why: str


WINDOWS = (
    LiveWindow(
        "SDSC",
        "SDSC-SP2-1998-4.2-cln.swf.gz",
        "10800:80",
        "10",
        tuple(RUNS),
        "round 10's window (no wait over 1 h)",
    ),
    # Round 11: waits over an hour, the rule of rush.studies.live_window_choice (--choose).
    LiveWindow(
        "CTC", "CTC-SP2-1996-3.1-cln.swf.gz", "44051:60", "60", ("slurm", "flux", "fluxion"), "the rule"
    ),
    LiveWindow(
        "BLUE", "SDSC-BLUE-2000-4.2-cln.swf.gz", "125231:60", "60", ("slurm", "flux", "fluxion"), "the rule"
    ),
    LiveWindow(
        "KTH", "KTH-SP2-1996-2.1-cln.swf.gz", "18997:60", "60", ("slurm", "flux", "fluxion"), "the rule"
    ),
)
# Round 16: windows sought by a stricter rule (--choose prints the window, or that there is none):
# name -> (trace, rule). Round 11's windows (``why == "the rule"``) use WindowRule() itself.
CANDIDATES = {
    "CTC-F": ("CTC-SP2-1996-3.1-cln.swf.gz", WindowRule(min_head=5, head_seconds=2.0, limit_granularity=1.0)),
}
RESULTS = ROOT / "sim" / "start_estimates" / "results"
# Every live run of a window kept (``--run`` copies each run's CSV and JSON there as
# ``<stem>-rep<N>``), and round 11's runs, made before rule L2 was deployed: the repeats table.
REPEATS = RESULTS / "repeats"
BEFORE_L2 = RESULTS / "before_l2"
OWN = {"slurm": "squeue --start", "flux": "sched-backfill", "fluxion": "Fluxion", "rush": "rush"}


def csv_path(kind: str, rjms: str = "", w: LiveWindow = WINDOWS[0]) -> Path:
    suffix = "-burst" if rjms == "slurm-burst" else ""
    stem = f"{kind}-{w.trace.split('-')[0]}-{w.window.replace(':', '_')}-K{w.speedup}-{VARIANT}{suffix}"
    return RESULTS / f"{stem}.csv"


def read_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for key in ("wait", "error", "halfway_error"):
            r[key] = float(r[key]) if r[key] != "" else None
    return rows


def signed(errors: list[float | None]) -> dict:
    """Mean and median signed error (estimate minus real start, trace s) and the share late."""
    known = [e for e in errors if e is not None]
    if not known:
        return {"mean_signed_error": None, "median_signed_error": None, "late": None}
    return {
        "mean_signed_error": sum(known) / len(known),
        "median_signed_error": statistics.median(known),
        "late": sum(1 for e in known if e > 0) / len(known),
    }


def measures(rows: list[dict]) -> dict:
    """Coverage and errors of one estimator on these jobs (trace seconds)."""
    waits = [r["wait"] for r in rows]
    first = accuracy([r["error"] for r in rows], waits)
    half = accuracy([r["halfway_error"] for r in rows], waits)
    return {
        **first,
        **signed([r["error"] for r in rows]),
        "halfway_mean_abs_error": half["mean_abs_error"],
        "halfway_coverage": half["coverage"],
    }


def table_rows(rjms: str, rows: list[dict], window: str = WINDOWS[0].name) -> list[dict]:
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
                out.append({"window": window, "run": rjms, "estimator": OWN.get(name, name), "wait": cls,
                            "jobs_of": subset, **measures(mine)})  # fmt: skip
    return out


def _min(v: float | None) -> str:
    return "-" if v is None else f"{v / 60:.1f}"


def _signed_min(v: float | None) -> str:
    return "-" if v is None else f"{v / 60:+.1f}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.0f} %"


def markdown(table: list[dict], missing: list[str]) -> str:
    lines = [
        "# Live start estimates, rush's quantile model beside each RJMS's own",
        "",
        "Written by `python sim/runtime_predictions/live_windows.py` from "
        "`sim/start_estimates/results/*-runtime-quantiles.csv`. Errors in trace "
        "minutes, estimate at submit (the first at or after it) against the real start; signed: "
        "estimate minus real start (positive: late); halfway: the last estimate made by submit + "
        "wait/2. `jobs of`: all the class's jobs, or only those every estimator of the run "
        "estimated at submit.",
        "",
        "| window | run | estimator | wait | jobs of | jobs | coverage | MAE | median | within 10 % "
        "| within 1 min | mean signed | late | MAE halfway (coverage) |",
        "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for t in table:
        lines.append(
            f"| {t['window']} | {t['run']} | {t['estimator']} | {t['wait']} | {t['jobs_of']} | {t['jobs']} | "
            f"{_pct(t['coverage'])} | {_min(t['mean_abs_error'])} | {_min(t['median_abs_error'])} | "
            f"{_pct(t['within_10pct'])} | {_pct(t['within_1min'])} | {_signed_min(t['mean_signed_error'])} | "
            f"{_pct(t['late'])} | {_min(t['halfway_mean_abs_error'])} ({_pct(t['halfway_coverage'])}) |"
        )
    lines += ["", "Windows and runs:", ""]
    for w in WINDOWS:
        lines.append(f"* `{w.name}`: {w.trace} jobs {w.window}, K = {w.speedup}, 32 nodes ({w.why})")
        for rjms in w.runs:
            kind, what = RUNS[rjms]
            key = f"{w.name}/{rjms}"
            state = "not run" if key in missing else f"`{csv_path(kind, rjms, w).relative_to(ROOT)}`"
            lines.append(f"  * `{rjms}`: {what}: {state}")
    return "\n".join(lines) + "\n"


def repeat_sources(kind: str, rjms: str, w: LiveWindow) -> list[tuple[str, Path]]:
    """(label, CSV) of every kept run of this window and RJMS: ``before L2`` first, then the
    repeats in their order (``rep1``, ``rep2``, ...)."""
    stem = csv_path(kind, rjms, w).stem
    old = BEFORE_L2 / f"{stem}.csv"
    reps = sorted(REPEATS.glob(f"{stem}-rep*.csv"), key=lambda p: int(p.stem.rsplit("-rep", 1)[1]))
    return [("before L2", old)] * old.exists() + [(p.stem.rsplit("-", 1)[1], p) for p in reps]


def repeat_table(windows=WINDOWS) -> list[dict]:
    """One row per window, run, wait class, job subset, estimator and kept run (``source``): the
    measures of :func:`table_rows` on that run's CSV."""
    out = []
    for w in windows:
        for rjms in w.runs:
            for source, path in repeat_sources(RUNS[rjms][0], rjms, w):
                out += [{**row, "source": source} for row in table_rows(rjms, read_rows(path), w.name)]
    return out


def spread_markdown(rows: list[dict]) -> str:
    """The MAE at submit per kept run side by side, and the spread (largest minus smallest) of
    the runs after L2 (the ``rep`` ones)."""
    sources = sorted({r["source"] for r in rows}, key=lambda s: (s != "before L2", s))
    lines = [
        "# Live start estimates: every kept run of each window, and the spread between repeats",
        "",
        "Written by `python sim/runtime_predictions/live_windows.py` from "
        "`sim/start_estimates/results/before_l2/` (runs made before rule L2: round 11's, and round 10's of SDSC) and "
        "`sim/start_estimates/results/repeats/` (each run since, `repN`). MAE at submit, trace "
        "minutes, with the jobs estimated; `spread`: largest minus smallest MAE over the `rep` runs.",
        "",
        "| window | run | wait | jobs of | estimator | " + " | ".join(sources) + " | spread |",
        "|---|---|---|---|---|" + "---:|" * (len(sources) + 1),
    ]
    keys = sorted(
        {(r["window"], r["run"], r["wait"], r["jobs_of"], r["estimator"]) for r in rows},
        key=lambda k: (
            [w.name for w in WINDOWS].index(k[0]),
            k[1],
            WAIT_CLASSES.index(k[2]),
            k[3],
            k[4] != "rush",
            k[4],
        ),
    )
    for key in keys:
        mine = {
            r["source"]: r
            for r in rows
            if (r["window"], r["run"], r["wait"], r["jobs_of"], r["estimator"]) == key
        }
        cells = [
            "-" if s not in mine or mine[s]["mean_abs_error"] is None
            else f"{mine[s]['mean_abs_error'] / 60:.1f} ({mine[s]['estimated']})"
            for s in sources
        ]  # fmt: skip
        reps = [mine[s]["mean_abs_error"] for s in sources if s.startswith("rep") and s in mine]
        reps = [v for v in reps if v is not None]
        spread = f"{(max(reps) - min(reps)) / 60:.1f}" if len(reps) > 1 else "-"
        lines.append("| " + " | ".join([*key, *cells, spread]) + " |")
    return "\n".join(lines) + "\n"


def keep(kind: str, rjms: str, w: LiveWindow) -> Path:
    """Copy the run just made (CSV and JSON) into ``REPEATS`` as its next ``repN``."""
    src = csv_path(kind, rjms, w)
    n = len([s for s, _ in repeat_sources(kind, rjms, w) if s.startswith("rep")]) + 1
    REPEATS.mkdir(parents=True, exist_ok=True)
    for suffix in (".csv", ".json"):
        shutil.copyfile(src.with_suffix(suffix), REPEATS / f"{src.stem}-rep{n}{suffix}")
    return REPEATS / f"{src.stem}-rep{n}.csv"


def model_file(w: LiveWindow, models: Path) -> Path:
    """The window's model in a models directory (the name ``live_bias.py --models`` reads)."""
    return models / f"model-{w.trace.split('-')[0]}-{w.window.replace(':', '_')}-K{w.speedup}.joblib"


def written_since(path: Path, started: float) -> bool:
    """Whether a run's CSV and JSON were both (re)written at or after ``started`` (epoch s; a
    second's slack for a file system's coarse clock, a run takes minutes)."""
    return all(p.exists() and p.stat().st_mtime >= started - 1.0 for p in (path, path.with_suffix(".json")))


def run(w: LiveWindow, selected: list[str], again: bool, models: Path | None = None) -> int:
    """run_live.py for each selected run of window ``w`` (missing ones only unless ``again``),
    one at a time, sharing one trained model (kept in ``models`` when given: ``run_live.py``
    reuses it there, trained by the same command). A run whose script exits non-zero is kept
    only if it wrote its CSV and JSON (the Flux instance's shutdown can time out afterwards)."""
    if models is not None:
        models.mkdir(parents=True, exist_ok=True)
        model = model_file(w, models)
    else:
        model = Path(tempfile.mkdtemp(prefix="rush-live-windows-")) / "quantiles.joblib"
    for rjms in (r for r in selected if r in w.runs):
        kind = RUNS[rjms][0]
        if rjms == "slurm-burst":
            print("live window slurm-burst: a reference run of earlier code, not rerun", file=sys.stderr)
            continue
        if csv_path(kind, rjms, w).exists() and not again:
            continue
        argv = [
            sys.executable,
            str(ROOT / "sim" / "start_estimates" / "run_live.py"),
            kind,
            w.trace,
            w.window,
        ]
        argv += [w.speedup, VARIANT, str(model)]
        print(f"live window: {' '.join(argv[1:])}", flush=True)
        started = time.time()
        code = subprocess.run(argv, cwd=ROOT).returncode
        if code and not written_since(csv_path(kind, rjms, w), started):
            print(f"live window {w.name} {rjms}: run_live.py exited {code}", file=sys.stderr)
            return code
        if code:  # e.g. the Flux instance took over 30 s to shut down after the results were written
            print(f"live window {w.name} {rjms}: run_live.py exited {code} after writing its results: kept",
                  file=sys.stderr)  # fmt: skip
        print(f"live window {w.name} {rjms}: kept as {keep(kind, rjms, w).relative_to(ROOT)}", flush=True)
    return 0


def choose() -> int:
    """Print the window the rule picks on each rule-chosen window's trace, then each round-16
    candidate's (or that none qualifies): the simulator only."""
    from rush.errors import RushError
    from rush.studies.live_window_choice import first_window
    from rush.workload.model import workload_from_trace
    from rush.workload.swf import read_swf
    from tests.core.real_traces import MIRROR

    wanted = [(w.name, w.trace, WindowRule(), w.window) for w in WINDOWS if w.why == "the rule"]
    wanted += [(name, trace, rule, "none") for name, (trace, rule) in CANDIDATES.items()]
    for name, trace, rule, committed in wanted:
        try:
            chosen = first_window(workload_from_trace(read_swf(MIRROR / trace)), rule)
        except RushError as e:
            print(f"{name}: {trace}: {e}")
            continue
        heads = (
            f" ({chosen.long_heads(rule.head_seconds)} at the blocked head >= {rule.head_seconds:g} wall s)"
        )
        print(f"{name}: {trace} {chosen.text}: {chosen.long_waits()} simulated waits over 1 h"
              f"{heads if rule.min_head else ''}, makespan {chosen.makespan:.0f} wall s (committed: {committed})")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="run the live windows first (missing CSVs)")
    parser.add_argument(
        "--rjms",
        type=names(tuple(RUNS)),
        default=tuple(RUNS),
        help=f"runs, comma-separated: {', '.join(RUNS)}",
    )
    window_names = tuple(w.name for w in WINDOWS)
    parser.add_argument(
        "--window",
        type=names(window_names),
        default=window_names,
        help=f"windows, comma-separated: {', '.join(window_names)}",
    )
    parser.add_argument("--choose", action="store_true", help="print the rule's windows and stop")
    parser.add_argument(
        "--models", default="", help="with --run: a directory holding (or to hold) the windows' models"
    )
    args = parser.parse_args(argv)
    if args.choose:
        return choose()
    selected, windows = list(args.rjms), list(args.window)
    again = args.rjms != tuple(RUNS) or args.window != window_names
    for w in WINDOWS:
        models = Path(args.models) if args.models else None
        if args.run and w.name in windows and (code := run(w, selected, again, models)):
            return code
    table, missing = [], []
    for w in WINDOWS:
        for rjms in w.runs:
            path = csv_path(RUNS[rjms][0], rjms, w)
            if not path.exists():
                missing.append(f"{w.name}/{rjms}")
                continue
            table += table_rows(rjms, read_rows(path), w.name)
    out = HERE / "results" / "live_windows"
    text = markdown(table, missing)
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]) if table else ["window"])
        writer.writeheader()
        writer.writerows(table)
    out.with_suffix(".md").write_text(text)
    print(text)
    repeats = repeat_table()
    spread = HERE / "results" / "live_windows_repeats"
    with open(spread.with_suffix(".csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(repeats[0]) if repeats else ["window"])
        writer.writeheader()
        writer.writerows(repeats)
    spread.with_suffix(".md").write_text(spread_markdown(repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
