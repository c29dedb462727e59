"""Small workloads for core tests."""

from __future__ import annotations

import numpy as np

from rush.core.config import CoreConfig
from rush.simulator.engine import SimInputs, simulate
from rush.simulator.result import SimResult
from rush.workload.model import Trace, Workload, workload_from_trace


def workload(machine: int, jobs: list[tuple[float, int, float, float]]) -> Workload:
    """Jobs as (submit, procs, runtime, requested_time); ids 1..n."""
    n = len(jobs)
    trace = Trace.from_columns(
        n,
        job_id=np.arange(1, n + 1),
        submit=[j[0] for j in jobs],
        alloc_procs=[j[1] for j in jobs],
        runtime=[j[2] for j in jobs],
        req_time=[j[3] for j in jobs],
    )
    trace.header["MaxProcs"] = str(machine)
    return workload_from_trace(trace)


def run(w: Workload, inputs: SimInputs | None = None, **config) -> SimResult:
    return simulate(w, CoreConfig.from_names(**config), inputs)
