"""Round five's RUSH-MOVE diagnosis on development trials (never 4000–4009).

    python sim/variability/dev/move_diag.py VARIANT SCENARIO FIRST N POLICY[,POLICY...] OUT.csv

Runs each trial as ``rush experiment variability`` does (the same cell, the committed campaign's
models and bar: ``sim/variability/paper`` or ``sim/variability/multipod/multipod``) and writes one
row per job with what runs.csv.gz leaves out: the leaves and pods it ran on, whether the learned
model flagged it at its start decision, and (for RUSH-MOVE) whether it was moved. Policies are the
study's, plus ``RUSH-MOVE-NOPOD`` (RUSH-MOVE with the core told of no pods: before the
quiet-pod rule), ``RUSH-MOVE-LEAF`` (every leaf its own pod: a flagged job is moved only
onto one quiet leaf, else held: change g) and ``TOPOLOGY`` (FCFS+EASY with the topology placement RUSH-MOVE uses for every job,
no predictor: what packing alone does); round six's ``RUSH-LEAF`` (RUSH with the core's
``one-leaf`` placement: a flagged job starts on one leaf or waits, change j; not kept, so it needs
the core of commit ad12867) and
``RUSH-PERPASS`` (RUSH with every pass counting a skip, periodic ones too: change l),
``PRESENT-LEAF`` (the present-state oracle with the ``one-leaf`` placement: diagnostic m; commit
ad12867's core too). ``RUSH_DEV_MODELS=DIR`` reads the paper variant's models from DIR (changes n, o).
``POLICY@LABEL`` runs the study's POLICY with the rush
on the path and labels its rows ``POLICY@LABEL`` (round six: one copy of ``rush/`` per rule).
"""

from __future__ import annotations

import csv
from dataclasses import replace

import numpy as np
from trial_cell import cell, without_attribution

from rush.contention.shell import Oracle
from rush.studies.script_args import run_main


def run(c: dict, predictor: Oracle | None = None) -> list[dict]:
    """run_trial's set-up, keeping each job's hosts and the predictor's answers. ``predictor``
    (``diagnostic_predictors.py``'s) answers in place of the policy's model (run_trial's)."""
    import rush.contention.experiment as ex
    from rush.contention.shell import Simulation

    kept: dict = {}
    orig = Simulation.run

    def spy(self):
        out = orig(self)
        kept["results"], kept["sim"] = out, self
        return out

    import rush.contention.shell as sh

    policy = c["policy"]
    if "@" in policy:  # POLICY@LABEL: the study's POLICY, run by the rush on the path, labelled
        c = c | {"policy": policy.split("@")[0]}
    nopod = policy == "RUSH-MOVE-NOPOD"  # RUSH-MOVE as before the quiet-pod rule: the core sees no pods
    if nopod:
        c = c | {"policy": "RUSH-MOVE"}
    machine_nodes = sh.machine_nodes
    # Every leaf its own pod: a flagged job moves within one leaf or waits (change g).
    leafpod = policy == "RUSH-MOVE-LEAF"
    if leafpod:
        c = c | {"policy": "RUSH-MOVE"}
        sh.machine_nodes = lambda fabric: tuple(replace(n, pod=n.leaf) for n in machine_nodes(fabric))
    if nopod:
        sh.machine_nodes = lambda fabric: tuple(replace(n, pod=0) for n in machine_nodes(fabric))
    if policy == "TOPOLOGY":
        c = c | {"policy": "FCFS+EASY", "placement": "topology"}
    # Change j: RUSH with the core's one-leaf placement (a flagged job on one leaf, else skipped).
    if policy in ("RUSH-LEAF", "PRESENT-LEAF"):
        base = "RUSH" if policy == "RUSH-LEAF" else "PRESENT-ORACLE"
        c = c | {"policy": base}
        ex.PLACEMENT[base] = "one-leaf"
    # Change l: every pass counts a skip (the rule before round four's merge), periodic ones too.
    orig_pass = Simulation._pass
    if policy == "RUSH-PERPASS":
        c = c | {"policy": "RUSH"}
        Simulation._pass = lambda self, *a: orig_pass(self, *a[:-1], "event")
    Simulation.run = spy
    try:
        with without_attribution():
            rows = ex.run_trial(c, predictor=predictor)
    finally:
        Simulation.run = orig
        Simulation._pass = orig_pass
        ex.PLACEMENT.pop("RUSH", None)
        ex.PLACEMENT.pop("PRESENT-ORACLE", None)
        sh.machine_nodes = machine_nodes
    machine, _ = ex.cell_machine(c)
    sim = kept["sim"]
    first_flag: dict[int, bool] = {}
    last_flag: dict[int, bool] = {}
    oracle_flag: dict[int, bool] = {}
    for r in rows:
        if r["kind"] == "prediction":
            first_flag.setdefault(r["job_id"], r["flag"])
            last_flag[r["job_id"]] = r["flag"]
            oracle_flag[r["job_id"]] = r["oracle_flag"]
    hosts = {r.job_id: r.hosts for r in kept["results"]}
    out = []
    for r in rows:
        if r["kind"] != "job":
            continue
        idx = sim.node_indices(hosts[r["job_id"]])
        leaves = np.unique(machine.leaf_of[idx])
        pods = np.unique(machine.pod_of[idx])
        out.append(
            {k: v for k, v in r.items() if k != "kind"}
            | {
                "policy": policy,
                "variant": c["variant"],
                "scenario": c["scenario"],
                "trial": c["trial"],
                "leaves": len(leaves),
                "pods": len(pods),
                "leaf_ids": " ".join(map(str, leaves)),
                "flag_first": first_flag.get(r["job_id"], ""),
                "flag_last": last_flag.get(r["job_id"], ""),
                "oracle_last": oracle_flag.get(r["job_id"], ""),
            }
        )
    return out


def main(variant: str, scenario: str, first: str, n: str, policies: str, dest: str) -> None:
    rows = []
    for t in range(int(first), int(first) + int(n)):
        if t >= 4000:
            raise SystemExit("development trials only (4000–4009 are held out)")
        for p in policies.split(","):
            rows += run(cell(variant, scenario, t, p))
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(dest, "w", newline="") as fh:
        w = csv.DictWriter(fh, keys)
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
