"""POD-PACKING on the held-out multipod trials: does pod-aware packing alone do what RUSH-MOVE does?

    python sim/variability/topology-4000/run_pod_packing.py VARIANT SCENARIOS FIRST N OUT.csv.gz

POD-PACKING is RUSH-MOVE's rules (variability placement, the pod rule, the pod wait, skip-with-limit
10) with the learned predictor replaced by one that flags every job it is asked about and calls
every leaf quiet. So every job gets what a flagged job gets on the multipod machine (the pod rule,
and, when only a placement across pods holds it, the pod wait: it waits as EASY's head for room in
one pod, its reservation inside one pod, no skip counted), while the quiet-leaf choice is empty
(every leaf is quiet, so the quiet try is packing with the pod rule) and skip-with-limit never
fires (the quiet try fails only when no one pod holds the job, which is the pod wait, or when the
job does not fit at all). No probe is simulated and no model is read for the flags. Not a policy of
``rush experiment variability``: a diagnostic of the development tooling (``dev/move_diag.py``'s
``run``, the committed campaign, the study file's machine and noise, seed 0), run once on the
held-out trials like ``run_topology.py``. Rows as ``run_topology.py``'s, policy ``POD-PACKING``.
"""

from __future__ import annotations

import csv
import gzip
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dev"))

from move_diag import run  # noqa: E402
from trial_cell import cell  # noqa: E402


def flag_all(self, present, asked):  # LearnedOracle.__call__: every job asked about is flagged
    self.asked += len(asked)
    self.flagged += len(asked)
    return [True] * len(asked)


def all_quiet(self, present):  # LearnedOracle.quiet_leaves: every leaf quiet
    return np.ones(present.fabric.machine.leaves, dtype=bool)


def main(variant: str, scenarios: str, first: str, n: str, dest: str) -> None:
    from rush.contention.oracles import LearnedOracle

    LearnedOracle.__call__ = flag_all
    LearnedOracle.quiet_leaves = all_quiet
    rows = []
    for s in scenarios.split(","):
        for t in range(int(first), int(first) + int(n)):
            rows += [r | {"policy": "POD-PACKING"} for r in run(cell(variant, s, t, "RUSH-MOVE"))]
            print(f"POD-PACKING {variant} {s} {t}: {len(rows)} rows so far", flush=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with gzip.open(dest, "wt", newline="") as fh:
        w = csv.DictWriter(fh, keys)
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main(*sys.argv[1:])
