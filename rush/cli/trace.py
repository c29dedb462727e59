"""``rush trace``: inspect, fetch, convert, resample and synthesise traces.

TRACE arguments accept a path (SWF plain or gzip, ``sacct --json``/``--parsable2``
output), a catalogue name (``KTH-SP2``, ``rush trace info --list``) or a synthetic spec
``lublin[:JOBS[:PROCS[:SEED]]]``. Errors are :class:`~rush.errors.RushError` subclasses:
``rush`` prints them with their place and fix and exits with status 2.
"""

from __future__ import annotations

from pathlib import Path

import typer

from rush.errors import RushError
from rush.workload.limits import MAX_PROCS, MAX_SYNTH_JOBS, MAX_WEEKS, check_count, check_seed

app = typer.Typer(no_args_is_help=True)

TRACE_HELP = (
    "A trace path (SWF, sacct output), a catalogue name (e.g. KTH-SP2) or lublin[:JOBS[:PROCS[:SEED]]]."
)
STRICT_HELP = "Fail on the first malformed SWF line instead of skipping and counting it."


def _list_catalogue() -> None:
    from rush.workload.catalogue import catalogue

    typer.echo(f"{'name':16} {'file':36} {'jobs':>8}  sha256")
    for entry in catalogue().values():
        typer.echo(f"{entry.alias:16} {entry.file:36} {entry.jobs:>8}  {entry.sha256[:16]}…")
    typer.echo("synthetic: lublin[:JOBS[:PROCS[:SEED]]] (generated in-process, no download)")


@app.command("info")
def info(
    trace: str | None = typer.Argument(None, help=TRACE_HELP),
    procs: int | None = typer.Option(None, "--procs", help="Machine size (default: MaxProcs header)."),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
    list_catalogue: bool = typer.Option(False, "--list", help="List the catalogue instead."),
) -> None:
    """Jobs, drops by reason, machine size, span, header keys and skipped lines."""
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    if list_catalogue or trace is None:
        _list_catalogue()
        return
    if procs is not None:
        check_count(procs, "--procs", "--procs", MAX_PROCS, "--procs 128")
    loaded = load_trace(trace, strict=strict)
    w = workload_from_trace(loaded, machine_procs=procs)
    span = float(w.submit.max() - w.submit.min()) if len(w) else 0.0
    skipped = sum(loaded.skipped.values())
    first_bad = getattr(loaded, "malformed_lines", [])[:5]
    typer.echo(f"trace          {loaded.name}")
    typer.echo(f"records        {len(loaded)}")
    typer.echo(f"jobs           {len(w)}")
    typer.echo(f"dropped        {sum(w.dropped.values())} {w.dropped or ''}".rstrip())
    typer.echo(
        f"skipped lines  {skipped} {loaded.skipped or ''}".rstrip()
        + (f" first at lines {', '.join(map(str, first_bad))}" if first_bad else "")
    )
    source = "--procs" if procs else "MaxProcs header" if loaded.max_procs else "largest job"
    typer.echo(f"machine procs  {w.machine_procs} ({source})")
    typer.echo(f"submit span    {span / 86400:.1f} days")
    if len(w):
        killed = int((w.runtime > w.requested_time).sum())
        typer.echo(f"killed at p~   {killed} jobs with runtime > requested time")
        load = float((w.procs * w.runtime).sum() / (max(w.machine_procs, 1) * max(span, 1.0)))
        typer.echo(f"offered load   {load:.3f}")
    users = loaded.labels.get("user")
    typer.echo(f"users          {len(set(loaded['user'].tolist()) - {-1})}" + (" (named)" if users else ""))
    typer.echo(f"header keys    {', '.join(loaded.header) or '-'}")


@app.command("fetch")
def fetch(
    name: str = typer.Argument(..., help="Catalogue name, e.g. KTH-SP2 or SDSC-SP2-1998-4.2-cln.swf.gz."),
    mirror: Path | None = typer.Option(
        None, "--mirror", help="Directory of traces (else $RUSH_TRACE_MIRROR)."
    ),
) -> None:
    """Copy from the mirror or download a catalogue trace into the cache, verify its sha256, print its path."""
    from rush.workload.catalogue import fetch as fetch_trace

    typer.echo(str(fetch_trace(name, mirror=mirror)))


@app.command("convert")
def convert(
    source: str = typer.Argument(
        ..., help="sacct --json / --parsable2 output, an SWF file or a catalogue name."
    ),
    output: Path = typer.Argument(..., help="SWF file to write (.gz compresses)."),
    strict: bool = typer.Option(False, "--strict", help=STRICT_HELP),
) -> None:
    """Convert Slurm accounting output (or any readable trace) to SWF."""
    from rush.workload.catalogue import load_trace
    from rush.workload.swf import write_swf

    loaded = load_trace(source, strict=strict)
    write_swf(loaded, output)
    skipped = f" (skipped {loaded.skipped})" if loaded.skipped else ""
    typer.echo(f"wrote {len(loaded)} jobs to {output}{skipped}")


@app.command("resample")
def resample(
    trace: str = typer.Argument(..., help=TRACE_HELP),
    weeks: int = typer.Option(..., "--weeks", help="Length of the new trace in weeks."),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(..., "--out", help="SWF file to write (.gz compresses)."),
) -> None:
    """Weekly user-profile resampling: one random weekly slice per user per week."""
    from rush.workload.catalogue import load_trace
    from rush.workload.resample import resample_weekly
    from rush.workload.swf import write_swf

    check_count(weeks, "--weeks", "--weeks", MAX_WEEKS, "--weeks 8")
    check_seed(seed)
    new = resample_weekly(load_trace(trace), weeks, seed)
    write_swf(new, out)
    typer.echo(f"wrote {len(new)} jobs over {weeks} weeks to {out}")


@app.command("synth")
def synth(
    jobs: int = typer.Option(10_000, "--jobs"),
    procs: int = typer.Option(256, "--procs"),
    seed: int = typer.Option(1, "--seed"),
    types: str = typer.Option("batch", "--types", help="batch, interactive, both or whole (typeless)."),
    out: Path = typer.Option(..., "--out", help="SWF file to write (.gz compresses)."),
) -> None:
    """Generate a Lublin–Feitelson synthetic workload."""
    from rush.workload.lublin import JOB_TYPES, lublin_generate
    from rush.workload.swf import write_swf

    check_count(jobs, "--jobs", "--jobs", MAX_SYNTH_JOBS, "--jobs 10000")
    check_count(procs, "--procs", "--procs", MAX_PROCS, "--procs 256")
    check_seed(seed)
    if types not in JOB_TYPES:
        raise RushError(f"unknown job types {types!r}", where="--types", fix=f"one of {', '.join(JOB_TYPES)}")
    trace = lublin_generate(jobs, machine_procs=procs, seed=seed, job_types=types)
    write_swf(trace, out)
    typer.echo(f"wrote {jobs} {types} jobs on {procs} processors (seed {seed}) to {out}")
