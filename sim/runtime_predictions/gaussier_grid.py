"""Gaussier et al.'s E-Loss grid, a sensitivity reading (round 26; not a tuned result).

gaussier-online (SJBF, stepwise correction, Table 6.6's protocol, no jitter) learning on each of 24
points of their own loss grid (``rush.studies.runtime_online_readings.GRID``, chosen in the README
before any run; point 1 is their cross-validated triple, the committed online column). Writes
``results/<job set>/``:

* ``gaussier_grid_runs.md`` / ``.csv``: every simulation (improvement over EASY-FCFS, %, and the
  share of jobs underpredicted and predicted 1 s);
* ``gaussier_grid.md`` / ``.csv``: per trace, the C-V point, the grid's min and max (and where),
  and whether Gaussier et al.'s published figure lies inside [min, max];
* ``gaussier_grid_all_four.md``: the points above the C-V point on every trace run (and by how much
  against round 26's jitter sd, ``online_noise.csv``, where measured).

Point 1 must equal the committed ``gaussier_online_runs.csv`` row (checked: the general loss gives
the committed E-Loss's results). Rows of traces not run are kept.

Round 28: ``--job-set full`` runs the full job set (Gaussier et al.'s, less 20 jobs) into
``results/full/``; ``--correction request`` corrects an expired prediction to the request (the
other rule of their cross-validated triple) and writes ``gaussier_grid_request*`` files, its point 1
checked against the committed correct-to-request run. The defaults are round 26's run.
``--no-starvation-threshold`` (D28, post hoc) runs EASY-FCFS and the grid with no starvation
threshold, and so without the starved-head rule, as Gaussier et al.'s simulator ran; it writes
``*_nothreshold*`` files and has no committed run to check point 1 against. ``--jitter-seed N``
(D28b, post hoc; 0, the default, is none) jitters every point's predictions as round 26's noise
reading does, into ``*_seed<N>*`` files, point 1 unchecked.

    RUSH_TRACE_MIRROR=/work/shared/traces OMP_NUM_THREADS=1 nice -n 15 \\
        python sim/runtime_predictions/gaussier_grid.py [--traces KTH-SP2,...] \\
        [--job-set published|full] [--correction stepwise|request] [--no-starvation-threshold] [--jitter-seed N]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from rush.studies.arg_types import count, names
from rush.studies.table_6_6 import TABLE_6_6
from rush.studies.tables import in_trace_order, markdown_lines, rows_not_rerun, write_table

TRACES = ("KTH-SP2", "CTC-SP2", "SDSC-BLUE", "SDSC-SP2")
OUT = Path(__file__).parent / "results"
JOB_SETS = ("published", "full")
# --correction: the rule (None: the scheduler's own, stepwise), the files' stem, point 1's committed row.
CORRECTIONS = {
    "stepwise": (None, "gaussier_grid", "gaussier-online"),
    "request": ("request", "gaussier_grid_request", "gaussier-online (correct-to-request)"),
}
AUTHORS = {trace: row.gaussier_authors for trace, row in TABLE_6_6.items()}  # Table 6.6
RUNS = [
    "trace",
    "jobs",
    "point",
    "loss",
    "mean_bounded_slowdown",
    "improvement_over_easy_fcfs_pct",
    "mean_wait",
    "backfilled",
    "underpredicted",
    "predicted_1s",
]


def check_cv_point(out: Path, rows: list[dict], committed: str = "gaussier-online") -> None:
    """Point 1 (their C-V triple through the general loss) equals the committed online run
    (``committed``: its scheduler label in ``gaussier_online_runs.csv``)."""
    path = out / "gaussier_online_runs.csv"
    if not path.exists():
        return
    trace = rows[0]["trace"]
    done = next(
        (r for r in csv.DictReader(path.open()) if r["trace"] == trace and r["scheduler"] == committed),
        None,
    )
    mine = next(r["mean_bounded_slowdown"] for r in rows if r["point"] == 1)
    if done is not None and abs(mine - float(done["mean_bounded_slowdown"])) > 1e-9 * mine:
        sys.exit(
            f"{trace}: grid point 1 gives {mine}, the committed {committed} {done['mean_bounded_slowdown']}"
        )


def summary(rows: list[dict]) -> dict:
    grid = [r for r in rows if r["point"] is not None]
    figure = {r["point"]: r["improvement_over_easy_fcfs_pct"] for r in grid}
    low = min(figure, key=figure.get)
    high = max(figure, key=figure.get)
    trace = rows[0]["trace"]
    theirs = AUTHORS[trace]
    return {
        "trace": trace,
        "points": len(grid),
        "C-V point (1)": f"{figure[1]:.2f}",
        "min": f"{figure[low]:.2f}",
        "at": low,
        "max": f"{figure[high]:.2f}",
        "at ": high,
        "range": f"{figure[high] - figure[low]:.2f}",
        "Gaussier et al.": f"[{theirs:02d}]",
        "inside [min, max]": "yes" if figure[low] <= theirs <= figure[high] else "no",
        "points above C-V": sum(v > figure[1] for v in figure.values()),
    }


def jitter_sd(out: Path) -> dict[str, float]:
    """gaussier-online's jitter sd per trace from round 26's noise reading, where measured."""
    path = out / "online_noise.csv"
    if not path.exists():
        return {}
    return {
        r["trace"]: float(r["jitter sd"])
        for r in csv.DictReader(path.open())
        if r["scheduler"] == "gaussier-online"
    }


def all_four(out: Path, runs: list[dict]) -> list[str]:
    """The Markdown lines of the points above the C-V point on every trace present."""
    traces = [t for t in TRACES if any(r["trace"] == t for r in runs)]
    fig = {
        (r["trace"], r["point"]): r["improvement_over_easy_fcfs_pct"] for r in runs if r["point"] is not None
    }
    loss = {r["point"]: r["loss"] for r in runs if r["point"] is not None}
    sd = jitter_sd(out)
    rows = []
    for point in sorted(loss):
        lead = [fig[t, point] - fig[t, 1] for t in traces if (t, point) in fig]
        if point == 1 or len(lead) < len(traces) or min(lead) <= 0:
            continue
        beyond = [t for t, d in zip(traces, lead, strict=True) if t in sd and d > 2 * sd[t]]
        cells = [str(point), loss[point], *(f"{d:+.2f}" for d in lead), f"{len(beyond)}/{len(traces)}"]
        rows.append(cells)
    header = ["point", "loss", *(f"{t} - C-V" for t in traces), "beyond 2 jitter sd"]
    note = (
        f"Points above the C-V point on all of {', '.join(traces)} (single runs; a sensitivity reading, "
        "chosen on the test data, decides nothing): " + (f"{len(rows)}." if rows else "none.")
    )
    return [note, "", *markdown_lines(header, rows)]


def run(
    traces: list[str],
    job_set: str = "published",
    correction: str = "stepwise",
    threshold: bool = True,
    seed: int = 0,
) -> None:
    from rush.studies.runtime_online_readings import gaussier_grid_runs
    from rush.studies.runtime_predictions import THRESHOLD

    rule, stem, committed = CORRECTIONS[correction]
    stem = stem if threshold else f"{stem}_nothreshold"
    stem = f"{stem}_seed{seed}" if seed else stem
    out = OUT / job_set
    out.mkdir(parents=True, exist_ok=True)
    runs = rows_not_rerun(out / f"{stem}_runs.csv", traces, numbers=True)
    table = rows_not_rerun(out / f"{stem}.csv", traces)
    for trace in traces:
        started = time.time()
        limit = THRESHOLD if threshold else None
        rows = gaussier_grid_runs(trace, job_set, correction=rule, threshold=limit, jitter_seed=seed)
        if threshold and not seed:
            check_cv_point(out, rows, committed)
        else:
            print(
                f"{trace}: no threshold or a jitter seed: point 1 not checked (no committed run)", flush=True
            )
        runs += rows
        table.append(summary(rows))
        print(f"{trace}: {table[-1]} ({time.time() - started:.0f} s)", flush=True)
        write_table(out, f"{stem}_runs", in_trace_order(runs, TRACES), RUNS)
        write_table(out, stem, in_trace_order(table, TRACES), list(table[-1]))
        (out / f"{stem}_all_four.md").write_text("\n".join(all_four(out, runs)) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=names(TRACES), default=",".join(TRACES))
    parser.add_argument("--job-set", default="published", choices=JOB_SETS)
    parser.add_argument("--correction", default="stepwise", choices=tuple(CORRECTIONS))
    parser.add_argument("--no-starvation-threshold", action="store_true", help="D28 (post hoc)")
    parser.add_argument("--jitter-seed", type=count(0), default=0, help="D28b (post hoc); 0: none")
    args = parser.parse_args(argv)
    run(list(args.traces), args.job_set, args.correction, not args.no_starvation_threshold, args.jitter_seed)


if __name__ == "__main__":
    main()
