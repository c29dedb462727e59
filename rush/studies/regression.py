"""Evaluation of regression-obtained heuristics as policies: the sweep's cells and task.

One cell is one workload: a Lublin-Feitelson run (``{"source": "lublin", "run": k, "jobs": n}``,
256 processors, seed k) or one week of a real trace (``{"source": "SDSC-SP2", "week": k}``,
simulated alone on an empty machine, as ``rush sweep`` cuts weeks). The task simulates it under
every policy of the cell, with and without EASY backfilling, on requested times (p~, the
scheduler's only runtime knowledge), no starvation threshold (the papers compare the bare
orders), and returns one row per (policy, backfilling) with the mean bounded slowdown.

r, the submit-time feature of F1-F4 and of the learned heuristics, counts from the workload's
first submit (the run's start, the week's start); in training it counts from the branching
time of the pair, a few hours at most, so on a week r reaches values the fit never saw.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# LIN is the published linear heuristic (rush.core.policies), next to the Lin fitted here.
BASELINES: tuple[str, ...] = ("FCFS", "SPF", "SAF", "F1", "F2", "F3", "F4", "LIN")
BACKFILLS: tuple[str, ...] = ("none", "easy")
LUBLIN_PROCS = 256


def trace_resource(spec: str) -> str:
    return f"trace:{spec}"


def _workload(cell: dict, resources: Any):
    from rush.workload.lublin import lublin_generate
    from rush.workload.model import workload_from_trace

    if cell["source"] == "lublin":
        trace = lublin_generate(int(cell["jobs"]), LUBLIN_PROCS, seed=int(cell["run"]))
        return workload_from_trace(trace)
    sliced = resources[trace_resource(cell["source"])]
    return sliced.week(int(cell["week"]), where=f"{cell['source']} week")


def evaluate_cell(cell: dict, resources: Any) -> list[dict]:
    """Rows (policy label, backfill, mean BSLD, ...) for one workload under the cell's policies."""
    from rush.core.config import CoreConfig
    from rush.models.policies.heuristic_file import parse_policy_text
    from rush.simulator.engine import simulate
    from rush.simulator.metrics import compute_metrics

    workload = _workload(cell, resources)
    origin = float(workload.submit.min())
    rows = []
    for label, policy in cell["policies"]:
        for backfill in cell.get("backfills", BACKFILLS):
            config = CoreConfig.from_names(parse_policy_text(policy), backfill, threshold=None)
            result = simulate(workload, config, time_origin=origin)
            metrics = compute_metrics(result, tau=10.0)
            rows.append(
                {
                    "policy": label,
                    "backfill": backfill,
                    "n_jobs": int(metrics["jobs"]),
                    "mean_bsld": float(metrics["mean_bounded_slowdown"]),
                    "mean_wait": float(metrics["mean_wait"]),
                    "utilization": float(metrics["utilization"]),
                }
            )
    return rows


def trace_weeks(spec: str, count: int, min_jobs: int = 50) -> list[int]:
    """``count`` weeks of ``spec`` spread evenly over its weeks with at least ``min_jobs`` jobs."""
    from rush.studies.sweep.simulation import load_sliced

    sizes = load_sliced(spec).week_sizes()
    usable = np.flatnonzero(sizes >= min_jobs)
    if len(usable) <= count:
        return usable.tolist()
    pick = np.unique(np.linspace(0, len(usable) - 1, count).round().astype(int))
    return usable[pick].tolist()


def summarise(rows: list[dict]) -> list[dict]:
    """Per (source, backfill, policy): mean, median of the mean BSLD over workloads, and the
    geometric mean of its ratio to SAF and to FCFS on the same workload."""
    from collections import defaultdict

    by: dict[tuple, dict[str, float]] = defaultdict(dict)
    for row in rows:
        if "error" in row and row.get("error"):
            continue
        unit = (row.get("run"), row.get("week"))
        by[(row["source"], row["backfill"], unit)][row["policy"]] = float(row["mean_bsld"])
    table: dict[tuple, list[tuple[float, float, float]]] = defaultdict(list)
    for (source, backfill, _), values in by.items():
        for policy, v in values.items():
            saf, fcfs = values.get("SAF", np.nan), values.get("FCFS", np.nan)
            table[(source, backfill, policy)].append((v, v / saf, v / fcfs))
    out = []
    for (source, backfill, policy), items in sorted(table.items()):
        arr = np.asarray(items)
        out.append(
            {
                "source": source,
                "backfill": backfill,
                "policy": policy,
                "workloads": len(arr),
                "mean_bsld": float(arr[:, 0].mean()),
                "median_bsld": float(np.median(arr[:, 0])),
                "gmean_ratio_to_saf": float(np.exp(np.mean(np.log(arr[:, 1])))),
                "gmean_ratio_to_fcfs": float(np.exp(np.mean(np.log(arr[:, 2])))),
            }
        )
    return out
