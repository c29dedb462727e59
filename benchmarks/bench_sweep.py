"""Sweep throughput: simulations per second for weekly slices of SDSC-SP2, 1 and 2 Dask workers.

Cells: the weekly slices of SDSC-SP2 (each week simulated on its own, 200 000 s starvation
threshold) under FCFS, SPF and SAF, with EASY and without backfilling. Three runs of the same cells:

* reference: a plain loop in this process, no Dask (``simulate_cell`` on a trace loaded once);
* ``rush.studies.sweep`` on a LocalCluster of 1 worker, then of 2 workers (one process each),
  streaming rows into a CSV table as in ``rush sweep run``.

Every run is warm: the trace is loaded and the kernels compiled before the clock starts (a
warm-up sweep of other cells on the same cluster loads the per-worker trace), so the
figures are the steady rate; cluster start-up and the first load are printed apart.
Scaling efficiency = rate(2 workers) / (2 · rate(1 worker)). The machine's load average is
printed too: other processes on the cores lower the 2-worker figure.

Run: ``RUSH_TRACE_MIRROR=../shared/traces python benchmarks/bench_sweep.py [--weeks 40] [--batch N]``
"""

from __future__ import annotations

import argparse
import functools
import os
import tempfile
import time
from pathlib import Path

import bench_args

from rush.studies.sweep import SweepOptions, run_sweep
from rush.studies.sweep.simulation import load_sliced, simulate_cell, trace_resource

TRACE = "SDSC-SP2"
POLICIES = ("FCFS", "SPF", "SAF")
BACKFILL = ("easy", "none")


def make_cells(sliced, weeks: int, policies: tuple[str, ...]) -> list[dict]:
    sizes = sliced.week_sizes()
    chosen = [k for k in range(sliced.weeks) if sizes[k] > 0][: weeks or None]
    return [
        {"trace": TRACE, "week": k, "policy": p, "backfill": b, "threshold": 200000.0, "tau": 10.0}
        for k in chosen
        for p in policies
        for b in BACKFILL
    ]


def reference(cells: list[dict], sliced) -> tuple[float, float]:
    """Simulations per second of wall-clock time, and per second of this process's CPU time
    (the rate of one idle core: the wall rate is lower when other processes share the cores)."""
    resources = {trace_resource(TRACE): sliced}
    simulate_cell(cells[0] | {"policy": "LPF"}, resources)  # compile / load the kernels
    start, cpu = time.perf_counter(), time.process_time()
    for cell in cells:
        simulate_cell(cell, resources)
    return len(cells) / (time.perf_counter() - start), len(cells) / (time.process_time() - cpu)


def on_dask(
    cells: list[dict], warmup: list[dict], workers: int, batch: int, scratch: Path
) -> tuple[float, float, float]:
    import logging

    import distributed

    start = time.perf_counter()
    cluster = distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        silence_logs=logging.ERROR,
    )
    client = distributed.Client(cluster)
    try:
        started = time.perf_counter() - start
        options = SweepOptions(
            cluster=client,
            progress=False,
            batch=batch,
            resources={trace_resource(TRACE): functools.partial(load_sliced, TRACE)},
        )
        start = time.perf_counter()
        run_sweep(simulate_cell, warmup, options)  # loads the trace in each worker
        warm = time.perf_counter() - start
        options.out = scratch / f"w{workers}"
        start = time.perf_counter()
        rows = run_sweep(simulate_cell, cells, options)
        elapsed = time.perf_counter() - start
        assert rows.failed == 0, [r for r in rows if r.get("error")][:3]
    finally:
        client.close()
        cluster.close()
    return len(cells) / elapsed, started, warm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--weeks", type=bench_args.non_negative, default=0, help="weekly slices from the first (default: all)"
    )
    parser.add_argument(
        "--batch", type=bench_args.positive, default=None, help="cells per Dask task (default: automatic)"
    )
    args = parser.parse_args()
    start = time.perf_counter()
    sliced = load_sliced(TRACE)
    load = time.perf_counter() - start
    cells = make_cells(sliced, args.weeks, POLICIES)
    per_week = len(POLICIES) * len(BACKFILL)
    weeks = [c["week"] for c in cells[::per_week]]
    warmup = [c | {"policy": "LPF"} for c in cells[::per_week][:8]]  # other cells: nothing reused
    jobs = sum(int(sliced.week_sizes()[k]) for k in weeks) / len(weeks)
    print(
        f"{TRACE}: {sliced.weeks} weeks, trace load {load:.2f} s; {len(cells)} cells ({len(weeks)} weeks x "
        f"{', '.join(POLICIES)} x backfill {', '.join(BACKFILL)}), {jobs:.0f} jobs per week on average"
    )
    print(f"load average before: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    ref, ref_cpu = reference(cells, sliced)
    print(
        f"reference (one process, no Dask): {ref:.1f} simulations/s "
        f"({ref_cpu:.1f} per CPU-second: an idle core's rate)"
    )
    rates = {}
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as scratch:
        for workers in (1, 2):
            rate, started, warm = on_dask(cells, warmup, workers, args.batch, Path(scratch))
            rates[workers] = rate
            batch = args.batch or "auto"
            print(
                f"rush.studies.sweep, LocalCluster {workers} worker(s), batch {batch}: {rate:.1f} simulations/s "
                f"({rate / ref:.0%} of the reference; cluster start {started:.1f} s, warm-up sweep {warm:.1f} s)"
            )
    print(f"scaling efficiency 1 -> 2 workers: {rates[2] / (2 * rates[1]):.0%}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
