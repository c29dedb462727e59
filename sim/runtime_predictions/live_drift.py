"""Rule D (round 14, ``estimates/dev_log.md``) on the committed live runs, beside the RJMS's own.

    RUSH_TRACE_MIRROR=/work/shared/traces nice -n 15 python sim/runtime_predictions/live_drift.py [--models DIR]

For each committed live run (``live_windows.py``'s windows, rush's daemon beside the RJMS), rush's
estimate at submit is made again as ``live_bias.py`` makes it (the core's pass on the run's real
state at the live estimate's moment, the run's model fed its completions), under rule L2 (the
deployed projection, the rule the runs ran) and under L2 with rule D's shifted quantiles
(``rush.core.runtime_drift``). Compared with the RJMS's own estimate at submit from the run's
CSV on the jobs both estimated, in the class the criterion names (waits over an hour; SDSC,
which has none, 10 min-1 h). Trace minutes. Writes ``results/live_drift.{md,csv}``.
"""

from __future__ import annotations

import csv
import math
import statistics
import sys

import live_bias
import live_windows

VARIANTS = ("queue: L2", live_bias.DRIFT_VARIANT)
# Round 15 (rule D2, post hoc): its own pass (a seeded record), merged into the rows by job.
D2 = live_bias.D2_VARIANT


def compare(window: str, rjms: str, rows: list[dict], csv_rows: list[dict]) -> dict | None:
    """One run's row: jobs of the measured class both rush (live) and the RJMS estimated at
    submit; the MAE of rush live, recomputed under L2, under L2 + D, and of the RJMS."""
    cls, own, mine = live_bias.both_estimated(window, rows, csv_rows, (*VARIANTS, D2))
    if not mine:
        return None
    mae = live_bias.mae_minutes

    shifts = " ".join(f"{math.exp(r['shift']):.2f}/{r['residuals']}" for r in mine)
    print(f"{window} {rjms} {cls}: per job exp(shift)/residuals of its user at submit: {shifts}", flush=True)
    seeded = " ".join(f"{math.exp(r['d2_shift']):.2f}/{r['d2_residuals']}" for r in mine)
    print(f"{window} {rjms} {cls}: rule D2, seeded record: {seeded}", flush=True)
    return {
        "window": window,
        "run": rjms,
        "wait": cls,
        "jobs": len(mine),
        "rush_live": mae(r["live"] for r in mine),
        "L2": mae(r["queue: L2"] for r in mine),
        "L2_drift": mae(r[live_bias.DRIFT_VARIANT] for r in mine),
        "L2_d2": mae(r[D2] for r in mine),
        "rjms": mae(own[str(r["job"])] for r in mine),
        "L2_signed": statistics.fmean(r["queue: L2"] for r in mine) / 60,
        "L2_drift_signed": statistics.fmean(r[live_bias.DRIFT_VARIANT] for r in mine) / 60,
        "L2_d2_signed": statistics.fmean(r[D2] for r in mine) / 60,
    }


def markdown(table: list[dict]) -> str:
    lines = [
        "# Rule D (per-user drift) on the committed live runs, beside the RJMS's own",
        "",
        "Written by `python sim/runtime_predictions/live_drift.py` (see its docstring). At submit, "
        "jobs both rush and the RJMS estimated, waits over an hour (SDSC: 10 min-1 h); MAE in trace "
        "minutes; `rush live`: the run's own estimates; `L2`, `L2 + D`: recomputed (`live_bias.py`'s "
        "pass); `L2 x D2`: rule D2 (round 15, post hoc: the record seeded from the model's training "
        "data, the queue's L2 length times exp(shift)); signed: estimate minus real start.",
        "",
        "| window | run | wait | jobs | rush live | L2 | L2 + D | L2 x D2 | RJMS | L2 signed | L2 + D signed | L2 x D2 signed |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for t in table:
        lines.append(
            f"| {t['window']} | {t['run']} | {t['wait']} | {t['jobs']} | {t['rush_live']:.1f} | {t['L2']:.1f} | "
            f"{t['L2_drift']:.1f} | {t['L2_d2']:.1f} | {t['rjms']:.1f} | {t['L2_signed']:+.1f} | "
            f"{t['L2_drift_signed']:+.1f} | {t['L2_d2_signed']:+.1f} |"
        )
    return "\n".join(lines) + "\n"


def kept_rows(windows: set[str]) -> list[dict]:
    """The rows on disk of the windows not run now (a run of some windows updates their rows)."""
    path = live_bias.HERE / "results" / "live_drift.csv"
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["window"] not in windows]
    for r in rows:
        for key in r:
            if key not in ("window", "run", "wait"):
                r[key] = int(r[key]) if key == "jobs" else float(r[key])
        r.setdefault("L2_d2", math.nan)  # a row from before round 15: no D2 column
        r.setdefault("L2_d2_signed", math.nan)
    return rows


def main(argv: list[str] | None = None) -> int:
    models, runs = live_bias.recorded_runs(argv, __doc__.split("\n\n")[0])
    table = kept_rows({w.name for w, *_ in runs})
    seeds: dict[str, dict[int, list[float]]] = {}
    for w, rjms, path, source in runs:
        model = live_bias.model_path(w, models)
        rows = live_bias.reconstruct(w, rjms, model, variants=VARIANTS)
        if w.name not in seeds:
            seeds[w.name] = live_bias.training_seed(w, model)
        seeded = live_bias.reconstruct(w, rjms, model, variants=("queue: L2", D2), seed=seeds[w.name])
        for r, d in zip(rows, seeded, strict=True):  # the same moments, in the same order
            assert r["job"] == d["job"] and r["queue: L2"] == d["queue: L2"], (w.name, rjms, r["job"])
            r.update({D2: d[D2], "d2_shift": d["shift"], "d2_residuals": d["residuals"]})
        row = compare(
            w.name, rjms if source == "current" else f"{rjms} ({source})", rows, live_windows.read_rows(path)
        )
        if row is not None:
            table.append(row)
            print(row, flush=True)
    order = {w.name: i for i, w in enumerate(live_windows.WINDOWS)}
    table.sort(key=lambda r: order.get(r["window"], len(order)))
    live_bias.write_results("live_drift", table, markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
