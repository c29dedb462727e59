"""The table of round five's RUSH-MOVE changes (sim/variability/dev/log.md, e–g).

    python sim/variability/dev/move_table.py OUT.csv [OUT.csv ...]     (or .csv.gz)

Reads move_diag.py's rows; per variant, scenario and policy, means per trial over the trials
every policy ran: runs with variation, removed against FCFS+EASY, share of the present-state
oracle's removal (when it ran), makespan change, limit hits (starts at skips >= limit), jobs
started flagged and moved (RUSH-MOVE's quiet starts), jobs across pods and their variation.
"""

from __future__ import annotations

import csv
import gzip
from collections import defaultdict

from rush.studies.script_args import run_main


def main(paths: list[str]) -> None:
    rows = [r for p in paths for r in csv.DictReader(gzip.open(p, "rt") if p.endswith(".gz") else open(p))]
    per: dict[tuple, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in rows:
        a = per[(r["variant"], r["scenario"], r["policy"], r["trial"])]
        a["var"] += r["variation"] == "True"
        a["end"] = max(a["end"], float(r["end"]))
        a["hits"] += r["limit_hit"] == "True" and int(r["skips"]) >= int(r["skip_limit"]) > 0
        a["moved"] += r["limit_hit"] == "True" and int(r["skips"]) < int(r["skip_limit"])
        a["xpod"] += int(r["pods"]) > 1
        a["xpod_var"] += int(r["pods"]) > 1 and r["variation"] == "True"
    cells: dict[tuple, set] = defaultdict(set)
    for v, s, p, t in per:
        cells[(v, s, p)].add(t)
    print(
        "| variant | scenario | policy | trials | runs with variation | removed | share of present | "
        "Δmakespan | limit hits | moved (flagged, quiet start) | jobs across pods (of them varied) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for v, s in sorted({(v, s) for v, s, _ in cells}):
        trials = set.intersection(*(ts for (v2, s2, _), ts in cells.items() if (v2, s2) == (v, s)))
        n = len(trials)
        if not n or (v, s, "FCFS+EASY") not in cells:
            continue

        def mean(p: str, k: str, v=v, s=s, trials=trials, n=n) -> float:
            return sum(per[(v, s, p, t)][k] for t in trials) / n

        fcfs = mean("FCFS+EASY", "var")
        present = fcfs - mean("PRESENT-ORACLE", "var") if (v, s, "PRESENT-ORACLE") in cells else None
        for p in sorted({p for v2, s2, p in cells if (v2, s2) == (v, s)}):
            removed = fcfs - mean(p, "var")
            share = f"{removed / present:.0%}" if present and p != "FCFS+EASY" else "—"
            mk = sum(per[(v, s, p, t)]["end"] / per[(v, s, "FCFS+EASY", t)]["end"] - 1 for t in trials) / n
            print(
                f"| {v} | {s} | {p} | {n} | {mean(p, 'var'):.1f} | {removed:+.1f} | {share} | {mk:+.2%} | "
                f"{mean(p, 'hits'):.1f} | {mean(p, 'moved'):.1f} | {mean(p, 'xpod'):.1f} ({mean(p, 'xpod_var'):.1f}) |"
            )


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
