"""Which trace window to replay live for waits over an hour: a rule fixed before any estimate.

The rule (issue 29, item 4): from a fixed offset (half of the trace's jobs, so that the
quantile model has the first half to learn from), windows of ``count`` jobs every ``step`` jobs
are cut and scaled as the live replay scales them (:func:`rush.studies.replay_window.scale_window`:
times divided by K, processors mapped to the cluster's CPUs, limits rounded up to Slurm's minute)
and simulated under FCFS + EASY; the first window whose longest run and makespan fit the
wall-time budget and where at least ``min_long`` jobs wait over an hour (trace time) is chosen.
Only the simulator's waits are looked at, never an estimate.

Round 16 (a labelled protocol change, for the head-only estimators): sched-backfill and Fluxion
(queue policy easy) estimate only the job they reserve for, the blocked head of the queue, so a
window can have many waits over an hour and still few jobs those estimators ever estimate.
``min_head`` (0: off, the round-11 rule) further asks for that many jobs that wait over an hour
*and* sit at the blocked head of the simulated FCFS queue for at least ``head_seconds`` wall
seconds (:func:`head_times`); ``limit_granularity`` is the RJMS's (Slurm 60 s, Flux 1 s).
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
    min_head: int = 0  # of the waits over an hour, jobs at the blocked head >= head_seconds (0: off)
    head_seconds: float = 2.0  # wall seconds: two of the daemon's 1 s cycles
    limit_granularity: float = 60.0  # the RJMS's limit rounding, seconds (Slurm 60, Flux 1)


@dataclass(frozen=True)
class ChosenWindow:
    start: int
    count: int
    makespan: float  # wall seconds, simulated
    waits: np.ndarray  # trace seconds, simulated, per job of the window

    @property
    def text(self) -> str:
        return f"{self.start}:{self.count}"

    heads: np.ndarray | None = None  # wall seconds at the blocked head of the queue, per job

    def long_waits(self) -> int:
        return int(np.sum(self.waits > HOUR))

    def long_heads(self, head_seconds: float) -> int:
        """Jobs waiting over an hour that sit at the blocked head for at least ``head_seconds``."""
        if self.heads is None:
            return 0
        return int(np.sum((self.waits > HOUR) & (self.heads >= head_seconds)))


def head_times(submit: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Per job, how long (same unit as the inputs) it is the first waiting job in FCFS order
    (submit time, then position), blocked: from when every job ahead of it has started (or its
    submit, if later) to its own start; 0 for a job backfilled past a waiting one."""
    submit = np.asarray(submit, dtype=float)
    start = np.asarray(start, dtype=float)
    if submit.shape != start.shape or not (np.all(np.isfinite(submit)) and np.all(np.isfinite(start))):
        raise RushError(
            "head_times needs finite submit and start times of the same length",
            where="rush.studies.live_window_choice.head_times",
            fix="pass the simulated replay's submit and start arrays",
        )
    order = np.lexsort((np.arange(len(submit)), submit))
    ahead_started = np.concatenate(([-np.inf], np.maximum.accumulate(start[order])[:-1]))
    heads = np.empty(len(submit))
    heads[order] = np.maximum(0.0, start[order] - np.maximum(submit[order], ahead_started))
    return heads


def simulated_waits(
    workload: Workload, window: Window, rule: WindowRule
) -> tuple[np.ndarray, float, float, np.ndarray]:
    """Waits in trace seconds, makespan and longest run in wall seconds of the scaled window, and
    each job's time at the blocked head of the queue in wall seconds (:func:`head_times`)."""
    scaled = scale_window(workload, window, rule.speedup, rule.cpus, limit_granularity=rule.limit_granularity)
    result = simulate(scaled, CoreConfig.from_names("FCFS", "easy"))
    start, submit = np.asarray(result.start), np.asarray(result.submit)
    waits = (start - submit) * rule.speedup
    return waits, float(np.max(result.end)), float(np.max(scaled.runtime)), head_times(submit, start)


def first_window(workload: Workload, rule: WindowRule = WindowRule()) -> ChosenWindow:
    """The first window at or after the offset that meets the rule (see the module docstring)."""
    offset = int(len(workload) * rule.offset_share)
    for start in range(offset, len(workload) - rule.count + 1, max(rule.step, 1)):
        waits, makespan, longest, heads = simulated_waits(workload, Window(start, rule.count), rule)
        if longest > rule.max_runtime or makespan > rule.max_makespan:
            continue
        chosen = ChosenWindow(start, rule.count, makespan, waits, heads)
        if chosen.long_waits() >= rule.min_long and chosen.long_heads(rule.head_seconds) >= rule.min_head:
            return chosen
    raise RushError(
        f"no window of {rule.count} jobs after job {offset} of {workload.name} has {rule.min_long} waits "
        f"over an hour ({rule.min_head} of them at the blocked head >= {rule.head_seconds:g} wall s) within {rule.max_makespan:g} wall s at K = {rule.speedup:g}",
        where="rush.studies.live_window_choice.first_window",
        fix="lower min_long, raise max_makespan or the speedup, or choose another trace",
    )
