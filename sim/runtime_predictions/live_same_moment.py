"""rush's start estimate at the moment the RJMS makes its first (issue 29, item 4; protocol S1 of
``estimates/dev_log.md``, round 12).

    python sim/runtime_predictions/live_same_moment.py [--models DIR] [--window CTC,BLUE] [--runs all]

``live_windows.py`` compares each estimator's *first* estimate of a job. sched-backfill and
Fluxion annotate only the job they reserve for, so their first estimate of a long-waiting job
comes late in its wait, rush's at submit. Here, for every job the RJMS's own estimator
(``squeue --start``, sched-backfill's or Fluxion's ``t_estimate``) estimated, rush's estimate at
that same moment is set beside it. The committed runs keep only rush's first and halfway
estimates, so rush's is recomputed as ``live_bias.py`` recomputes it: the core's own pass on the
run's real state at that moment (variant ``deployed``), and with rule L2 (``queue: L2``: the
queue projected on its quantiles' upper quartile). How well the recomputation gives the live
estimates back is measured at rush's own recorded moments: its first estimate, and halfway
(recomputed at submit + wait / 2; the recorded one was made at the last poll before).

Every kept run of each window is replayed (``live_bias.recorded_runs``: ``before_l2/``, each
``repN``, the current CSV when it is not a copy; ``--runs latest`` for the current ones only).
Writes ``results/live_same_moment.{md,csv}``: per window, run, kept run (``source``) and wait class, the jobs the RJMS
estimated (and those left out: not pending at that moment in the recomputed state), the RJMS's
coverage, its first estimate's moment as a share of the wait, and for the RJMS, rush and rush
with L2: MAE, median absolute error, mean signed error (estimate minus real start, trace
minutes) and the share within 10 % of the wait.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import live_bias  # noqa: E402
import live_windows  # noqa: E402

CLASSES = live_bias.CLASSES
ESTIMATORS = (("RJMS", "rjms"), ("rush", "deployed"), ("rush, L2", "queue: L2"))


def moments(rows: list[dict]) -> tuple[list[tuple[float, int, str]], dict[int, dict]]:
    """The moments to recompute at (the RJMS's first estimates; rush's own first and halfway,
    for the fidelity check) and the RJMS's row of each job it estimated."""
    out: list[tuple[float, int, str]] = []
    rjms: dict[int, dict] = {}
    for r in rows:
        job = int(r["trace_job_id"])
        if r["estimator"] != "rush":
            if r["error"] is not None and r["estimated_at"] not in ("", None):
                rjms[job] = r
                out.append((float(r["estimated_at"]), job, "rjms"))
        elif r["error"] is not None and r["estimated_at"] not in ("", None):
            out.append((float(r["estimated_at"]), job, "first"))
            if r["halfway_error"] is not None:
                submit, start = float(r["submit"]), float(r["start"])
                out.append((submit + (start - submit) / 2, job, "halfway"))
    return out, rjms


def _stats(errors: list[float], waits: list[float]) -> dict:
    if not errors:
        return {"mae": None, "median": None, "signed": None, "within_10pct": None}
    return {
        "mae": statistics.fmean(abs(e) for e in errors) / 60,
        "median": statistics.median(abs(e) for e in errors) / 60,
        "signed": statistics.fmean(errors) / 60,
        "within_10pct": sum(abs(e) <= 0.1 * w for e, w in zip(errors, waits, strict=True)) / len(errors),
    }


def same_moment(
    window: str, rjms: str, rows: list[dict], recomputed: list[dict], rjms_rows: dict, source: str = "current"
) -> list[dict]:
    """Per wait class: the RJMS's first estimates beside rush's recomputed at their moments, and
    the recomputation's fidelity at rush's own moments (trace minutes)."""
    live = {int(r["trace_job_id"]): r for r in rows if r["estimator"] == "rush"}
    at = {(r["job"], r["tag"]): r for r in recomputed}
    out = []
    for cls in CLASSES:
        jobs = sorted(j for j, r in live.items() if r["wait_class"] == cls)
        if not jobs:
            continue
        estimated = [j for j in jobs if j in rjms_rows]
        kept = [j for j in estimated if at[(j, "rjms")]["deployed"] is not None]
        waits = [live[j]["wait"] for j in kept]
        row = {
            "window": window,
            "run": rjms,
            "source": source,
            "wait": cls,
            "jobs": len(jobs),
            "rjms_estimated": len(estimated),
            "left_out": len(estimated) - len(kept),
            "coverage": len(estimated) / len(jobs),
            "moment_share": statistics.fmean(
                (float(rjms_rows[j]["estimated_at"]) - float(live[j]["submit"]))
                / max(float(live[j]["start"]) - float(live[j]["submit"]), 1e-9)
                for j in kept
            )
            if kept
            else None,
        }
        for name, key in ESTIMATORS:
            errors = [rjms_rows[j]["error"] if key == "rjms" else at[(j, "rjms")][key] for j in kept]
            row.update({f"{name} {k}": v for k, v in _stats(errors, waits).items()})
        for tag, recorded in (("first", "error"), ("halfway", "halfway_error")):
            diffs = [
                abs(at[(j, tag)]["deployed"] - live[j][recorded])
                for j in jobs
                if (j, tag) in at and at[(j, tag)]["deployed"] is not None and live[j][recorded] is not None
            ]
            row[f"fidelity {tag}"] = statistics.fmean(diffs) / 60 if diffs else None
        out.append(row)
    return out


def markdown(table: list[dict]) -> str:
    def f(v, fmt=".1f"):
        return "-" if v is None else format(v, fmt)

    def pct(v):
        return "-" if v is None else f"{100 * v:.0f} %"

    lines = [
        "# rush's start estimate at the moment of the RJMS's first (protocol S1)",
        "",
        "Written by `python sim/runtime_predictions/live_same_moment.py` (see its docstring). For every",
        "job the RJMS's own estimator estimated: its first estimate, and rush's at that same moment",
        "(recomputed with the core's pass on the run's real state; `L2`: with rule L2). Trace",
        "minutes; signed: estimate minus real start. `moment`: the RJMS's first estimate as a share",
        "of the wait (mean). `fidelity`: |recomputed - live| of rush's estimates at its own first",
        "and halfway moments (mean). `source`: which kept run (`before L2`: made before rule L2;",
        "`repN`: the runs since; `current`: the window's current CSV when not a copy of a kept run).",
        "",
        "| window | run | source | wait | jobs | RJMS estimated (coverage) | left out | moment | MAE RJMS / rush / rush L2 "
        "| median RJMS / rush / L2 | mean signed RJMS / rush / L2 | within 10 % RJMS / rush / L2 "
        "| fidelity first / halfway |",
        "|---|---|---|---|---:|---|---:|---:|---|---|---|---|---|",
    ]
    for t in table:
        e = [n for n, _ in ESTIMATORS]
        lines.append(
            f"| {t['window']} | {t['run']} | {t['source']} | {t['wait']} | {t['jobs']} | {t['rjms_estimated']} "
            f"({pct(t['coverage'])}) | {t['left_out']} | {pct(t['moment_share'])} | "
            + " / ".join(f(t[f"{n} mae"]) for n in e)
            + " | "
            + " / ".join(f(t[f"{n} median"]) for n in e)
            + " | "
            + " / ".join(f(t[f"{n} signed"], "+.1f") for n in e)
            + " | "
            + " / ".join(pct(t[f"{n} within_10pct"]) for n in e)
            + f" | {f(t['fidelity first'])} / {f(t['fidelity halfway'])} |"
        )
    return "\n".join(lines) + "\n"


def run_rows(models: Path, w, rjms: str, path: Path, source: str) -> list[dict]:
    """This table's rows of one recorded run (``source``: its kept run's label)."""
    rows = live_windows.read_rows(path)
    at, rjms_rows = moments(rows)
    recomputed = live_bias.reconstructed(models, w, rjms, path, at, ("deployed", "queue: L2"))
    return same_moment(w.name, rjms, rows, recomputed, rjms_rows, source)


def main(argv: list[str] | None = None) -> int:
    models, runs = live_bias.recorded_runs(argv, __doc__.split("\n\n")[0])
    table = []
    for w, rjms, path, source in runs:  # the results written after each run, so a stopped one keeps them
        table += run_rows(models, w, rjms, path, source)
        ordered = live_bias.in_order(table)
        live_bias.write_results("live_same_moment", ordered, markdown(ordered))
        print(w.name, rjms, source, "done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
