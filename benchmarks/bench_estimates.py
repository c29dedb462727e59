"""Start-time estimates for every pending job (issue 22, "Speed"): 10 000 pending jobs on
1 000 nodes, per pass. Target: <= 200 ms for the estimates.

The snapshots are :mod:`bench_nodes`'s (1 000 nodes of 32 cores in 32 pods, about half busy,
10 000 pending jobs of mixed shapes) and their processor-count twin. Printed per backfilling
mode: the median and max of ``--repeat`` timed calls of

* ``schedule`` without estimates (``estimate_starts_too=False``): the pass rush runs anyway;
* ``schedule`` with estimates: the same pass plus the estimates;
* the estimates alone (:func:`rush.core.start_estimates.estimate_starts` on the inputs the pass
  built), the figure the target is about;

next to ``python -c pass`` measured in the same run (the floor of any process a site would run
to get an estimate, e.g. ``squeue --start``'s own Python-free start is below it).

Run: ``python benchmarks/bench_estimates.py [--pending 10000] [--repeat 7]``
"""

from __future__ import annotations

import argparse
import functools
import statistics
import subprocess
import sys
import time
from functools import partial

import bench_args
import numpy as np
from bench_nodes import make_snapshots

import rush.core.schedule as core_schedule
from rush.core import CoreConfig
from rush.core.schedule import schedule
from rush.core.start_estimates import estimate_starts

print = functools.partial(print, flush=True)  # noqa: A001 - progress shows while the slow cases run


def _times(call, repeat: int) -> tuple[float, float]:
    call()  # compile or load the numba cache
    seconds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - t0)
    return statistics.median(seconds), max(seconds)


def _captured_inputs(snapshot, config):
    """The EstimateInputs one schedule() call builds (caught on their way in)."""
    seen = []
    original = core_schedule.estimate_starts

    def spy(inputs):
        seen.append(inputs)
        return original(inputs)

    core_schedule.estimate_starts = spy
    try:
        schedule(snapshot, config, explain_priorities=False)
    finally:
        core_schedule.estimate_starts = original
    return seen[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--repeat", type=bench_args.positive, default=7)
    parser.add_argument(
        "--modes",
        type=bench_args.names(bench_args.BACKFILL_MODES),
        default="easy,none,conservative",
        help="backfilling modes, comma-separated",
    )
    args = parser.parse_args()
    on_nodes, as_procs = make_snapshots(args.pending)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    floor = time.perf_counter() - t0
    print(f"{args.pending} pending jobs, {len(on_nodes.running)} running, {len(on_nodes.nodes)} nodes")
    print(f"reference: python -c pass  {floor * 1e3:8.1f} ms")
    print(f"{'case':34s} {'median ms':>10s} {'max ms':>8s}")
    for label, snapshot in (("nodes", on_nodes), ("counts", as_procs)):
        for mode in args.modes:
            config = CoreConfig(backfill=mode)
            without = _times(
                partial(schedule, snapshot, config, explain_priorities=False, estimate_starts_too=False),
                args.repeat,
            )
            with_ = _times(partial(schedule, snapshot, config, explain_priorities=False), args.repeat)
            inputs = _captured_inputs(snapshot, config)
            alone = _times(partial(estimate_starts, inputs), args.repeat)
            found = estimate_starts(inputs).start
            for name, (median, worst) in (
                ("pass without estimates", without),
                ("pass with estimates", with_),
                ("estimates alone", alone),
            ):
                print(f"{label:6s} {mode:12s} {name:15s} {median * 1e3:10.1f} {worst * 1e3:8.1f}"[:80])
            print(f"{'':20s} jobs with an estimate: {int(np.isfinite(found).sum())} of {len(found)}")


if __name__ == "__main__":
    main()
