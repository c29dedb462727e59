"""``rush report RUN_DIR``: plots of the runs saved by ``rush simulate/compare --out RUN_DIR``."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from rush.cli import checks
from rush.cli.app import app
from rush.errors import ConfigError

MAX_GANTT_HOURS = 24 * 366  # a year of a machine in one chart is already unreadable


@app.command("report")
def report_command(
    run_dir: Path = typer.Argument(..., help="A run directory written by `rush compare ... --out RUN_DIR`."),
    out: Path | None = typer.Option(
        None, "--out", help="Where to write the PNG files (default: RUN_DIR/plots)."
    ),
    gantt_start: float | None = typer.Option(
        None,
        "--gantt-start",
        help="Gantt window start in seconds after the first submit (default: 15% of the submit span).",
    ),
    gantt_hours: float = typer.Option(24.0, "--gantt-hours", help="Gantt window length in hours."),
    gantt_label: str | None = typer.Option(
        None, "--gantt-label", help="Run shown in the Gantt chart (default: the first label)."
    ),
    tau: float = typer.Option(10.0, "--tau", help="Bounded-slowdown threshold tau in seconds."),
) -> None:
    """Plot cumulative bounded slowdown, wait vs runtime, utilization and a Gantt chart."""
    checks.positive_seconds(tau, "--tau", "10")
    checks.finite_seconds(gantt_start, "--gantt-start", "86400")
    if not (math.isfinite(gantt_hours) and 0 < gantt_hours <= MAX_GANTT_HOURS):
        raise ConfigError(
            f"--gantt-hours must be a number of hours in (0, {MAX_GANTT_HOURS}], got {gantt_hours!r}",
            where="--gantt-hours",
            fix="e.g. --gantt-hours 24",
        )
    checks.output_dir(out, "--out")
    from rush.studies.plots.simulation import report_run_dir

    written = report_run_dir(
        run_dir, out, tau=tau, gantt_label=gantt_label, gantt_start=gantt_start, gantt_hours=gantt_hours
    )
    for path in written:
        typer.echo(str(path))
