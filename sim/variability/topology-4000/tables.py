"""tables.md of topology-4000: TOPOLOGY beside the committed RUSH-MOVE, job by job and in totals.

    python sim/variability/topology-4000/tables.py [--variant paper] TOPOLOGY.csv.gz COMMITTED.csv.gz [...]

Job by job, per scenario and trial: how many of RUSH-MOVE's committed jobs TOPOLOGY starts at the
same time (within 1e-6 s), ends at the same time (the same runtime, hence the same slowdown), and
gives the same variation verdict; the first jobs that differ. Committed rows carry no leaves, so
"same nodes" is read from the same start and end. Totals: ``ten_trials.py`` over TOPOLOGY's rows
and the committed ones (FCFS+EASY, PRESENT-ORACLE, RUSH-MOVE: shares of the present-state oracle's
removal with its intervals).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ten_trials  # noqa: E402

TOL = 1e-6


def read(path: str, variant: str, policies: set[str]) -> dict[tuple, dict[str, dict]]:
    out: dict[tuple, dict[str, dict]] = defaultdict(dict)
    with gzip.open(path, "rt") as fh:
        for r in csv.DictReader(fh):
            if r["variant"] == variant and r["policy"] in policies:
                out[(r["scenario"], int(r["trial"]), r["policy"])][r["job_id"]] = r
    return out


def job_by_job(topo: dict, committed: dict) -> list[str]:
    lines = [
        "| scenario | trial | jobs | same start | same end | same variation | TOPOLOGY leaves/job | differing jobs |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s, t, _ in sorted(k for k in topo):
        new = topo[(s, t, "TOPOLOGY")]
        old = committed.get((s, t, "RUSH-MOVE"))
        if old is None:
            continue
        common = [j for j in old if j in new]
        start = [j for j in common if abs(float(old[j]["start"]) - float(new[j]["start"])) <= TOL]
        end = [j for j in common if abs(float(old[j]["end"]) - float(new[j]["end"])) <= TOL]
        var = [j for j in common if old[j]["variation"] == new[j]["variation"]]
        differ = sorted(set(common) - (set(start) & set(end) & set(var)), key=int)
        missing = len(old) - len(common) + len(new) - len(common)
        leaves = sum(int(new[j]["leaves"]) for j in new) / len(new)
        note = ", ".join(differ[:8]) + (" …" if len(differ) > 8 else "") if differ else "none"
        if missing:
            note += f"; {missing} jobs in one run only"
        lines.append(
            f"| {s} | {t} | {len(old)} | {len(start)} | {len(end)} | {len(var)} | {leaves:.2f} | {note} |"
        )
    return lines


def main() -> None:
    from rush.contention.experiment import VARIANTS
    from rush.studies.arg_types import existing_file

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("topology", type=existing_file)
    ap.add_argument("committed", nargs="+", type=existing_file)
    ap.add_argument("--variant", default="paper", choices=tuple(VARIANTS))
    a = ap.parse_args()
    topo = read(a.topology, a.variant, {"TOPOLOGY"})
    committed: dict = {}
    for p in a.committed:
        for k, v in read(p, a.variant, {"RUSH-MOVE"}).items():
            committed.setdefault(k, v)
    print(f"# TOPOLOGY beside the committed RUSH-MOVE ({a.variant} variant)\n")
    print("Job by job (RUSH-MOVE's committed rows against TOPOLOGY's):\n")
    print("\n".join(job_by_job(topo, committed)))
    print("\nTotals (`ten_trials.py`, TOPOLOGY's rows first, then the committed ones):\n")
    sys.argv = ["ten_trials.py", a.topology, *a.committed, "--variant", a.variant]
    ten_trials.main()


if __name__ == "__main__":
    main()
