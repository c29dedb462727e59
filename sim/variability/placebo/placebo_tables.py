"""The placebo's tables: learned minus placebo removal per trial, beside the committed runs.

    python sim/variability/placebo/placebo_tables.py [OUT.md]

Reads ``runs.csv.gz``, ``predictions.csv.gz`` and ``rates.json`` here and the committed runs of
FCFS+EASY, PRESENT-ORACLE, RUSH and RUSH-PRESENT-LABEL on the same trials (``results/``,
``trials-4005/``, ``trials-5000/``, ``present-label-4000/``), pooled with ``ten_trials.py``'s
``Pool`` (a trial counted once). Per scenario and placebo: the learned policy's and the placebo's
removal against FCFS+EASY, their difference per trial (learned − placebo = placebo's runs with
variation − learned's) with a 95 % percentile interval from a paired bootstrap over trials
(``ten_trials.mean_interval``: 10 000 resamples, seed 0), each one's Δmakespan and starts at the
skip limit per trial, and the flag rates (per question: the target and the placebo's; per job:
the share of questioned jobs flagged at least once). Then ``ten_trials.py``'s table of all of it.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import sys
from pathlib import Path

import numpy as np

from rush.studies.script_args import run_main

HERE = Path(__file__).resolve().parent
STUDY = HERE.parent
sys.path.insert(0, str(STUDY))

import ten_trials  # noqa: E402

COMMITTED = [
    STUDY / "results" / "runs.csv.gz",
    STUDY / "trials-4005" / "runs.csv.gz",
    STUDY / "trials-5000" / "runs.csv.gz",
    STUDY / "present-label-4000" / "runs-rush-present-label.csv.gz",
    STUDY / "trials-5000" / "runs-rush-present-label.csv.gz",
]
SCENARIOS = ["ADAA", "WS", "SS"]
ORDER = ["RUSH-PLACEBO", "RUSH-JOB-PLACEBO", "PRESENT-LABEL-PLACEBO", "PRESENT-LABEL-JOB-PLACEBO"]


def ordered(rates: dict) -> list[tuple[str, dict]]:
    """rates.json's placebos in ORDER (the learned policy's two placebos together)."""
    return sorted(rates.items(), key=lambda kv: ORDER.index(kv[0]) if kv[0] in ORDER else len(ORDER))


def placebo_rates(path: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """Per (placebo, scenario): the share of its questions flagged and of its questioned jobs
    flagged at least once, from its prediction rows."""
    asked: dict[tuple[str, str], list[int]] = {}
    jobs: dict[tuple[str, str], dict[tuple[str, str], bool]] = {}
    with gzip.open(path, "rt") as fh:
        for r in csv.DictReader(fh):
            key = (r["policy"], r["scenario"])
            a = asked.setdefault(key, [0, 0])
            a[0] += 1
            a[1] += r["flag"] == "True"
            j = jobs.setdefault(key, {})
            j[(r["trial"], r["job_id"])] = j.get((r["trial"], r["job_id"]), False) or r["flag"] == "True"
    return {k: (f / n, sum(jobs[k].values()) / len(jobs[k])) for k, (n, f) in asked.items()}


def comparison(pool: ten_trials.Pool, rates: dict, realised: dict) -> list[str]:
    out = [
        "| scenario | learned | placebo | trials | FCFS+EASY | learned removes | placebo removes [95 % t] "
        "| **learned − placebo [95 % bootstrap]** | Δmakespan learned / placebo "
        "| starts at the skip limit / trial, learned / placebo | flag rate per question: target / placebo "
        "| jobs flagged at least once: learned / placebo |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in SCENARIOS:
        base = pool.cells.get((s, "FCFS+EASY"), {})
        for name, meta in ordered(rates):
            learned, placebo = pool.cells.get((s, meta["learned"]), {}), pool.cells.get((s, name), {})
            trials = sorted(t for t in placebo if t in learned and t in base)
            if not trials:
                continue
            b = np.array([base[t].variation for t in trials], float)
            vl = np.array([learned[t].variation for t in trials], float)
            vp = np.array([placebo[t].variation for t in trials], float)
            d = vp - vl
            lo, hi = ten_trials.mean_interval(d)
            plo, phi = ten_trials.t_interval(b - vp)
            span_l = np.mean([learned[t].makespan / base[t].makespan - 1 for t in trials])
            span_p = np.mean([placebo[t].makespan / base[t].makespan - 1 for t in trials])
            hits_l = np.mean([learned[t].limit_hits for t in trials])
            hits_p = np.mean([placebo[t].limit_hits for t in trials])
            target = meta["scenarios"][s]
            got = realised.get((name, s), (float("nan"), float("nan")))
            out.append(
                f"| {s} | {meta['learned']} | {name} | {ten_trials.trial_ranges(trials)} ({len(trials)}) "
                f"| {b.mean():.1f} | {(b - vl).mean():+.1f} | {(b - vp).mean():+.1f} [{plo:+.1f}, {phi:+.1f}] "
                f"| **{d.mean():+.1f} [{lo:+.2f}, {hi:+.2f}]** | {span_l:+.2%} / {span_p:+.2%} "
                f"| {hits_l:.1f} / {hits_p:.1f} | {target['rate_per_question']:.3f} / {got[0]:.3f} "
                f"| {target['jobs_flagged_share']:.0%} / {got[1]:.0%} |"
            )
    return out


def per_trial(pool: ten_trials.Pool, rates: dict) -> list[str]:
    out = ["| scenario | placebo | trials | learned − placebo per trial |", "|---|---|---|---|"]
    for s in SCENARIOS:
        for name, meta in ordered(rates):
            learned, placebo = pool.cells.get((s, meta["learned"]), {}), pool.cells.get((s, name), {})
            trials = sorted(t for t in placebo if t in learned)
            if trials:
                diffs = ", ".join(f"{placebo[t].variation - learned[t].variation:+d}" for t in trials)
                out.append(f"| {s} | {name} | {ten_trials.trial_ranges(trials)} | {diffs} |")
    return out


def main(dest: Path | None = None) -> None:
    runs = HERE / "runs.csv.gz"
    rates = json.loads((HERE / "rates.json").read_text())
    pool = ten_trials.Pool()
    for path in [runs, *COMMITTED]:
        pool.add_file(str(path), "paper")
    lines = [
        "# Placebo: the learned predictor's own contribution (paper variant, held-out trials)",
        "",
        "`python sim/variability/placebo/run.py` (rows here; committed RUSH, RUSH-PRESENT-LABEL, "
        "FCFS+EASY from `../results/`, `../trials-4005/`, `../trials-5000/`, `../present-label-4000/`). "
        "Runs with variation per trial (campaign bar); removed against FCFS+EASY; learned − placebo "
        "> 0 means the model's flags remove more than the same rate of random flags.",
        "",
        *comparison(pool, rates, placebo_rates(HERE / "predictions.csv.gz")),
        "",
        *per_trial(pool, rates),
        "",
        "## All policies on these trials (`ten_trials.py`)",
        "",
    ]
    buf = io.StringIO()
    keep = sys.argv
    sys.argv = ["ten_trials.py", str(runs), *map(str, COMMITTED)]
    try:
        with contextlib.redirect_stdout(buf):
            ten_trials.main()
    finally:
        sys.argv = keep
    text = "\n".join(lines) + "\n" + buf.getvalue()
    if dest is None:
        print(text, end="")
    else:
        Path(dest).write_text(text)


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
