"""The ``rush`` command line. Sub-command groups live in their own modules."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from rush.errors import RushError

app = typer.Typer(
    name="rush",
    help="rush: a resource-utilization-aware, learning scheduler for HPC clusters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Plain help: typer's rich formatter imports rich and markdown-it (~0.1 s) on every --help.
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        import rush

        typer.echo(f"rush {rush.__version__} ({Path(rush.__file__).parent})")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_print_version,
        is_eager=True,
        help="Print the version and where rush is installed.",
    ),
) -> None:
    """rush: a resource-utilization-aware, learning scheduler for HPC clusters."""


def _register() -> None:
    # Each module adds its commands to ``app`` (or exposes a sub-app named ``app``).
    from rush.cli import campaign as _campaign
    from rush.cli import collect as _collect  # noqa: F401
    from rush.cli import daemon as _daemon  # noqa: F401
    from rush.cli import dataset as _dataset
    from rush.cli import experiment as _experiment
    from rush.cli import flux as _flux  # noqa: F401
    from rush.cli import replay as _replay  # noqa: F401
    from rush.cli import report as _report  # noqa: F401
    from rush.cli import simulate as _simulate  # noqa: F401
    from rush.cli import sweep as _sweep
    from rush.cli import trace as _trace
    from rush.cli import train as _train
    from rush.cli import warmup as _warmup  # noqa: F401

    app.add_typer(_trace.app, name="trace", help="Inspect, fetch, convert, resample and synthesise traces.")
    app.add_typer(_train.app, name="train", help="Train models from traces.")
    app.add_typer(_sweep.app, name="sweep", help="Run grids of simulations on Dask (resumable).")
    app.add_typer(_dataset.app, name="dataset", help="Build variability datasets from campaign records.")
    app.add_typer(_campaign.app, name="campaign", help="Run control-job campaigns through the RJMS.")
    app.add_typer(_experiment.app, name="experiment", help="Reproduce published studies (one command each).")


_register()


def main() -> None:
    try:
        app()
    except RushError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
