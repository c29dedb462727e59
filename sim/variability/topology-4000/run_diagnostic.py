"""TOPOLOGY or POD-PACKING on held-out trials: is RUSH-MOVE's removal packing's?

    python sim/variability/topology-4000/run_diagnostic.py POLICY VARIANT SCENARIOS FIRST N OUT.csv.gz

Two diagnostics with nothing to tune, run once on the held-out trials through the development
tooling (``dev/move_diag.py``'s ``run``: each trial as the study runs it, the committed campaign's
models and bar, the study file's machine and noise, seed 0; the cause attribution left empty).
``move_diag.py`` itself refuses trials 4000–4009, since changes are tried on development trials.
Neither is a policy of ``rush experiment variability``.

* ``TOPOLOGY``: FCFS+EASY with the topology placement RUSH-MOVE gives every job, no predictor
  (the cell's ``placement``).
* ``POD-PACKING``: RUSH-MOVE's rules (variability placement, the pod rule, the pod wait,
  skip-with-limit 10) with the learned predictor replaced by ``dev/diagnostic_predictors.py``'s
  ``FlagEvery`` (every job asked about flagged, every leaf quiet): every job gets what a flagged
  job gets on the multipod machine (the pod rule, and, when only a placement across pods holds it,
  the pod wait), the quiet-leaf choice is empty and skip-with-limit never fires. No probe is
  simulated and no model read.

Rows have the columns of ``results/runs.csv.gz`` plus the leaves each job ran on.
"""

from __future__ import annotations

import csv
import gzip
import sys
from pathlib import Path

from rush.studies.script_args import run_main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dev"))

from diagnostic_predictors import FlagEvery  # noqa: E402
from move_diag import run  # noqa: E402
from trial_cell import cell  # noqa: E402

DIAGNOSTICS = ("TOPOLOGY", "POD-PACKING")


def rows_of(policy: str, variant: str, scenario: str, trial: int, scale: float = 1.0) -> list[dict]:
    """One trial of the diagnostic ``policy``, its rows under the diagnostic's name (``scale``
    shrinks the trial's job count, for tests)."""
    if policy == "TOPOLOGY":
        return run(cell(variant, scenario, trial, "TOPOLOGY") | {"scale": scale})
    if policy == "POD-PACKING":
        rows = run(cell(variant, scenario, trial, "RUSH-MOVE") | {"scale": scale}, predictor=FlagEvery())
        return [r | {"policy": policy} for r in rows]
    raise SystemExit(f"run_diagnostic.py: unknown diagnostic {policy!r}; use one of {', '.join(DIAGNOSTICS)}")


def main(policy: str, variant: str, scenarios: str, first: str, n: str, dest: str) -> None:
    if policy not in DIAGNOSTICS:
        raise SystemExit(
            f"run_diagnostic.py: unknown diagnostic {policy!r}; use one of {', '.join(DIAGNOSTICS)}"
        )
    rows = []
    for s in scenarios.split(","):
        for t in range(int(first), int(first) + int(n)):
            rows += rows_of(policy, variant, s, t)
            print(f"{policy} {variant} {s} {t}: {len(rows)} rows so far", flush=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with gzip.open(dest, "wt", newline="") as fh:
        w = csv.DictWriter(fh, keys)
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
