"""``rush replay``: drive a real RJMS with a trace window and compare it with the simulator."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from rush.cli.main import app
from rush.errors import RushError


def _parse_options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise RushError(
                f"bad backend option {pair!r}",
                where="--rjms-option",
                fix="write KEY=VALUE, e.g. slurm_conf=/etc/slurm/slurm.conf",
            )
        options[key.strip()] = value
    return options


@app.command("replay")
def replay_command(
    trace: str = typer.Argument(..., help="A trace path or catalogue name."),
    window: str = typer.Option(..., "--window", help="START:N — N jobs in submit order from job START."),
    speedup: float = typer.Option(1000.0, "--speedup", help="Divide times by K."),
    rjms: str = typer.Option("slurm", "--rjms", help="RJMS backend name."),
    rjms_option: list[str] = typer.Option([], "--rjms-option", help="Backend option KEY=VALUE (repeatable)."),
    config: Path | None = typer.Option(
        None, "--config", help="rush.toml: run daemon cycles during the replay with its policy."
    ),
    policy: str = typer.Option(
        "FCFS", "--policy", help="Policy of the simulated side when no --config is given."
    ),
    backfill: str = typer.Option("easy", "--backfill"),
    timeout: float = typer.Option(3600.0, "--timeout", help="Give up after this many seconds."),
    out: Path | None = typer.Option(None, "--out", help="Write the fidelity report as JSON."),
) -> None:
    """Submit a trace window as sleep jobs, run the daemon live, and report simulator vs reality."""
    from rush.core.config import CoreConfig
    from rush.daemon.replay import replay
    from rush.daemon.replay_window import Window
    from rush.rjms.base import get_backend
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    if out is not None and (out.is_dir() or not out.parent.is_dir()):
        # Checked before any job is submitted, not after an hour of replay.
        raise RushError(
            f"cannot write the report to {out}", where="--out", fix="a file path in an existing directory"
        )
    workload = workload_from_trace(load_trace(trace))
    cycle = None
    if config is not None:
        from rush.daemon.service import replay_hooks

        core_config, backend, cycle = replay_hooks(config)
    else:
        core_config = CoreConfig.from_names(policy, backfill, 200_000)
        backend = get_backend(rjms, **_parse_options(rjms_option))
    try:
        report = replay(
            backend,
            workload,
            Window.parse(window),
            speedup,
            core_config,
            cycle=cycle,
            timeout=timeout,
            say=lambda text: typer.echo(text, err=True),
        )
    except KeyboardInterrupt:
        # replay() has cancelled the submitted jobs and said so.
        typer.echo("replay interrupted", err=True)
        raise typer.Exit(130) from None
    text = json.dumps(report, indent=2, sort_keys=True)
    if out is not None:
        out.write_text(text)
    diff = report["start_difference"]
    typer.echo(
        f"replayed {report['jobs']} jobs: |wait difference| mean {diff['mean_abs']:.1f} s, "
        f"median {diff['median_abs']:.1f} s, p90 {diff['p90_abs']:.1f} s, max {diff['max_abs']:.1f} s; "
        f"{diff['within_5s'] * 100:.0f}% within 5 s"
    )
    for key, pair in report["metrics"].items():
        typer.echo(f"  {key:24} simulator {pair['simulator']!s:>14}  slurm {pair['slurm']!s:>14}")
    if report["unfinished"]:
        # A partial comparison is not a pass: say how many jobs are missing from it.
        typer.echo(
            f"warning: {report['unfinished']} of {report['jobs'] + report['unfinished']} replayed jobs "
            "have no outcome from the RJMS and are not compared",
            err=True,
        )
        raise typer.Exit(1)
