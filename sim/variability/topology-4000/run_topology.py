"""TOPOLOGY on the held-out trials: is RUSH-MOVE's held-out removal topology packing's?

    python sim/variability/topology-4000/run_topology.py VARIANT SCENARIOS FIRST N OUT.csv.gz

TOPOLOGY is FCFS+EASY with the topology placement RUSH-MOVE gives every job and no predictor. It is
not a policy of ``rush experiment variability``: it exists only in the development tooling
(``dev/move_diag.py``, round five's k), which runs each trial as the study does (the committed
campaign's models and bar, the study file's machine and noise, seed 0). move_diag.py refuses
trials 4000–4009 because changes are tried on development trials only; this script runs only
TOPOLOGY, a diagnostic with nothing to tune, on them, once. Rows have the columns of
``results/runs.csv.gz`` (the cause attribution left empty) plus the leaves each job ran on.
"""

from __future__ import annotations

import csv
import gzip
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dev"))

from move_diag import run  # noqa: E402
from trial_cell import cell  # noqa: E402


def main(variant: str, scenarios: str, first: str, n: str, dest: str) -> None:
    rows = []
    for s in scenarios.split(","):
        for t in range(int(first), int(first) + int(n)):
            rows += run(cell(variant, s, t, "TOPOLOGY"))
            print(f"TOPOLOGY {variant} {s} {t}: {len(rows)} rows so far", flush=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with gzip.open(dest, "wt", newline="") as fh:
        w = csv.DictWriter(fh, keys)
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main(*sys.argv[1:])
