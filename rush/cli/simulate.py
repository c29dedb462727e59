"""``rush simulate`` and ``rush compare``: replay a trace through the core."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from rush.cli.main import app
from rush.core.config import BACKFILL_MODES, CoreConfig
from rush.errors import RushError

CLASS_MODES = ("plain", "idempotent", "clairvoyant")

TRACE_HELP = "A trace file (SWF, gzip or plain; sacct JSON/parsable2), a catalogue name (e.g. KTH-SP2) or lublin[:JOBS[:PROCS[:SEED]]]."


def _load_workload(trace: str, procs: int | None, strict: bool):
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    loaded = load_trace(trace, strict=strict)
    if procs is not None and procs <= 0:
        raise RushError(f"--procs must be positive, got {procs}", where="--procs")
    return loaded, workload_from_trace(loaded, machine_procs=procs)


def _check_backfill(backfill: str) -> None:
    if backfill not in BACKFILL_MODES:
        raise RushError(
            f"unknown backfilling {backfill!r}",
            where="--backfill",
            fix=f"use one of: {', '.join(BACKFILL_MODES)}",
        )


def run_one(
    trace_obj,
    workload,
    policy: str,
    backfill: str,
    threshold: str,
    backfill_policy: str | None,
    classes: str | None,
    model: Path | None,
    progress: bool,
):
    """One simulation, with the runtime-class variants when ``classes`` is given."""
    from rush.sim.engine import SimInputs, simulate

    inputs = None
    classification = None
    kwargs: dict = {}
    if classes is not None:
        if classes not in CLASS_MODES:
            raise RushError(
                f"unknown --classes {classes!r}",
                where="--classes",
                fix=f"use one of: {', '.join(CLASS_MODES)}",
            )
        from rush.models.variants import class_inputs

        inputs, kwargs, classification = class_inputs(trace_obj, workload, classes, model)
    config = CoreConfig.from_names(policy, backfill, threshold, backfill_policy, **kwargs)
    result = simulate(workload, config, inputs or SimInputs(), progress=progress, label=policy)
    return result, classification


@app.command("simulate")
def simulate_command(
    trace: str = typer.Argument(..., help=TRACE_HELP),
    policy: str = typer.Option(
        "FCFS",
        "--policy",
        "-p",
        help="Priority policy: FCFS, SPF, SAF, WFP3, UNICEF, F1..F4, LIN, LINEAR:q=..,p=...",
    ),
    backfill: str = typer.Option("easy", "--backfill", "-b", help="easy | conservative | none"),
    backfill_policy: str | None = typer.Option(
        None, "--backfill-policy", help="Order of the backfill scan (default: --policy)."
    ),
    threshold: str = typer.Option(
        "200000", "--threshold", "-T", help="Starvation threshold in seconds, or 'none'."
    ),
    procs: int | None = typer.Option(
        None, "--procs", help="Machine size (default: MaxProcs header, else the largest job)."
    ),
    tau: float = typer.Option(10.0, "--tau", help="Bounded-slowdown threshold tau in seconds."),
    jobs_out: Path | None = typer.Option(None, "--jobs-out", help="Write per-job records as CSV."),
    out: Path | None = typer.Option(None, "--out", help="Save the run into RUN_DIR for `rush report`."),
    classes: str | None = typer.Option(
        None, "--classes", help="Runtime classes: plain | idempotent | clairvoyant."
    ),
    model: Path | None = typer.Option(
        None, "--model", help="A trained runtime-class model (default: walk-forward training)."
    ),
    strict: bool = typer.Option(False, "--strict", help="Stop at the first malformed trace line."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object of metrics."),
) -> None:
    """Replay TRACE through the scheduling core and print the literature's metrics."""
    from rush.sim.metrics import compute_metrics

    _check_backfill(backfill)
    trace_obj, workload = _load_workload(trace, procs, strict)
    result, classification = run_one(
        trace_obj,
        workload,
        policy,
        backfill,
        threshold,
        backfill_policy,
        classes,
        model,
        progress=not as_json,
    )
    metrics = compute_metrics(result, tau=tau)
    metrics["skipped_lines"] = int(sum(trace_obj.skipped.values()))
    if classification is not None:
        metrics["classification"] = classification | {
            "kills": int(result.requeues.sum()),
            "wasted_area": float(result.wasted_area.sum()),
        }
    time_origin = float(workload.submit.min()) if len(workload) else 0.0
    if jobs_out is not None:
        result.write_jobs_csv(jobs_out, time_origin=time_origin)
    if out is not None:
        from rush.sim.runs import save_run

        save_run(out, _label(policy, backfill, classes), result, metrics)
    if as_json:
        typer.echo(json.dumps(_jsonable(metrics), sort_keys=True))
    else:
        _print_table(trace, {_label(policy, backfill, classes): metrics})


@app.command("compare")
def compare_command(
    trace: str = typer.Argument(..., help=TRACE_HELP),
    policies: str = typer.Option("FCFS,SPF,SAF,WFP3", "--policies", help="Comma-separated policies."),
    backfill: str = typer.Option("easy", "--backfill", "-b", help="easy | conservative | none"),
    threshold: str = typer.Option(
        "200000", "--threshold", "-T", help="Starvation threshold in seconds, or 'none'."
    ),
    procs: int | None = typer.Option(None, "--procs"),
    tau: float = typer.Option(10.0, "--tau"),
    out: Path | None = typer.Option(None, "--out", help="Save every run into RUN_DIR for `rush report`."),
    strict: bool = typer.Option(False, "--strict"),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of metric objects."),
) -> None:
    """Replay TRACE under several policies and print them side by side."""
    from rich.progress import Progress

    from rush.sim.metrics import compute_metrics

    _check_backfill(backfill)
    names = [p.strip() for p in policies.split(",") if p.strip()]
    if not names:
        raise RushError("no policies given", where="--policies", fix="e.g. --policies FCFS,SPF,SAF")
    trace_obj, workload = _load_workload(trace, procs, strict)
    table: dict[str, dict] = {}
    with Progress(transient=True, disable=as_json or not sys.stderr.isatty()) as bar:
        task = bar.add_task("simulating", total=len(names))
        for name in names:
            bar.update(task, description=f"{name}-{backfill}")
            result, _ = run_one(
                trace_obj, workload, name, backfill, threshold, None, None, None, progress=False
            )
            metrics = compute_metrics(result, tau=tau)
            label = _label(name, backfill, None)
            table[label] = metrics
            if out is not None:
                from rush.sim.runs import save_run

                save_run(out, label, result, metrics)
            bar.advance(task)
    if as_json:
        typer.echo(json.dumps([_jsonable({"label": k} | v) for k, v in table.items()], sort_keys=True))
    else:
        _print_table(trace, table)


def _label(policy: str, backfill: str, classes: str | None) -> str:
    base = f"{policy.split(':')[0].upper()}-{backfill}"
    return f"{base}-{classes}" if classes else base


SHOWN = (
    ("jobs", "jobs", "{:.0f}"),
    ("mean_wait", "mean wait [s]", "{:.0f}"),
    ("max_wait", "max wait [s]", "{:.0f}"),
    ("mean_bounded_slowdown", "mean bsld", "{:.2f}"),
    ("mean_pp_bounded_slowdown", "mean pp-bsld", "{:.3f}"),
    ("mean_response_time", "mean response [s]", "{:.0f}"),
    ("awrt", "AWRT [s]", "{:.0f}"),
    ("utilization", "utilization", "{:.3f}"),
    ("utilization_window", "util. 15-85%", "{:.3f}"),
    ("throughput_std", "throughput SD", "{:.3f}"),
    ("makespan", "makespan [s]", "{:.0f}"),
    ("backfilled", "backfilled", "{:.0f}"),
    ("killed", "walltime kills", "{:.0f}"),
)


def _print_table(trace: str, table: dict[str, dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    view = Table(title=f"rush: {trace}")
    view.add_column("metric")
    for label in table:
        view.add_column(label, justify="right")
    for key, title, fmt in SHOWN:
        row = []
        for metrics in table.values():
            value = metrics.get(key)
            row.append("-" if value is None else fmt.format(value))
        view.add_row(title, *row)
    first = next(iter(table.values()))
    dropped = first.get("dropped", 0)
    Console().print(view)
    if dropped:
        Console().print(f"dropped jobs: {dropped} {first.get('dropped_by_reason', '')}")


def _jsonable(obj):
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, float) and obj != obj:
        return None
    return obj
