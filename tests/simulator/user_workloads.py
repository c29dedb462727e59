"""Small hand-made workloads with users, for the simulator's runtime-prediction tests."""

from __future__ import annotations

import numpy as np

from rush.workload.model import workload_from_trace


def users_workload(machine: int, jobs: list[tuple], wait: list[float] | None = None):
    """Jobs as (submit, procs, runtime, request, user); ``wait``: the log's waits (else 0)."""
    from rush.workload.model import Trace

    n = len(jobs)
    columns = {
        "job_id": np.arange(1, n + 1),
        "submit": [j[0] for j in jobs],
        "alloc_procs": [j[1] for j in jobs],
        "runtime": [j[2] for j in jobs],
        "req_time": [j[3] for j in jobs],
        "user": [j[4] for j in jobs],
        "wait": np.zeros(n) if wait is None else wait,
    }
    trace = Trace.from_columns(n, **columns)
    trace.header["MaxProcs"] = str(machine)
    return workload_from_trace(trace)
