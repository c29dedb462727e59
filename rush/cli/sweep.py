"""``rush sweep``: grids of simulations on Dask (rush.studies.sweep), streamed into a resumable table.

Light imports only at module level: ``rush --help`` loads this module.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from rush.errors import ConfigError

app = typer.Typer(no_args_is_help=True)

RUN_HELP = """Run the product of a grid file (TOML or JSON) on Dask and stream the metrics into OUT/sweep.csv.

\b
traces = ["SDSC-SP2"]        # catalogue names, paths, lublin[:JOBS[:PROCS[:SEED]]]
slice = "week"               # each week on its own ("none": whole traces)
weeks = [0, 1, 2]            # or "all": every week with jobs
policies = ["FCFS", "SPF", "SAF"]
backfill = ["easy", "none"]  # easy | conservative | none
thresholds = [200000, "none"]
tau = 10
[slurm]                      # for --cluster slurm (dask-jobqueue)
queue = "batch"
jobs = 2

Finished cells already in OUT are not run again (--no-resume starts afresh). Exit status:
0 all cells ran, 1 some cells failed (their rows hold the error), 2 a bad grid or option
(nothing written)."""


@app.command("run", help=RUN_HELP)
def run_command(
    grid_file: Path = typer.Argument(..., help="The grid file (.toml or .json)."),
    out: Path = typer.Option(..., "--out", help="Directory of sweep.csv and sweep.json."),
    cluster: str = typer.Option(
        "local", "--cluster", help="local | local:N | serial | slurm | tcp://host:port"
    ),
    workers: int | None = typer.Option(None, "--workers", help="LocalCluster workers (default: the cores)."),
    batch: int | None = typer.Option(
        None,
        "--batch",
        help="Cells per Dask task (default: sized from the cells' durations, about 0.25 s a task).",
    ),
    resume: bool = typer.Option(True, "--resume/--no-resume", help="Skip cells already in OUT."),
    slurm_queue: str | None = typer.Option(None, "--slurm-queue", help="Partition of the worker jobs."),
    slurm_cores: int | None = typer.Option(None, "--slurm-cores", help="Cores per worker job."),
    slurm_memory: str | None = typer.Option(None, "--slurm-memory", help="Memory per worker job, e.g. 2GB."),
    slurm_walltime: str | None = typer.Option(
        None, "--slurm-walltime", help="Time limit of a job, e.g. 01:00:00."
    ),
    slurm_jobs: int | None = typer.Option(None, "--slurm-jobs", help="Worker jobs to submit."),
    slurm_python: str | None = typer.Option(
        None, "--slurm-python", help="The workers' python (default: this one)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object: counts, paths, failures."),
) -> None:
    from rush.studies.sweep import SweepOptions, run_sweep
    from rush.studies.sweep.engine import check_options
    from rush.studies.sweep.grid import cells, read_grid, resolve_traces, slurm_options
    from rush.studies.sweep.simulation import load_sliced, simulate_cell

    grid = read_grid(grid_file)
    slurm = slurm_options(
        grid,
        queue=slurm_queue,
        cores=slurm_cores,
        memory=slurm_memory,
        walltime=slurm_walltime,
        jobs=slurm_jobs,
        python=slurm_python,
    )
    options = SweepOptions(
        out=out,
        cluster=cluster,
        workers=workers,
        resume=resume,
        progress=not as_json and sys.stderr.isatty(),
        batch=batch,
        slurm=slurm,
        description={"grid": str(grid_file)},
    )
    check_options(options)
    _check_out(out)
    options.resources = resolve_traces(grid)
    from rush.jit_cache import announce_if_cold, skip_numba_blas_probe

    skip_numba_blas_probe()
    announce_if_cold()
    loaded = {spec: load_sliced(grid.resolved[spec], grid.procs) for spec in grid.traces}
    product = cells(grid, loaded)  # every check passed: only now is anything written
    rows = run_sweep(simulate_cell, product, options)
    failures = [r for r in rows if r.get("error_type")]
    summary = {
        "cells": rows.cells,
        "computed": rows.computed,
        "reused": rows.reused,
        "failed": rows.failed,
        "table": rows.table,
        "description": str(Path(rows.table).with_suffix(".json")) if rows.table else None,
        "failures": [
            {
                k: r.get(k)
                for k in ("key", "trace", "week", "policy", "backfill", "threshold", "error_type", "error")
            }
            for r in failures[:20]
        ],
    }
    if as_json:
        typer.echo(json.dumps(summary, sort_keys=True))
    else:
        _print_summary(rows, summary)
    if rows.failed:
        typer.echo(f"{rows.failed} of {rows.cells} cells failed (see {rows.table})", err=True)
        raise typer.Exit(1)


def _check_out(out: Path) -> None:
    if out.suffix.lower() == ".csv" or (out.exists() and not out.is_dir()):
        raise ConfigError(
            f"--out {out} is not a directory", where="--out", fix="give a directory, e.g. --out runs/sweep"
        )
    parent = next((p for p in (out, *out.parents) if p.exists()), Path("."))
    import os

    if not os.access(parent, os.W_OK):
        raise ConfigError(f"{parent} is not writable", where="--out", fix="choose a writable directory")


def _print_summary(rows: list[dict], summary: dict) -> None:
    """Mean over the cells (weeks) of each configuration's mean bounded slowdown."""
    from rich.console import Console
    from rich.table import Table

    groups: dict[tuple, list[float]] = {}
    for row in rows:
        value = row.get("mean_bounded_slowdown")
        if isinstance(value, int | float):
            key = (row["trace"], row["policy"], row["backfill"], str(row["threshold"]))
            groups.setdefault(key, []).append(float(value))
    view = Table(title=f"rush sweep: {summary['table']}")
    for name in ("trace", "policy", "backfill", "threshold", "cells", "mean bsld (mean over cells)"):
        view.add_column(name)
    for key, values in groups.items():
        view.add_row(*key, str(len(values)), f"{sum(values) / len(values):.2f}")
    console = Console()
    console.print(view)
    console.print(
        f"cells {summary['cells']}: computed {summary['computed']}, reused {summary['reused']}, "
        f"failed {summary['failed']}",
        markup=False,
        highlight=False,
    )
