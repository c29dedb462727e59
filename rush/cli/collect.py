"""`rush collect`, `rush probe submit|ingest` and `rush energy classify`."""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from pathlib import Path

import typer

from rush.cli.app import app
from rush.errors import RushError

probe_app = typer.Typer(
    help="MPI network probes: submit them as jobs, ingest their results.", no_args_is_help=True
)
energy_app = typer.Typer(help="Job energy profiles.", no_args_is_help=True)
app.add_typer(probe_app, name="probe")
app.add_typer(energy_app, name="energy")
# logging's own level names: anything else used to reach logging.basicConfig as a ValueError.
LOG_LEVELS = ["debug", "info", "warning", "error", "critical"]


@app.command("collect")
def collect_command(
    config: Path = typer.Option(..., "--config", help="rush.toml with a [collect] section."),
    once: bool = typer.Option(False, "--once", help="Run one cycle and exit (no metrics server)."),
    cycles: int | None = typer.Option(None, "--cycles", min=1, help="Stop after N cycles."),
    log_level: str = typer.Option("info", "--log-level", help=f"One of {', '.join(LOG_LEVELS)}."),
) -> None:
    """Run the configured collectors every interval into the feature store, with self-metrics."""
    from rush.collect.config import load_collect_config
    from rush.collect.service import CollectorService

    if log_level.lower() not in LOG_LEVELS:
        raise RushError(
            f"unknown log level {log_level!r}",
            where="--log-level",
            fix=f"use one of: {', '.join(LOG_LEVELS)}",
        )
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_collect_config(config)
    service = CollectorService(settings)
    try:
        if once:
            report = service.run_cycle()
            typer.echo(
                f"collected {report.samples} samples from {len(report.outcomes)} sources into {settings.store}"
            )
            for name, error in report.errors.items():
                typer.secho(f"  {name}: {error}", fg="yellow", err=True)
            if report.outcomes and len(report.errors) == len(report.outcomes):
                raise typer.Exit(1)
            return
        bound = service.start_metrics_server()
        if bound:
            host = f"[{bound[0]}]" if ":" in bound[0] else bound[0]  # an IPv6 address in a URL
            typer.echo(f"metrics on http://{host}:{bound[1]}/metrics")
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        service.run(cycles=cycles, stop=stop)
    finally:
        service.close()


@probe_app.command("ingest")
def probe_ingest(
    files: list[Path] = typer.Argument(..., help="Probe JSON files or job output files."),
    store: Path = typer.Option(..., "--store", help="Feature store (SQLite file)."),
) -> None:
    """Parse probe results and insert them into the feature store (source mpi_probe)."""
    from rush.collect.probe import ingest_probe_files
    from rush.collect.service import open_store

    feature_store = open_store(store)
    try:
        count = ingest_probe_files(files, feature_store)
    finally:
        close = getattr(feature_store, "close", None)
        if callable(close):
            close()
    typer.echo(f"ingested {count} samples from {len(files)} file(s) into {store}")


@probe_app.command("submit")
def probe_submit(
    rjms: str = typer.Option("slurm", "--rjms", help="RJMS backend name."),
    rjms_option: list[str] = typer.Option([], "--rjms-option", help="Backend option KEY=VALUE (repeatable)."),
    ntasks: int = typer.Option(4, "--ntasks", min=2, help="MPI ranks."),
    nodes: int | None = typer.Option(None, "--nodes", min=1, help="Spread the ranks over N nodes."),
    ring_bytes: str = typer.Option("100MB", "--ring-bytes"),
    ring_iterations: int = typer.Option(10, "--ring-iterations", min=1),
    allreduce_bytes: str = typer.Option("100MB", "--allreduce-bytes"),
    allreduce_iterations: int = typer.Option(5, "--allreduce-iterations", min=1),
    output_dir: Path = typer.Option(
        Path.cwd(), "--output-dir", help="Shared directory for mpi_probe-<jobid>.json."
    ),
    time_limit: float = typer.Option(600.0, "--time-limit", help="Seconds."),
    partition: str = typer.Option("", "--partition"),
    launcher: str = typer.Option("mpirun", "--launcher", help="MPI launcher command inside the job."),
    python: str = typer.Option(sys.executable, "--python", help="Python with mpi4py on the compute nodes."),
) -> None:
    """Submit the MPI ring/allreduce probe as a batch job; print its job id and result path."""
    from rush.collect.probe import probe_arguments, submit_probe
    from rush.rjms.base import get_backend, parse_backend_options

    sizes = _check_sizes(ring_bytes, allreduce_bytes)
    output = output_dir.resolve() / "mpi_probe-{job_id}.json"
    args = probe_arguments(
        ring_bytes=sizes[0],
        ring_iterations=ring_iterations,
        allreduce_bytes=sizes[1],
        allreduce_iterations=allreduce_iterations,
        output=str(output),
    )
    backend = get_backend(rjms, **parse_backend_options(rjms, rjms_option))
    job_id = submit_probe(
        backend, ntasks=ntasks, nodes=nodes, time_limit=time_limit, partition=partition,
        launcher=launcher, python=python, probe_args=args,
    )  # fmt: skip
    typer.echo(f"submitted probe job {job_id}; result: {str(output).replace('{job_id}', str(job_id))}")


def _check_sizes(*sizes: str) -> tuple[str, ...]:
    # Same parser as the probe, so a typo fails here and not on the compute nodes.
    import argparse
    import importlib.util

    from rush.collect.probe import PROBE_SCRIPT

    spec = importlib.util.spec_from_file_location("rush_mpi_probe", PROBE_SCRIPT)
    if spec is None or spec.loader is None:
        raise RushError("probe program not found", where=str(PROBE_SCRIPT))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for size in sizes:
        try:
            module.parse_bytes(size)
        except argparse.ArgumentTypeError as exc:
            raise RushError(
                str(exc), where="--ring-bytes/--allreduce-bytes", fix="use e.g. 4096, 1MiB, 100MB"
            ) from None
    return sizes


@energy_app.command("classify")
def energy_classify(
    csv_file: Path | None = typer.Argument(None, help="One job's CSV with timestamp,watts columns."),
    trace: Path | None = typer.Option(
        None, "--trace", help="CSV with job_id,timestamp,watts: classify each job."
    ),
    store: Path | None = typer.Option(None, "--store", help="Feature store to read a job's power from."),
    hosts: str = typer.Option("", "--hosts", help="With --store: the job's hosts, comma-separated."),
    start: float | None = typer.Option(None, "--start", help="With --store: job start (unix s)."),
    end: float | None = typer.Option(None, "--end", help="With --store: job end (unix s)."),
    metric: str = typer.Option("rapl_package_watts", "--metric", help="With --store: the watts metric."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
    trim_fraction: float = typer.Option(0.10, "--trim-fraction"),
    stationarity_sd: float = typer.Option(0.10, "--stationarity-sd"),
    constant_sd: float = typer.Option(0.05, "--constant-sd"),
    periodic_strength: float = typer.Option(0.6, "--periodic-strength"),
    min_points: int = typer.Option(30, "--min-points"),
) -> None:
    """Classify job power profiles: constant, periodic, stationary-variable or non-stationary."""
    from rush.energy.classify import (
        ProfileError,
        ProfileThresholds,
        classify_power,
        classify_trace,
        read_power_csv,
    )

    thresholds = ProfileThresholds(
        trim_fraction=trim_fraction,
        stationarity_sd=stationarity_sd,
        constant_sd=constant_sd,
        periodic_strength=periodic_strength,
        min_points=min_points,
    )
    chosen = sum(x is not None for x in (csv_file, trace, store))
    if chosen != 1:
        raise RushError("give exactly one of FILE, --trace or --store", where="rush energy classify")
    if trace is not None:
        results = classify_trace(trace, thresholds)
        failed = 0
        rows = {}
        for job, result in results.items():
            if isinstance(result, ProfileError):
                failed += 1
                rows[job] = {"profile": None, "error": result.message}
            else:
                rows[job] = result.as_dict()
        if as_json:
            typer.echo(json.dumps(rows, indent=2, sort_keys=True))
        else:
            typer.echo("job_id,profile,reason")
            for job, row in rows.items():
                typer.echo(
                    f"{job},{row['profile'] or 'unclassified'},{row.get('reason') or row.get('error')}"
                )
        if failed == len(results):
            raise typer.Exit(1)
        return
    if csv_file is not None:
        t, w = read_power_csv(csv_file)
        result = classify_power(t, w, thresholds, where=str(csv_file))
    else:
        from rush.energy.classify import job_power_series

        if not hosts or start is None or end is None:
            raise RushError("--store needs --hosts, --start and --end", where="rush energy classify")
        t, w = job_power_series(store, [h for h in hosts.split(",") if h], start, end, metric)  # type: ignore[arg-type]
        result = classify_power(t, w, thresholds, where=f"{store} hosts {hosts} [{start:g}, {end:g}]")
    if as_json:
        typer.echo(json.dumps(result.as_dict(), indent=2, sort_keys=True))
    else:
        typer.echo(f"{result.profile}: {result.reason}")
