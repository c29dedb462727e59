"""``rush warmup``: compile and cache the numba kernels ahead of the first real run."""

from __future__ import annotations

import time

import typer

from rush.cli.main import app


@app.command("warmup")
def warmup_command() -> None:
    """Compile the scheduling core and the SWF reader once (about 30 s), so later runs start at once.

    The set-up scripts run it after installing. numba caches the machine code in a directory
    per version of the kernel sources (under NUMBA_CACHE_DIR, default ~/.cache/rush/numba);
    running it again on a warm cache takes about a second. Caches of older sources are removed.
    """
    from rush.jit_cache import (
        SIMULATION_ENTRY_POINTS,
        cold_entry_points,
        prune_old_caches,
        skip_numba_blas_probe,
        warmup,
    )

    skip_numba_blas_probe()
    cold = cold_entry_points()
    if cold:
        typer.echo(
            f"compiling {len(cold)} of {len(SIMULATION_ENTRY_POINTS)} entry points (first run only)...",
            err=True,
        )
    t0 = time.perf_counter()
    done = warmup()
    still_cold = cold_entry_points()
    typer.echo(f"warm: {', '.join(done)} in {time.perf_counter() - t0:.1f} s")
    removed = prune_old_caches()
    if removed:
        typer.echo(f"removed {len(removed)} cache(s) of older kernel sources", err=True)
    if still_cold:
        # numba could not write its cache (read-only install): every run will compile again.
        typer.echo(
            f"warning: numba did not cache {', '.join(still_cold)}; set NUMBA_CACHE_DIR to a writable directory",
            err=True,
        )
        raise typer.Exit(1)
