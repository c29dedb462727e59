"""Mixed policies on a trace's weeks: evaluation by simulation and the sweep task (Zrigui's thesis, ch. 5).

The policies themselves (features, signs, scales, the core's ``LINEAR`` weights) are
:mod:`rush.models.policies.mixed`; this module simulates them.

Weeks: the trace is cut into weeks from its first (usable) submit, as the weekly slices of
:mod:`rush.workload.resample`; each week's jobs are simulated alone on the empty machine
(EASY backfilling, a starvation threshold) and scored by their mean bounded slowdown. A week
with no job is reported as skipped, never simulated.

:func:`task` is the sweep task (``rush.studies.sweep.run_sweep``): one cell = one policy on some weeks
of one trace, the trace being a per-worker resource (:func:`load_trace_weeks`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from rush.errors import RushError
from rush.models.policies.mixed import (
    MIXED,
    FeatureScales,
    check_features,
    feature_scales,
    linear_policy,
)
from rush.models.policies.mixed_xnes import popsize, run_xnes
from rush.workload.resample import WEEK


@dataclass
class TraceWeeks:
    """A trace's workload cut into weeks, with the trace-wide feature scales."""

    name: str
    workload: Any  # rush.workload.model.Workload
    weeks: list[np.ndarray]  # job indices (into workload) per week since the first submit
    scales: FeatureScales

    def jobs(self, week: int) -> int:
        return len(self.weeks[week]) if 0 <= week < len(self.weeks) else 0


def week_indices(submit: np.ndarray) -> list[np.ndarray]:
    """Job indices of each week since the first submit, empty weeks included."""
    if len(submit) == 0:
        return []
    week = ((submit - submit.min()) // WEEK).astype(np.int64)
    count = int(week.max()) + 1
    order = np.argsort(week, kind="stable")
    bounds = np.searchsorted(week[order], np.arange(count + 1))
    return [order[bounds[k] : bounds[k + 1]] for k in range(count)]


def trace_weeks_from_workload(workload: Any, name: str = "") -> TraceWeeks:
    return TraceWeeks(
        name=name or workload.name,
        workload=workload,
        weeks=week_indices(np.asarray(workload.submit, dtype=np.float64)),
        scales=feature_scales(workload.procs, workload.requested_time),
    )


def load_trace_weeks(spec: str, procs: int | None = None) -> TraceWeeks:
    """The resource loader: a catalogue name or a file, read once per worker."""
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    workload = workload_from_trace(load_trace(spec), machine_procs=procs)
    return trace_weeks_from_workload(workload, spec)


def trace_loader(spec: str, procs: int | None = None) -> partial:
    """A picklable zero-argument loader of :func:`load_trace_weeks` (for ``SweepOptions.resources``)."""
    return partial(load_trace_weeks, spec, procs)


def mean_bounded_slowdown(workload: Any, policy: Any, threshold: float | None, tau: float) -> float:
    """Mean bsld of ``workload`` simulated alone under ``policy`` with EASY backfilling."""
    from rush.core.config import CoreConfig
    from rush.simulator.engine import simulate
    from rush.simulator.metrics import bounded_slowdown

    config = CoreConfig(policy=policy, backfill="easy", threshold=threshold)
    result = simulate(workload, config, time_origin=float(workload.submit.min()))
    bsld = bounded_slowdown(result, tau)
    return float(np.mean(bsld)) if not np.isnan(bsld).any() else math.nan


def cell_policy(cell: Mapping[str, Any], scales: FeatureScales):
    """The core policy of a cell: a pure policy name, or MIXED with features and weights."""
    from rush.models.policies.heuristic_file import parse_policy_text

    name = str(cell.get("policy", ""))
    if name == MIXED:
        features = [f for f in str(cell.get("features", "")).split(",") if f]
        return linear_policy(cell.get("weights") or [], features, scales)
    return parse_policy_text(name)


def evaluate(
    tw: TraceWeeks, weeks: Sequence[int], policy: Any, threshold: float | None, tau: float
) -> list[dict]:
    """One row per week: its jobs and mean bsld, or ``skipped`` with the reason (no jobs)."""
    rows = []
    for week in weeks:
        if not 0 <= week < len(tw.weeks):
            raise RushError(
                f"week {week} is outside the trace (weeks 0 to {len(tw.weeks) - 1})",
                where=f"trace {tw.name}",
                fix="choose weeks of the trace",
            )
        index = tw.weeks[week]
        if len(index) == 0:
            rows.append({"week": week, "jobs": 0, "mean_bsld": None, "skipped": "no jobs in this week"})
            continue
        value = mean_bounded_slowdown(tw.workload.subset(index), policy, threshold, tau)
        rows.append({"week": week, "jobs": len(index), "mean_bsld": value, "skipped": None})
    return rows


def task(cell: dict, resources: Mapping[str, Any]) -> list[dict]:
    """Sweep task: ``cell`` = {trace, span: week|trace, weeks, policy, features, weights, threshold, tau}.

    ``span = "trace"`` simulates the whole trace once (the pure-policy ranking; row week -1);
    ``optimiser = "xnes"`` runs a whole XNES search over the cell's weeks (one row).
    """
    tw: TraceWeeks = resources[cell["trace"]]
    if cell.get("optimiser") == "xnes":  # a whole XNES run in one cell (xnes_rows)
        return xnes_rows(cell, tw)
    policy = cell_policy(cell, tw.scales)
    threshold = cell.get("threshold")
    tau = float(cell.get("tau", 10.0))
    if cell.get("span") == "trace":
        value = mean_bounded_slowdown(tw.workload, policy, threshold, tau)
        return [{"week": -1, "jobs": len(tw.workload), "mean_bsld": value, "skipped": None}]
    return evaluate(tw, [int(k) for k in cell["weeks"]], policy, threshold, tau)


def xnes_rows(cell: Mapping[str, Any], tw: Any) -> list[dict]:
    """One XNES run over the cell's weeks: one row with the best w and its value."""
    features = check_features([f for f in str(cell.get("features", "")).split(",") if f])
    weeks = [int(k) for k in cell["weeks"]]
    threshold = cell.get("threshold")
    tau = float(cell.get("tau", 10.0))
    d = len(features)

    def objective(w: np.ndarray) -> float:
        rows = evaluate(tw, weeks, linear_policy(w, features, tw.scales), threshold, tau)
        values = [r["mean_bsld"] for r in rows if r["mean_bsld"] is not None]
        return float(np.mean(values)) if values else math.nan

    w, value, calls = run_xnes(
        objective,
        d,
        int(cell["evaluations"]),
        popsize(d, cell.get("population")),
        int(cell["seed"]),
    )
    return [
        {
            "week": weeks[0] if len(weeks) == 1 else -2,  # -2: the mean over several weeks
            "jobs": sum(tw.jobs(k) for k in weeks),
            "mean_bsld": value,
            "w_best": [float(x) for x in w],
            "evaluations_done": calls,
            "skipped": None,
        }
    ]
