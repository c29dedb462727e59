"""Which trace window to replay live for waits over an hour: a rule fixed before any estimate.

The rule (issue 29, item 4): from a fixed offset (half of the trace's jobs, so that the
quantile model has the first half to learn from), windows of ``count`` jobs every ``step`` jobs
are cut and scaled as the live replay scales them (:func:`rush.studies.replay_window.scale_window`:
times divided by K, processors mapped to the cluster's CPUs, limits rounded up to Slurm's minute)
and simulated under FCFS + EASY; the first window whose longest run and makespan fit the
wall-time budget and where at least ``min_long`` jobs wait over an hour (trace time) is chosen.
Only the simulator's waits are looked at, never an estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rush.core.config import CoreConfig
from rush.errors import RushError
from rush.simulator.engine import simulate
from rush.studies.replay_window import Window, scale_window
from rush.workload.model import Workload

HOUR = 3600.0


@dataclass(frozen=True)
class WindowRule:
    count: int = 60  # jobs per window
    speedup: float = 60.0  # K: an hour of trace is one wall minute
    cpus: int = 32  # the live clusters' 32 one-CPU nodes
    min_long: int = 10  # jobs that must wait over an hour in the simulated replay
    max_makespan: float = 420.0  # wall seconds from the first submit to the last end
    max_runtime: float = 360.0  # wall seconds of the longest job
    offset_share: float = 0.5  # where the scan starts, as a share of the trace's jobs
    step: int = 10  # jobs between two windows tried


@dataclass(frozen=True)
class ChosenWindow:
    start: int
    count: int
    makespan: float  # wall seconds, simulated
    waits: np.ndarray  # trace seconds, simulated, per job of the window

    @property
    def text(self) -> str:
        return f"{self.start}:{self.count}"

    def long_waits(self) -> int:
        return int(np.sum(self.waits > HOUR))


def simulated_waits(workload: Workload, window: Window, rule: WindowRule) -> tuple[np.ndarray, float, float]:
    """Waits in trace seconds, makespan and longest run in wall seconds of the scaled window."""
    scaled = scale_window(workload, window, rule.speedup, rule.cpus, limit_granularity=60.0)
    result = simulate(scaled, CoreConfig.from_names("FCFS", "easy"))
    waits = (np.asarray(result.start) - np.asarray(result.submit)) * rule.speedup
    return waits, float(np.max(result.end)), float(np.max(scaled.runtime))


def first_window(workload: Workload, rule: WindowRule = WindowRule()) -> ChosenWindow:
    """The first window at or after the offset that meets the rule (see the module docstring)."""
    offset = int(len(workload) * rule.offset_share)
    for start in range(offset, len(workload) - rule.count + 1, max(rule.step, 1)):
        waits, makespan, longest = simulated_waits(workload, Window(start, rule.count), rule)
        if longest > rule.max_runtime or makespan > rule.max_makespan:
            continue
        if np.sum(waits > HOUR) >= rule.min_long:
            return ChosenWindow(start, rule.count, makespan, waits)
    raise RushError(
        f"no window of {rule.count} jobs after job {offset} of {workload.name} has {rule.min_long} waits "
        f"over an hour within {rule.max_makespan:g} wall s at K = {rule.speedup:g}",
        where="rush.studies.live_window_choice.first_window",
        fix="lower min_long, raise max_makespan or the speedup, or choose another trace",
    )
