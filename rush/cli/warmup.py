"""``rush warmup``: compile and cache the numba kernels ahead of the first real run."""

from __future__ import annotations

import time

import typer

from rush.cli.app import app


@app.command("warmup")
def warmup_command() -> None:
    """Compile the scheduling core and the SWF reader once (about 30 s), so later runs start at once.

    The set-up scripts run it after installing. numba caches the machine code in a directory
    per version of the kernel sources (under NUMBA_CACHE_DIR, default ~/.cache/rush/numba);
    running it again on a warm cache takes about a second. Caches of other kernel sources that no
    process has used for 14 days are removed (another checkout's or install's stays).
    """
    from rush.jit_cache import (
        SIMULATION_ENTRY_POINTS,
        cold_entry_points,
        prune_old_caches,
        skip_numba_blas_probe,
    )

    skip_numba_blas_probe()
    cold = cold_entry_points()
    if cold:
        typer.echo(
            f"compiling {len(cold)} of {len(SIMULATION_ENTRY_POINTS)} entry points (first run only)...",
            err=True,
        )
    t0 = time.perf_counter()
    done = warm_kernels()
    still_cold = cold_entry_points()
    typer.echo(f"warm: {', '.join(done)} in {time.perf_counter() - t0:.1f} s")
    removed = prune_old_caches()
    if removed:
        typer.echo(f"removed {len(removed)} idle cache(s) of other kernel sources", err=True)
    if still_cold:
        # numba could not write its cache (read-only install): every run will compile again.
        typer.echo(
            f"warning: numba did not cache {', '.join(still_cold)}; set NUMBA_CACHE_DIR to a writable directory",
            err=True,
        )
        raise typer.Exit(1)


def warm_kernels() -> list[str]:
    """Compile and cache every kernel the simulator, the SWF reader and the daemon use.

    Runs tiny real workloads through the same calls as the commands (so the cached type
    signatures are the ones they use). Returns what was exercised.
    """
    import tempfile
    from pathlib import Path

    from rush.core import CoreConfig, PendingJob, Snapshot
    from rush.core.names import BACKFILL_MODES
    from rush.core.schedule import schedule
    from rush.core.warm_up import warm_live_pass
    from rush.simulator.engine import simulate
    from rush.simulator.metrics import compute_metrics
    from rush.workload.model import workload_from_trace
    from rush.workload.swf import read_swf

    done = []
    with tempfile.TemporaryDirectory(prefix="rush-warmup-") as tmp:
        path = Path(tmp) / "warmup.swf"
        # Four jobs on 4 processors: job 2 waits for job 1, job 3 backfills, job 4 is reserved.
        path.write_text(
            "; MaxProcs: 4\n"
            "1 0 0 100 2 -1 -1 2 100 -1 1 1 1 1 1 -1 -1 -1\n"
            "2 1 0 50 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 -1\n"
            "3 2 0 10 2 -1 -1 2 20 -1 1 1 1 1 1 -1 -1 -1\n"
            "4 3 0 30 3 -1 -1 3 40 -1 1 1 1 1 1 -1 -1 -1\n"
        )
        trace = read_swf(path, cache=False)  # compile the parser even where the cache holds traces
        done.append("SWF reader")
    workload = workload_from_trace(trace)
    for backfill in BACKFILL_MODES:
        for policy in ("FCFS", "WFP3"):  # a static and a time-dependent (dynamic) policy
            result = simulate(workload, CoreConfig.from_names(policy, backfill))
            compute_metrics(result)
        done.append(f"simulator ({backfill})")
    pending = (PendingJob(1, 0.0, 2, 60.0), PendingJob(2, 1.0, 4, 60.0), PendingJob(3, 2.0, 1, 10.0))
    for backfill in BACKFILL_MODES:
        schedule(
            Snapshot(now=10.0, total_procs=4, free_procs=3, pending=pending), CoreConfig(backfill=backfill)
        )
        # On nodes, bounded, the start-estimate projection: what the daemon and the Flux module call.
        warm_live_pass(CoreConfig(backfill=backfill))
    done.append("live core (schedule, on nodes, bounded, start estimates)")
    return done
