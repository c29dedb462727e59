"""Round 28: our E-Loss grid on the full job set beside Gaussier et al.'s own runs of the same points.

Their published results (``experiments/data/<trace>/sim_analysis/metrics_complete`` of their
repository, mirrored as ``dinesh121991/predictsim``) hold one row per simulation with its
scheduler, corrector, loss, job count and AVEbsld. ``--metrics-dir`` (their ``experiments/data``)
extracts, for :data:`rush.studies.runtime_online_readings.GRID`'s 24 points under EASY-SJBF
(``easy_plus_plus_scheduler``) with the incremental (``tsafrir``, our stepwise) and request
(``reqtime``) corrections, each run's improvement over their EASY (``easy_backfill_scheduler``) into
``results/full/gaussier_grid_theirs.csv`` (a run that stopped before the last job is kept, marked
unfinished, and left out of every comparison). Without it the committed file is read. Then, with our
``gaussier_grid.py --job-set full`` runs (stepwise and ``--correction request``), it writes
``results/full/gaussier_grid_vs_theirs.md`` / ``.csv``: per trace and correction the Spearman
correlation over the finished points, the distances |ours - theirs|, where the C-V point's lies among
them, and its figures among their own 24 (the README's hypotheses HB1-HB4). With
``--no-starvation-threshold`` (D28, post hoc) it compares our ``*_nothreshold`` runs instead, for
the traces and corrections run, into ``gaussier_grid_vs_theirs_nothreshold.md`` / ``.csv``;
``--jitter-seed N`` (D28b) those of ``gaussier_grid.py --jitter-seed N`` (``*_seed<N>``).

    python sim/runtime_predictions/gaussier_grid_theirs.py [--metrics-dir .../experiments/data] \\
        [--no-starvation-threshold] [--jitter-seed N]
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

from scipy.stats import spearmanr

from rush.studies.arg_types import count
from rush.studies.runtime_online_readings import GRID, grid_label
from rush.studies.tables import write_table

TRACES = ("KTH-SP2", "CTC-SP2", "SDSC-BLUE", "SDSC-SP2")
OUT = Path(__file__).parent / "results" / "full"
# Our correction -> (their corrector's name, our grid's runs file).
CORRECTIONS = {
    "stepwise": ("tsafrir", "gaussier_grid_runs"),
    "request": ("reqtime", "gaussier_grid_request_runs"),
}
THEIRS = ["trace", "correction", "point", "loss", "jobs", "finished", "avgbsld", "improvement"]
KEYS = ("prightside", "prightparam", "pleftside", "pleftparam", "pthreshold", "pweight")


def read_metrics(path: Path) -> list[dict]:
    """Their ``metrics_complete``: a header of names, then rows led by R's row number."""
    lines = path.read_text().splitlines()
    names = lines[0].split()
    rows = []
    for line in lines[1:]:
        cells = line.split()
        if len(cells) == len(names) + 1:
            rows.append(dict(zip(names, cells[1:], strict=True)))
    return rows


def _same(cell: str, value: float | str) -> bool:
    if isinstance(value, str):
        return cell == value
    return cell != "NA" and float(cell) == float(value)


def extract(trace: str, rows: list[dict]) -> list[dict]:
    """The 24 points' runs under EASY-SJBF with both correctors, against their EASY."""
    easy = next(r for r in rows if r["scheduler"] == "easy_backfill_scheduler")
    out = []
    for correction, (corrector, _) in CORRECTIONS.items():
        for k, point in enumerate(GRID, start=1):
            run = [
                r
                for r in rows
                if r["scheduler"] == "easy_plus_plus_scheduler"
                and r["corrector"] == corrector
                and all(_same(r[key], v) for key, v in zip(KEYS, point, strict=True))
            ]
            if len(run) != 1:
                raise ValueError(f"{trace} point {k} ({corrector}): {len(run)} rows in their results")
            r = run[0]
            slowdown = float(r["avgbsld"])
            out.append(
                {
                    "trace": trace,
                    "correction": correction,
                    "point": k,
                    "loss": grid_label(point),
                    "jobs": int(r["length"]),
                    "finished": "yes" if r["length"] == easy["length"] else "no",
                    "avgbsld": slowdown,
                    "improvement": 100.0 * (1.0 - slowdown / float(easy["avgbsld"])),
                }
            )
    return out


def ours(out: Path, suffix: str = "") -> dict[tuple[str, str, int], float]:
    """Our full-set grid figures by (trace, correction, point), from the ``<stem><suffix>.csv`` runs
    files that exist."""
    figures = {}
    for correction, (_, stem) in CORRECTIONS.items():
        path = out / f"{stem.removesuffix('_runs')}{suffix}_runs.csv"
        if not path.exists():
            continue
        for r in csv.DictReader(path.open()):
            if r["point"]:
                figures[r["trace"], correction, int(r["point"])] = float(r["improvement_over_easy_fcfs_pct"])
    return figures


def compare(theirs: list[dict], mine: dict[tuple[str, str, int], float]) -> list[dict]:
    """Per trace and correction run by us: Spearman over finished points, distances, the C-V
    point's place."""
    rows = []
    for correction in CORRECTIONS:
        for trace in TRACES:
            if (trace, correction, 1) not in mine:
                continue
            done = [t for t in theirs if t["trace"] == trace and t["correction"] == correction]
            done = [t for t in done if t["finished"] == "yes"]
            pairs = [(mine[trace, correction, int(t["point"])], float(t["improvement"])) for t in done]
            gaps = [abs(a - b) for a, b in pairs]
            by_point = {int(t["point"]): float(t["improvement"]) for t in done}
            cv = by_point.get(1)
            rows.append(
                {
                    "trace": trace,
                    "correction": correction,
                    "finished points": len(pairs),
                    "Spearman": f"{spearmanr([a for a, _ in pairs], [b for _, b in pairs])[0]:.2f}",
                    "ours C-V": f"{mine[trace, correction, 1]:.2f}",
                    "theirs C-V": "unfinished" if cv is None else f"{cv:.2f}",
                    "C-V rank in theirs (1 = lowest)": ""
                    if cv is None
                    else f"{sorted(by_point.values()).index(cv) + 1}/{len(by_point)}",
                    "theirs median": f"{statistics.median(by_point.values()):.2f}",
                    "median |ours - theirs|": f"{statistics.median(gaps):.2f}",
                    "max |ours - theirs|": f"{max(gaps):.2f}",
                    "C-V |ours - theirs|": ""
                    if cv is None
                    else f"{abs(mine[trace, correction, 1] - cv):.2f}",
                }
            )
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metrics-dir", type=Path, help="their experiments/data (to extract again)")
    parser.add_argument("--no-starvation-threshold", action="store_true", help="D28: our *_nothreshold runs")
    parser.add_argument("--jitter-seed", type=count(0), default=0, help="D28b: our *_seed<N> runs (0: none)")
    args = parser.parse_args(argv)
    if args.metrics_dir is not None:
        missing = [
            t for t in TRACES if not (args.metrics_dir / t / "sim_analysis" / "metrics_complete").exists()
        ]
        if missing:
            parser.error(f"--metrics-dir: no <trace>/sim_analysis/metrics_complete for {', '.join(missing)}")
        theirs = []
        for trace in TRACES:
            theirs += extract(
                trace, read_metrics(args.metrics_dir / trace / "sim_analysis" / "metrics_complete")
            )
        write_table(OUT, "gaussier_grid_theirs", theirs, THEIRS)
    theirs = list(csv.DictReader((OUT / "gaussier_grid_theirs.csv").open()))
    suffix = "_nothreshold" if args.no_starvation_threshold else ""
    suffix += f"_seed{args.jitter_seed}" if args.jitter_seed else ""
    table = compare(theirs, ours(OUT, suffix))
    if not table:
        parser.error(f"no runs of ours ({suffix or 'the committed ones'}) in {OUT}")
    write_table(OUT, f"gaussier_grid_vs_theirs{suffix}", table, list(table[0]))
    for r in table:
        print(r)


if __name__ == "__main__":
    main()
