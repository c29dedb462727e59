"""The ``rush`` command line. Sub-command groups live in their own modules."""

from __future__ import annotations

import sys

import typer

from rush.cli.app import app
from rush.errors import RushError


def _register() -> None:
    # Each module adds its commands to ``app`` (or exposes a sub-app named ``app``).
    from rush.cli import campaign as _campaign
    from rush.cli import collect as _collect  # noqa: F401
    from rush.cli import daemon as _daemon  # noqa: F401
    from rush.cli import dataset as _dataset
    from rush.cli import experiment as _experiment
    from rush.cli import explain as _explain  # noqa: F401
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
