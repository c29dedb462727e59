"""The development table of sim/variability/README.md ("Changes tried on development trials").

    python sim/variability/dev/dev_table.py OUT/results/runs.csv.gz [LABEL]

Per variant, scenario and policy, means per trial: runs with variation, removed against
FCFS+EASY, the share of the present-state oracle's removal, makespan change (last end) and
skip-limit hits (jobs started flagged with their skips at the limit; RUSH-MOVE's moves are not
counted). Prints a markdown table.
"""

from __future__ import annotations

import csv
import gzip
from collections import defaultdict

from rush.studies.script_args import run_main


def main(path: str, label: str = "") -> None:
    var: dict[tuple, float] = defaultdict(float)
    end: dict[tuple, float] = defaultdict(float)
    hits: dict[tuple, float] = defaultdict(float)
    with gzip.open(path, "rt") as fh:
        for r in csv.DictReader(fh):
            key = (r["variant"], r["scenario"], r["policy"], r["trial"])
            var[key] += r["variation"] == "True"
            end[key] = max(end[key], float(r["end"]))
            limit = int(r["skip_limit"])
            hits[key] += r["limit_hit"] == "True" and 0 < limit <= int(r["skips"])
    cells: dict[tuple, list] = defaultdict(list)
    for v, s, p, t in var:
        cells[(v, s, p)].append(t)
    print(
        f"| {label or 'variant'} | scenario | policy | runs with variation | removed | share of present | "
        "Δmakespan | limit hits |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (v, s, p), trials in sorted(cells.items()):
        base = [(v, s, "FCFS+EASY", t) for t in trials]
        if any(b not in var for b in base):
            continue
        mean = sum(var[(v, s, p, t)] for t in trials) / len(trials)
        fcfs = sum(var[b] for b in base) / len(trials)
        pres = [(v, s, "PRESENT-ORACLE", t) for t in trials]
        share = "—"
        if all(k in var for k in pres) and p != "FCFS+EASY":
            removed_present = fcfs - sum(var[k] for k in pres) / len(trials)
            share = f"{(fcfs - mean) / removed_present:.0%}" if removed_present > 0 else "n/a"
        mk = sum(end[(v, s, p, t)] / end[b] - 1 for t, b in zip(trials, base, strict=True)) / len(trials)
        lh = sum(hits[(v, s, p, t)] for t in trials) / len(trials)
        print(f"| {v} | {s} | {p} | {mean:.1f} | {fcfs - mean:+.1f} | {share} | {mk:+.2%} | {lh:.1f} |")


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
