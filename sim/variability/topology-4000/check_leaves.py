"""The leaves check: RUSH-MOVE rerun on held-out trials, its jobs' leaves beside TOPOLOGY's.

    python sim/variability/topology-4000/check_leaves.py VARIANT SCENARIOS TRIAL TOPOLOGY.csv.gz

The committed RUSH-MOVE rows carry no leaves; this reruns RUSH-MOVE on one trial through
``dev/move_diag.py`` (the committed campaign's models, as the study runs it) and counts the jobs
whose leaves are TOPOLOGY's (``run_diagnostic.py TOPOLOGY``'s rows) and RUSH-MOVE's flagged starts. Prints
one line per scenario.
"""

from __future__ import annotations

import csv
import gzip
import sys
from pathlib import Path

from rush.studies.script_args import run_main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dev"))

from move_diag import run  # noqa: E402
from trial_cell import cell  # noqa: E402


def main(variant: str, scenarios: str, trial: str, topology: str) -> None:
    with gzip.open(topology, "rt") as fh:
        topo = {(r["scenario"], int(r["trial"]), r["job_id"]): r for r in csv.DictReader(fh)}
    t = int(trial)
    for s in scenarios.split(","):
        rows = run(cell(variant, s, t, "RUSH-MOVE"))
        same = sum(topo[(s, t, str(r["job_id"]))]["leaf_ids"] == r["leaf_ids"] for r in rows)
        flagged = sum(r["limit_hit"] is True for r in rows)
        print(
            f"RUSH-MOVE {variant} {s} {t}: {len(rows)} jobs, on TOPOLOGY's leaves {same}, flagged starts {flagged}",
            flush=True,
        )


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
