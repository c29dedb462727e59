"""Rerun one policy of the study on trials already committed, at this code, beside the committed runs.

    python sim/variability/dev/rerun_policy.py VARIANT SCENARIOS FIRST N POLICY COMMITTED.csv.gz[,...] OUT.csv.gz

Each trial is run_trial's cell as ``rush experiment variability`` builds it (the committed campaign's
models and bar: ``sim/variability/paper`` or ``sim/variability/multipod/multipod``; the study file's
machine and noise), so its rows have the columns of ``results/runs.csv.gz``. OUT holds the
committed rows of every other policy and this policy's new rows: ``ten_trials.py OUT`` then pools
it with the same method as the README. Before the policy runs, FCFS+EASY's first trial is rerun
(without the cause attribution) and compared job by job with the committed one: the check that
the trials are the committed ones.

``RUSH_DEV_MODELS=DIR`` runs the paper variant's models of DIR (``dev/present_label.py``'s): a
model whose card says ``label: present-state`` runs under a policy of that label
(RUSH-PRESENT-LABEL, RUSH-MOVE-PRESENT-LABEL), as the study runs it; a policy of the other label
stops naming those (``trial_cell.dev_models``). ``RUSH_DEV_NAME`` writes the new rows under
another policy name.
"""

from __future__ import annotations

import csv
import gzip
import os

from trial_cell import cell, without_attribution

from rush.studies.script_args import run_main


def rows_of(c: dict, attribute: bool = True) -> list[dict]:
    import rush.contention.experiment as ex

    if attribute:
        rows = ex.run_trial(c)
    else:
        with without_attribution():
            rows = ex.run_trial(c)
    head = {k: c[k] for k in ("variant", "scenario", "policy", "trial")}
    return [head | {k: v for k, v in r.items() if k != "kind"} for r in rows if r["kind"] == "job"]


def main(variant: str, scenarios: str, first: str, n: str, policy: str, committed: str, out: str) -> None:
    old = []
    for path in committed.split(","):
        with gzip.open(path, "rt") as fh:
            old += list(csv.DictReader(fh))
    columns = list(old[0])
    trials = range(int(first), int(first) + int(n))
    scen = scenarios.split(",")
    check = scen[0]
    mine = {
        r["job_id"]: r
        for r in old
        if (r["variant"], r["scenario"], r["policy"], int(r["trial"]))
        == (variant, check, "FCFS+EASY", trials[0])
    }
    again = rows_of(cell(variant, check, trials[0], "FCFS+EASY"), attribute=False)
    differ = [
        r["job_id"]
        for r in again
        if abs(float(mine[str(r["job_id"])]["start"]) - r["start"]) > 1e-6
        or abs(float(mine[str(r["job_id"])]["end"]) - r["end"]) > 1e-6
    ]
    if len(again) != len(mine) or differ:
        raise SystemExit(
            f"FCFS+EASY {variant} {check} {trials[0]} differs from the committed run: {differ[:5]}"
        )
    print(f"check: FCFS+EASY {variant} {check} trial {trials[0]}: {len(again)} jobs as committed", flush=True)
    new = [r for s in scen for t in trials for r in rows_of(cell(variant, s, t, policy))]
    name = os.environ.get("RUSH_DEV_NAME")
    if name:  # the new rows under their own name; the committed rows of ``policy`` are kept
        new = [r | {"policy": name} for r in new]
        policy = name
    kept = [
        r for r in old if not (r["policy"] == policy and r["scenario"] in scen and int(r["trial"]) in trials)
    ]
    with gzip.open(out, "wt", newline="") as fh:
        w = csv.DictWriter(fh, columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(kept)
        w.writerows(new)


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
