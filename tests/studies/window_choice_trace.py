"""A tiny trace and window rule shared by the live-window choice tests (test_live_window_choice,
test_live_windows_table's --choose test)."""

from __future__ import annotations

import numpy as np

from rush.studies.live_window_choice import HOUR, WindowRule
from rush.workload.model import Workload


def tiny_trace() -> Workload:
    """24 jobs on 2 processors, a minute apart. Jobs 0-5 (first half, before the offset) and
    18-20 each take the whole machine for 2 h; the others take one processor for a minute."""
    n = 24
    wide = np.zeros(n, dtype=bool)
    wide[[0, 1, 2, 3, 4, 5, 18, 19, 20]] = True
    submit = np.arange(n, dtype=float) * 60.0
    submit[6:] += 12 * 3600.0  # the first half's queue has drained by job 6
    runtime = np.where(wide, 2 * HOUR, 60.0)
    return Workload(
        job_id=np.arange(n, dtype=np.int64),
        submit=submit,
        runtime=runtime,
        procs=np.where(wide, 2, 1).astype(np.int64),
        requested_time=runtime + 60.0,
        user=np.zeros(n, dtype=np.int64),
        machine_procs=2,
        name="tiny",
    )


RULE = WindowRule(
    count=6, speedup=1.0, cpus=2, min_long=2, max_makespan=10 * HOUR, max_runtime=3 * HOUR, step=2
)
