"""The windows of a trace worth replaying for start estimates: simulated (FCFS, EASY) at speedup
K on CPUS processors, those whose run fits in about ten minutes of wall time, ranked by the
share of jobs that wait over a trace minute plus the share that wait over ten.

    python sim/start_estimates/find_windows.py HPC2N-2002-2.2-cln.swf.gz 10 64 80
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rush.core.config import CoreConfig  # noqa: E402
from rush.simulator.engine import simulate  # noqa: E402
from rush.studies.replay_window import Window, scale_window  # noqa: E402
from rush.studies.script_args import run_main  # noqa: E402
from rush.workload.model import workload_from_trace  # noqa: E402
from rush.workload.swf import read_swf  # noqa: E402
from tests.core.real_traces import MIRROR  # noqa: E402

MAX_RUNTIME, MAX_MAKESPAN = 480.0, 520.0  # wall seconds: a run of at most ten minutes


def main(trace: str, speedup: float, cpus: int, count: int) -> None:
    workload = workload_from_trace(read_swf(MIRROR / trace))
    config = CoreConfig.from_names("FCFS", "easy")
    ranked = []
    for start in range(0, len(workload) - count, max(count // 2, 1)):
        scaled = scale_window(workload, Window(start, count), speedup, cpus, limit_granularity=60.0)
        if scaled.runtime.max() > MAX_RUNTIME:
            continue
        result = simulate(scaled, config)
        makespan = float(result.end.max())
        if makespan > MAX_MAKESPAN:
            continue
        wait = (result.start - result.submit) * speedup
        score = float(np.mean(wait > 60) + np.mean(wait >= 600))
        ranked.append((score, start, makespan, float(np.mean(wait >= 600)), float(np.mean(wait >= 3600))))
    ranked.sort(reverse=True)
    print("score start makespan_wall share_wait>=10min share_wait>=1h")
    for score, start, makespan, ten, hour in ranked[:12]:
        print(f"{score:.2f} {start} {makespan:.0f} {ten:.2f} {hour:.2f}")


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
