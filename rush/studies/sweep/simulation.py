"""The simulation task of ``rush sweep run``: one (trace slice, policy configuration) per cell.

The trace is a per-worker resource (:func:`load_sliced`): read and turned into a workload
once per worker; each cell simulates one weekly slice (or the whole trace) under its policy,
backfilling and starvation threshold, and returns the scalar metrics of
:func:`rush.simulator.metrics.compute_metrics`.

Weeks are counted from the trace's first submit (as ``rush trace resample`` does); week k
holds the jobs submitted in [t0 + k·7 d, t0 + (k+1)·7 d) and is simulated on its own, on an
empty machine. Submit times keep their origin (SWF time 0), so F1–F4's r is the same as in
the whole trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rush.errors import TraceFormatError

WEEK = 7 * 86400


@dataclass
class SlicedWorkload:
    """A workload and the index bounds of its weeks (jobs are sorted by submit)."""

    workload: Any  # rush.workload.model.Workload
    bounds: np.ndarray  # week k is workload[bounds[k]:bounds[k+1]]
    skipped_lines: int

    @property
    def weeks(self) -> int:
        return len(self.bounds) - 1

    def week_sizes(self) -> np.ndarray:
        return np.diff(self.bounds)

    def week(self, k: int, where: str = "week"):
        if not 0 <= k < self.weeks:
            raise TraceFormatError(
                f"week {k} is outside the trace ({self.weeks} weeks)",
                where=where,
                fix=f"use weeks 0 to {self.weeks - 1}",
            )
        lo, hi = int(self.bounds[k]), int(self.bounds[k + 1])
        if lo == hi:
            raise TraceFormatError(
                f"week {k} has no jobs", where=where, fix="leave it out (weeks = 'all' skips empty weeks)"
            )
        return self.workload.subset(np.arange(lo, hi))


def load_sliced(spec: str, procs: int | None = None) -> SlicedWorkload:
    """Read ``spec`` (path, catalogue name, lublin spec) and cut its workload into weeks."""
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    trace = load_trace(spec)
    workload = workload_from_trace(trace, machine_procs=procs)
    t0 = float(trace["submit"].min())
    week = np.floor((workload.submit - t0) / WEEK).astype(np.int64)
    count = int(week[-1]) + 1 if len(week) else 0
    bounds = np.searchsorted(week, np.arange(count + 1), side="left")
    return SlicedWorkload(workload, bounds, int(sum(trace.skipped.values())))


def trace_resource(spec: str) -> str:
    return f"trace:{spec}"


def simulate_cell(cell: dict, resources: Any) -> dict:
    """One simulation; the row is the scalar metrics (numbers) of the run."""
    from rush.core.config import CoreConfig
    from rush.models.policies.heuristic_file import parse_policy_text
    from rush.simulator.engine import simulate
    from rush.simulator.metrics import compute_metrics

    sliced: SlicedWorkload = resources[trace_resource(cell["trace"])]
    week = cell.get("week")
    workload = sliced.workload if week is None else sliced.week(int(week), where=f"{cell['trace']} week")
    threshold = cell.get("threshold", "none")
    config = CoreConfig.from_names(
        parse_policy_text(cell["policy"]),
        cell.get("backfill", "easy"),
        None if threshold == "none" else threshold,
    )
    result = simulate(workload, config)
    metrics = compute_metrics(result, tau=float(cell.get("tau", 10.0)))
    # The trace's dropped jobs are not the week's: the count stays with whole-trace cells.
    skip = {"tau", "throughput_bin"} | ({"dropped"} if week is not None else set())
    return {
        k: v
        for k, v in metrics.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and k not in skip
    }
