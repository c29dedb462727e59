"""Diagnostic D9 (issue 29, round 13): where each live window job's real runtime falls in the
distribution rush's live predictor gave it at submit, and how the queue's runtimes add up.

    python sim/runtime_predictions/live_pit.py --models DIR [--runs before_l2|current]

For each window over an hour (CTC, BLUE, KTH) and run (slurm, flux, fluxion) of
``live_windows.py``: the run's model (``DIR/<window>.joblib``, trained as ``run_live.py`` trains
it, or trained there if absent), fed the run's completions before each job's submit in end order
(as ``live_bias.py`` feeds it), predicts the job at its submit; its PIT is the level at which its
real runtime falls in the predicted quantiles (interpolated; 0 below the request-capped first
knot, 1 above the last). A calibrated model puts 10 / 15 / 25 / 25 / 15 / 10 % of the jobs in the
bins below q0.1, q0.1-0.25, ..., above q0.9. Also: the sum of the real runtimes over the sum of
the calibrated means (what the scheduling pass uses) and over the sum of rule L2's projection
runtimes (max(mean, q0.75), capped at the request), for all jobs and for those that waited 10
minutes or more. Uses no estimate and changes nothing: it says whether the queue's runtimes were
short (the model) on the windows where rush's estimates at submit are early.

Since r29keys (D33) rush keys a replay's ``trace-N`` tag as N on a ``trace-id`` model (before, by a
hash of the name, so no window job met its user's history: D31): a rerun gives the keyed PITs, and
the committed D9 figures are reproduced only at a433a04, before the fix.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for extra in (ROOT, HERE, ROOT / "sim" / "start_estimates"):
    sys.path.insert(0, str(extra))

import live_bias  # noqa: E402
import live_windows  # noqa: E402

BINS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0 + 1e-9)
LEVEL_L2 = 0.75


def job_rows(w, rjms: str, model: Path, folder: Path) -> list[dict]:
    """Per job with predicted quantiles: wait class, real runtime, mean, L2 runtime, PIT."""
    from rush.planner.runtime_prediction import load_runtime_predictor, own_accounts
    from rush.rjms.base import RJMSJob

    path = folder / live_windows.csv_path(live_windows.RUNS[rjms][0], rjms, w).name
    report = json.loads(path.with_suffix(".json").read_text())
    origin = float(report["clock_offset"])
    per_job = {int(p["job_id"]): p for p in report["per_job"]}
    wait_class = {int(r["trace_job_id"]): r["wait_class"] for r in live_windows.read_rows(path)}
    scaled = live_bias.scaled_jobs(w, rjms)
    account = min(own_accounts(), key=lambda name: name.isdigit())
    jobs = {}
    for i, job_id in enumerate(scaled.job_id.tolist()):
        p = per_job[job_id]
        tags = {} if rjms.startswith("slurm") else {"user": f"trace-{int(scaled.user[i])}"}
        jobs[job_id] = {"submit": origin + p["real_submit"], "start": origin + p["real_start"],
                        "end": origin + p["real_end"], "procs": int(scaled.procs[i]),
                        "limit": float(scaled.requested_time[i]), "tags": tags}  # fmt: skip
    predictor = load_runtime_predictor("runtime-quantiles", model, None)
    out = []
    for job_id, one in at_submit(predictor, jobs, jobs, (RJMSJob, account)):
        mean = predictor.estimates(one)[job_id][0]
        q = predictor.runtime_quantiles(one).get(job_id)
        if q is None:
            continue
        limit = jobs[job_id]["limit"]
        levels = np.asarray(q.levels, dtype=np.float64)
        seconds = np.minimum(np.sort(np.asarray(q.seconds, dtype=np.float64)), limit)
        real = jobs[job_id]["end"] - jobs[job_id]["start"]
        out.append({
            "job": job_id, "wait_class": wait_class[job_id], "real": real, "mean": mean,
            "l2": min(max(mean, float(np.interp(LEVEL_L2, levels, seconds))), limit),
            "pit": float(np.interp(real, seconds, levels, left=0.0, right=1.0)),
        })  # fmt: skip
    return out


def at_submit(predictor, pending: dict, fed: dict, make: tuple):
    """Each job of ``pending`` in submit order, predicted at its submit, after ``predictor`` was
    told, in end order, of every job of ``fed`` ended by then (as ``live_bias.py`` feeds it);
    yields (job id, the one-job list predicted). ``make``: (RJMSJob, the account) to build jobs."""
    job_class, account = make
    told: set[int] = set()
    for job_id in sorted(pending, key=lambda j: (pending[j]["submit"], j)):
        now = pending[job_id]["submit"]
        done = sorted((j["end"], i) for i, j in fed.items() if j["end"] <= now and i not in told)
        if done:
            predictor.observe_finished(
                [(live_bias._rjms_job(job_class, i, fed[i], "COMPLETED", account), e) for e, i in done]
            )
            told.update(i for _, i in done)
        one = [live_bias._rjms_job(job_class, job_id, pending[job_id], "PENDING", account)]
        predictor.predict_new(one)
        yield job_id, one


def summary(rows: list[dict]) -> dict:
    pits = np.asarray([r["pit"] for r in rows])
    shares = np.histogram(pits, BINS)[0] / max(1, len(rows))
    real = sum(r["real"] for r in rows)
    return {
        "jobs": len(rows),
        "pit_shares": [round(float(s), 3) for s in shares],
        "median_pit": float(np.median(pits)) if len(rows) else None,
        "real_over_mean": real / sum(r["mean"] for r in rows) if rows else None,
        "real_over_l2": real / sum(r["l2"] for r in rows) if rows else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--models", required=True, type=Path, help="DIR with <window>.joblib (trained if absent)"
    )
    parser.add_argument("--runs", choices=("before_l2", "current"), default="before_l2")
    args = parser.parse_args(argv)
    import run_live

    folder = live_windows.BEFORE_L2 if args.runs == "before_l2" else live_windows.RESULTS
    lines = [
        f"# D9: PIT of the live windows' jobs at submit ({args.runs} runs)",
        "",
        "Written by `python sim/runtime_predictions/live_pit.py` (see its docstring). PIT bins: "
        "< q0.1, q0.1-0.25, 0.25-0.5, 0.5-0.75, 0.75-0.9, > q0.9 (calibrated: 10/15/25/25/15/10 %); "
        "sums: real runtimes over the calibrated means and over L2's projection runtimes.",
        "",
        "| window | run | jobs | PIT shares | median PIT | real / mean | real / L2 |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for w in live_windows.WINDOWS[1:]:
        model = args.models / f"{w.name}.joblib"
        if not model.exists() and not run_live.train_quantiles(w.trace, w.window, w.speedup, model):
            print(f"live_pit: could not train the model of {w.name} into {model}", file=sys.stderr)
            return 2
        for rjms in w.runs:
            rows = job_rows(w, rjms, model, folder)
            for label, mine in (
                ("all", rows),
                ("waited >= 10 min", [r for r in rows if r["wait_class"] in ("10min-1h", ">1h")]),
            ):
                s = summary(mine)
                shares = " / ".join(f"{100 * x:.0f}" for x in s["pit_shares"])
                lines.append(f"| {w.name} | {rjms}, {label} | {s['jobs']} | {shares} | {s['median_pit']:.2f} | "
                             f"{s['real_over_mean']:.2f} | {s['real_over_l2']:.2f} |")  # fmt: skip
    text = "\n".join(lines) + "\n"
    (HERE / "results" / f"live_pit_{args.runs}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
