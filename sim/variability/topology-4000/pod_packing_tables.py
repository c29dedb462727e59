"""tables of POD-PACKING on multipod 4000–4004 beside TOPOLOGY and the committed RUSH-MOVE.

    python sim/variability/topology-4000/pod_packing_tables.py POD-PACKING.csv.gz TOPOLOGY.csv.gz \
        COMMITTED.csv.gz [...]

Per scenario and trial: runs with variation and makespan of FCFS+EASY, RUSH-MOVE (committed rows),
TOPOLOGY and POD-PACKING (diagnostic rows); for the two diagnostics, the jobs that ran across pods
and how many of those varied (committed rows carry no placement); how many of RUSH-MOVE's jobs
POD-PACKING starts and ends at the same time. Then ``ten_trials.py`` over all the rows.
"""

from __future__ import annotations

import csv
import gzip
import sys
from collections import defaultdict
from pathlib import Path

from rush.studies.script_args import run_main

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ten_trials  # noqa: E402

TOL = 1e-6
VARIANT = "multipod"


def read(paths: list[str], policies: set[str]) -> dict[tuple, dict[str, dict]]:
    out: dict[tuple, dict[str, dict]] = defaultdict(dict)
    for path in paths:
        with gzip.open(path, "rt") as fh:
            for r in csv.DictReader(fh):
                if r["variant"] == VARIANT and r["policy"] in policies:
                    key = (r["scenario"], int(r["trial"]), r["policy"])
                    out[key].setdefault(r["job_id"], r)
    return out


def varied(jobs: dict) -> int:
    return sum(r["variation"] in ("True", "1") for r in jobs.values())


def makespan(jobs: dict) -> float:
    return max(float(r["end"]) for r in jobs.values()) - min(float(r["submit"]) for r in jobs.values())


def across(jobs: dict) -> tuple[int, int]:
    multi = [r for r in jobs.values() if int(r["pods"]) > 1]
    return len(multi), sum(r["variation"] in ("True", "1") for r in multi)


def same(a: dict, b: dict, col: str) -> int:
    return sum(abs(float(a[j][col]) - float(b[j][col])) < TOL for j in a if j in b)


def main(pod: str, topo: str, *committed: str) -> None:
    rows = read([pod, topo, *committed], {"FCFS+EASY", "RUSH-MOVE", "TOPOLOGY", "POD-PACKING"})
    print("# POD-PACKING beside TOPOLOGY and the committed RUSH-MOVE (multipod variant)\n")
    print(
        "| scenario | trial | runs with variation: FCFS+EASY / RUSH-MOVE / TOPOLOGY / POD-PACKING "
        "| makespan s: FCFS+EASY / RUSH-MOVE / TOPOLOGY / POD-PACKING "
        "| jobs across pods (varied): TOPOLOGY / POD-PACKING "
        "| POD-PACKING = RUSH-MOVE: same start / same end |"
    )
    print("|---|---|---|---|---|---|")
    for s, t in sorted({(s, t) for s, t, p in rows if p == "POD-PACKING"}):
        cells = {p: rows.get((s, t, p), {}) for p in ("FCFS+EASY", "RUSH-MOVE", "TOPOLOGY", "POD-PACKING")}
        if not all(cells.values()):
            continue
        v = " / ".join(str(varied(c)) for c in cells.values())
        m = " / ".join(f"{makespan(c):.0f}" for c in cells.values())
        a = " / ".join("{} ({})".format(*across(cells[p])) for p in ("TOPOLOGY", "POD-PACKING"))
        pp, rm = cells["POD-PACKING"], cells["RUSH-MOVE"]
        print(
            f"| {s} | {t} | {v} | {m} | {a} | {same(pp, rm, 'start')} / {same(pp, rm, 'end')} of {len(pp)} |"
        )
    print("\nTotals (`ten_trials.py` over POD-PACKING's, TOPOLOGY's and the committed rows):\n")
    sys.argv = ["ten_trials.py", pod, topo, *committed, "--variant", VARIANT]
    ten_trials.main()


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
