"""``rush replay``: drive a real RJMS with a trace window and compare it with the simulator."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from rush.cli.app import app
from rush.errors import RushError


def _order_text(order: dict) -> str:
    if order["same"]:
        return "the simulator's"
    return f"{order['inversions']} of {order['pairs']} pairs inverted"


@app.command("replay")
def replay_command(
    trace: str = typer.Argument(..., help="A trace path or catalogue name."),
    window: str = typer.Option(..., "--window", help="START:N — N jobs in submit order from job START."),
    speedup: float = typer.Option(1000.0, "--speedup", help="Divide times by K."),
    rjms: str = typer.Option("slurm", "--rjms", help="RJMS backend name."),
    rjms_option: list[str] = typer.Option([], "--rjms-option", help="Backend option KEY=VALUE (repeatable)."),
    config: Path | None = typer.Option(
        None,
        "--config",
        help="rush.toml: run daemon cycles during the replay with its policy (priority mode), "
        "or the rush Flux scheduler module's configuration (scheduler mode).",
    ),
    mode: str = typer.Option(
        "priority",
        "--mode",
        help="priority: rush sets priorities, the RJMS's scheduler starts jobs; scheduler (Flux "
        "only, needs --config): rush's scheduler module replaces the instance's for the replay.",
    ),
    policy: str = typer.Option(
        "FCFS", "--policy", help="Policy of the simulated side when no --config is given."
    ),
    backfill: str = typer.Option("easy", "--backfill"),
    timeout: float = typer.Option(3600.0, "--timeout", help="Give up after this many seconds."),
    out: Path | None = typer.Option(None, "--out", help="Write the fidelity report as JSON."),
    estimates: Path | None = typer.Option(
        None,
        "--estimates",
        help="Record start-time estimates at every poll, rush's (the daemon's journal; needs "
        "--config; in scheduler mode the module's sched.t_estimate) beside the RJMS's own "
        "(squeue --start; Flux sched.t_estimate), "
        "and write each job's prediction against its real start as CSV; the summary by wait "
        "class goes into the --out report and is printed.",
    ),
) -> None:
    """Submit a trace window as sleep jobs, run the daemon live, and report simulator vs reality."""
    import contextlib
    import os

    from rush.core.config import CoreConfig
    from rush.models.policies.heuristic_file import parse_policy_text
    from rush.rjms.base import get_backend, parse_backend_options
    from rush.studies.replay import MODES, ReplayOptions, flux_rush_scheduler, replay
    from rush.studies.replay_window import Window
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    if out is not None and (out.is_dir() or not out.parent.is_dir()):
        # Checked before any job is submitted, not after an hour of replay.
        raise RushError(
            f"cannot write the report to {out}", where="--out", fix="a file path in an existing directory"
        )
    if mode not in MODES:
        raise RushError(f"unknown mode {mode!r}", where="--mode", fix=f"one of: {', '.join(MODES)}")
    if estimates is not None and (estimates.is_dir() or not estimates.parent.is_dir()):
        raise RushError(
            f"cannot write the estimates to {estimates}",
            where="--estimates",
            fix="a file path in an existing directory",
        )
    if estimates is not None and config is None:
        raise RushError(
            "rush's estimates come from the daemon's journal (priority mode) or the scheduler "
            "module's t_estimate (scheduler mode), both run with a rush.toml",
            where="--estimates",
            fix="give --config rush.toml",
        )
    if mode == "scheduler" and (rjms != "flux" or config is None):
        raise RushError(
            "scheduler mode runs rush's Flux scheduler module with a rush.toml",
            where="--mode scheduler",
            fix="give --rjms flux and --config rush.toml (the module's policy), or use --mode priority",
        )
    parsed_window = Window.parse(window)
    options = parse_backend_options(rjms, rjms_option)  # unknown keys and bad values: exit 2
    workload = workload_from_trace(load_trace(trace))
    cycle = None
    recorder = None
    scheduler: contextlib.AbstractContextManager = contextlib.nullcontext()
    if mode == "scheduler":
        from rush.planner.config import load_config

        # The module decides; the simulator gets the same core configuration from the same file.
        core_config = load_config(config).core_config()
        backend = get_backend(rjms, **options)
        uri = str(options.get("uri") or os.environ.get("FLUX_URI", ""))
        scheduler = flux_rush_scheduler(uri, config)
        if estimates is not None:
            from rush.studies.estimate_accuracy import module_recorder

            recorder = module_recorder(uri)
            cycle = recorder
    elif config is not None:
        from rush.daemon.service import replay_hooks

        core_config, backend, cycle = replay_hooks(config)
        if estimates is not None:
            from rush.planner.config import load_config
            from rush.studies.estimate_accuracy import recorder_for

            recorder = recorder_for(backend, load_config(config).daemon.journal, cycle)
            cycle = recorder
    else:
        core_config = CoreConfig.from_names(parse_policy_text(policy), backfill, 200_000)
        backend = get_backend(rjms, **options)
    try:
        with scheduler:
            report = replay(
                backend,
                workload,
                parsed_window,
                speedup,
                core_config,
                ReplayOptions(
                    cycle=cycle, timeout=timeout, say=lambda text: typer.echo(text, err=True), mode=mode
                ),
            )
    except KeyboardInterrupt:
        # replay() has cancelled the submitted jobs and said so.
        typer.echo("replay interrupted", err=True)
        raise typer.Exit(130) from None
    summary_text = ""
    if recorder is not None and estimates is not None:
        from rush.studies import estimate_accuracy
        from rush.studies.replay import GRANULARITY

        ids = {int(k): int(v) for k, v in report["rjms_job_ids"].items()}
        rows, summary = estimate_accuracy.report(
            recorder, backend, ids, speedup, GRANULARITY.get(report["rjms"], 5.0)
        )
        estimate_accuracy.write_csv(rows, estimates)
        report["start_estimates"] = summary
        summary_text = estimate_accuracy.table(summary["first"])
    text = json.dumps(report, indent=2, sort_keys=True)
    if out is not None:
        out.write_text(text)
    diff = report["start_difference"]
    order = report["start_order"]
    typer.echo(
        f"replayed {report['jobs']} jobs ({report['rjms']}, {report['mode']} mode): |wait difference| "
        f"mean {diff['mean_abs']:.1f} s, median {diff['median_abs']:.1f} s, p90 {diff['p90_abs']:.1f} s, "
        f"max {diff['max_abs']:.1f} s; {diff['within_5s'] * 100:.0f}% within 5 s, "
        f"{diff['within_granularity'] * 100:.0f}% within {diff['granularity']:g} s"
    )
    typer.echo(f"  start order: {_order_text(order)}")
    measured = report.get("measured_runtimes")
    if measured is not None:  # the simulator with each job's measured run: the decisions alone
        m_diff = measured["start_difference"]
        typer.echo(
            f"  with the measured run lengths: |wait difference| mean {m_diff['mean_abs']:.2f} s, "
            f"max {m_diff['max_abs']:.2f} s, {m_diff['within_granularity'] * 100:.0f}% within "
            f"{m_diff['granularity']:g} s; start order: {_order_text(measured['start_order'])}"
        )
    slurm_mode = report.get("slurm_mode")
    if slurm_mode is not None:  # the simulator's Slurm mode, from this Slurm's own settings
        s_diff = slurm_mode["start_difference"]
        typer.echo(
            f"  Slurm mode (this Slurm's slurm.conf settings): |wait difference| mean {s_diff['mean_abs']:.1f} s, "
            f"p90 {s_diff['p90_abs']:.1f} s, {s_diff['within_5s'] * 100:.0f}% within 5 s; start order: "
            f"{_order_text(slurm_mode['start_order'])}"
        )
    real = report["rjms"]
    if summary_text:
        typer.echo(
            f"start estimates at submit (trace seconds, K={speedup:g}; the RJMS's timing granularity is "
            f"{report['start_estimates']['granularity_trace_seconds']:g} s):"
        )
        typer.echo(summary_text)
    for key, pair in report["metrics"].items():
        typer.echo(f"  {key:24} simulator {pair['simulator']!s:>14}  {real} {pair[real]!s:>14}")
    if report["unfinished"]:
        # A partial comparison is not a pass: say how many jobs are missing from it.
        typer.echo(
            f"warning: {report['unfinished']} of {report['jobs'] + report['unfinished']} replayed jobs "
            "have no outcome from the RJMS and are not compared",
            err=True,
        )
        raise typer.Exit(1)
