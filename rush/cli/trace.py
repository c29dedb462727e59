"""``rush trace``: inspect, fetch, convert, resample and synthesise traces."""

from __future__ import annotations

from pathlib import Path

import typer

from rush.errors import RushError

app = typer.Typer(no_args_is_help=True)


@app.command("info")
def info(
    trace: str | None = typer.Argument(None, help="A trace path, catalogue name or lublin spec."),
    procs: int | None = typer.Option(None, "--procs"),
    list_catalogue: bool = typer.Option(False, "--list", help="List the catalogue instead."),
) -> None:
    """Jobs, drops by reason, machine size, span, header keys and skipped lines."""
    from rush.workload.catalogue import catalogue, load_trace
    from rush.workload.model import workload_from_trace

    if list_catalogue or trace is None:
        for entry in catalogue().values():
            typer.echo(f"{entry.alias:14} {entry.file:36} {entry.jobs:>8} jobs  sha256 {entry.sha256[:12]}…")
        return
    loaded = load_trace(trace)
    w = workload_from_trace(loaded, machine_procs=procs)
    span = float(w.submit.max() - w.submit.min()) if len(w) else 0.0
    typer.echo(f"trace          {loaded.name}")
    typer.echo(f"records        {len(loaded)}")
    typer.echo(f"jobs           {len(w)}")
    typer.echo(f"dropped        {sum(w.dropped.values())} {w.dropped or ''}")
    typer.echo(f"skipped lines  {sum(loaded.skipped.values())} {loaded.skipped or ''}")
    typer.echo(
        f"machine procs  {w.machine_procs} ({'MaxProcs header' if loaded.max_procs else 'largest job'})"
    )
    typer.echo(f"submit span    {span / 86400:.1f} days")
    if len(w):
        typer.echo(
            f"killed at p~   {int((w.runtime > w.requested_time).sum())} jobs with runtime > requested time"
        )
        load = float((w.procs * w.runtime).sum() / (w.machine_procs * max(span, 1.0)))
        typer.echo(f"offered load   {load:.3f}")
    typer.echo(f"header keys    {', '.join(loaded.header) or '-'}")


@app.command("fetch")
def fetch(
    name: str = typer.Argument(..., help="Catalogue name, e.g. KTH-SP2 or SDSC-SP2-1998-4.2-cln.swf.gz."),
) -> None:
    """Download (or copy from RUSH_TRACE_MIRROR) a trace and verify its sha256."""
    from rush.workload.catalogue import fetch as fetch_trace

    typer.echo(str(fetch_trace(name)))


@app.command("convert")
def convert(
    source: str = typer.Argument(
        ..., help="sacct --json / --parsable2 output, an SWF file or a catalogue name."
    ),
    output: Path = typer.Argument(..., help="SWF file to write (.gz compresses)."),
) -> None:
    """Convert Slurm accounting output (or any readable trace) to SWF."""
    from rush.workload.catalogue import load_trace
    from rush.workload.swf import write_swf

    loaded = load_trace(source)
    write_swf(loaded, output)
    typer.echo(f"wrote {len(loaded)} jobs to {output}")


@app.command("resample")
def resample(
    trace: str = typer.Argument(...),
    weeks: int = typer.Option(..., "--weeks", help="Length of the new trace in weeks."),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(..., "--out", help="SWF file to write."),
) -> None:
    """Weekly user-profile resampling: one random weekly slice per user per week."""
    from rush.workload.catalogue import load_trace
    from rush.workload.resample import resample_weekly
    from rush.workload.swf import write_swf

    if weeks <= 0:
        raise RushError("--weeks must be positive", where="--weeks", fix="e.g. --weeks 8")
    new = resample_weekly(load_trace(trace), weeks, seed)
    write_swf(new, out)
    typer.echo(f"wrote {len(new)} jobs over {weeks} weeks to {out}")


@app.command("synth")
def synth(
    jobs: int = typer.Option(10_000, "--jobs"),
    procs: int = typer.Option(256, "--procs"),
    seed: int = typer.Option(1, "--seed"),
    out: Path = typer.Option(..., "--out", help="SWF file to write."),
) -> None:
    """Generate a Lublin–Feitelson synthetic workload."""
    from rush.workload.lublin import lublin_generate
    from rush.workload.swf import write_swf

    if jobs <= 0 or procs <= 0:
        raise RushError("--jobs and --procs must be positive", where="--jobs/--procs")
    trace = lublin_generate(jobs, machine_procs=procs, seed=seed)
    write_swf(trace, out)
    typer.echo(f"wrote {jobs} jobs on {procs} processors (seed {seed}) to {out}")
