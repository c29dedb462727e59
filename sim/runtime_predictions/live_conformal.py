"""Rule C (round 16, ``estimates/dev_log.md``) on the committed live runs, beside L2, D, D2 and the RJMS's own.

    RUSH_TRACE_MIRROR=/work/shared/traces nice -n 15 python sim/runtime_predictions/live_conformal.py [--models DIR] [--window BLUE,...]

For each window and RJMS, the current committed run (the one ``live_drift.py`` replays), rush's
estimate at submit is made again as ``live_bias.py`` makes it (the core's pass on the run's real
state at the live estimate's moment, the run's model fed its completions), under rule L2 (the
deployed projection) and under L2 on rule C's recalibrated quantiles
(``rush.core.runtime_conformal``: every job's quantiles at the levels the PITs of the run's last
completions map them to). Compared with the RJMS's own estimate at submit from the run's CSV on
the jobs both estimated, in the class the criterion names (waits over an hour; SDSC, 10 min-1 h);
rules D and D2 quoted from ``results/live_drift.csv`` (round 15). Trace minutes. Writes
``results/live_conformal.{md,csv}``.
"""

from __future__ import annotations

import csv
import statistics
import sys

import live_bias
import live_windows

C = live_bias.CONFORMAL_VARIANT


def quoted() -> dict[tuple[str, str], dict]:
    """Round 15's rows of ``results/live_drift.csv`` (L2, D, D2, RJMS), by (window, run)."""
    path = live_bias.HERE / "results" / "live_drift.csv"
    with open(path, newline="") as fh:
        return {(r["window"], r["run"]): r for r in csv.DictReader(fh)}


def compare(window: str, rjms: str, rows: list[dict], csv_rows: list[dict], old: dict | None) -> dict | None:
    """One run's row: jobs of the measured class both rush (live) and the RJMS estimated at submit."""
    cls, own, mine = live_bias.both_estimated(window, rows, csv_rows, ("queue: L2", C))
    if not mine:
        return None
    mae = live_bias.mae_minutes

    maps = " ".join(
        f"{r['c_levels'][2]:.2f},{r['c_levels'][3]:.2f}/{r['pits']}" if r["c_levels"] else f"-/{r['pits']}"
        for r in mine
    )
    print(
        f"{window} {rjms} {cls}: per job C's median and q0.75 levels / PITs in the record: {maps}", flush=True
    )
    return {
        "window": window,
        "run": rjms,
        "wait": cls,
        "jobs": len(mine),
        "L2": mae(r["queue: L2"] for r in mine),
        "L2_C": mae(r[C] for r in mine),
        "D": float(old["L2_drift"]) if old else float("nan"),
        "D2": float(old["L2_d2"]) if old else float("nan"),
        "rjms": mae(own[str(r["job"])] for r in mine),
        "L2_signed": statistics.fmean(r["queue: L2"] for r in mine) / 60,
        "L2_C_signed": statistics.fmean(r[C] for r in mine) / 60,
        "L2_round15": float(old["L2"]) if old else float("nan"),
    }


def markdown(table: list[dict]) -> str:
    lines = [
        "# Rule C (global recalibration of the quantile levels) on the committed live runs",
        "",
        "Written by `python sim/runtime_predictions/live_conformal.py` (see its docstring). At submit, "
        "jobs both rush and the RJMS estimated, waits over an hour (SDSC: 10 min-1 h); MAE in trace "
        "minutes; `L2`, `L2 + C`: recomputed (`live_bias.py`'s pass); `D`, `D2`: round 15's "
        "`live_drift.csv` (`L2 (r15)` its L2 column, which this L2 must give back on the run round 15 "
        "replayed); `source`: the kept run (`current`: the window's current CSV); signed: estimate "
        "minus real start.",
        "",
        "| window | run | source | wait | jobs | L2 | L2 (r15) | D | D2 | L2 + C | RJMS | L2 signed | L2 + C signed |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for t in table:
        lines.append(
            f"| {t['window']} | {t['run']} | {t['source']} | {t['wait']} | {t['jobs']} | {t['L2']:.1f} | {t['L2_round15']:.1f} | "
            f"{t['D']:.1f} | {t['D2']:.1f} | **{t['L2_C']:.1f}** | {t['rjms']:.1f} | {t['L2_signed']:+.1f} | "
            f"{t['L2_C_signed']:+.1f} |"
        )
    return "\n".join(lines) + "\n"


def kept_rows(done: set[tuple[str, str, str]]) -> list[dict]:
    """The rows on disk of the (window, run, source) not recomputed now."""
    path = live_bias.HERE / "results" / "live_conformal.csv"
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if (r["window"], r["run"], r["source"]) not in done]
    for r in rows:
        for key in r:
            if key not in ("window", "run", "wait", "source"):
                r[key] = int(r[key]) if key == "jobs" else float(r[key])
    return rows


def main(argv: list[str] | None = None) -> int:
    """``--runs latest`` (the current CSVs, what live_drift.py replays) unless told otherwise."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--runs" not in argv:
        argv += ["--runs", "latest"]
    models, runs = live_bias.recorded_runs(argv, __doc__.split("\n\n")[0])
    old = quoted()
    table = kept_rows({(w.name, rjms, source) for w, rjms, _, source in runs})
    order = {w.name: i for i, w in enumerate(live_windows.WINDOWS)}
    for w, rjms, path, source in runs:
        model = live_bias.model_path(w, models)
        rows = live_bias.reconstruct(w, rjms, model, variants=("queue: L2", C), path=path)
        row = compare(w.name, rjms, rows, live_windows.read_rows(path), old.get((w.name, rjms)))
        if row is not None:
            row = {"source": source, **row}
            table.append(row)
            print(row, flush=True)
            table.sort(key=lambda r: (order.get(r["window"], len(order)), r["run"], r["source"]))
            live_bias.write_results("live_conformal", table, markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
