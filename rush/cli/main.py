"""The ``rush`` command line. Sub-command groups live in their own modules."""

from __future__ import annotations

import sys

import typer

from rush.errors import RushError

app = typer.Typer(
    name="rush",
    help="rush: a resource-utilization-aware, learning scheduler for HPC clusters.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _register() -> None:
    # Each module adds its commands to ``app`` (or exposes a sub-app named ``app``).
    from rush.cli import collect as _collect  # noqa: F401
    from rush.cli import daemon as _daemon  # noqa: F401
    from rush.cli import replay as _replay  # noqa: F401
    from rush.cli import report as _report  # noqa: F401
    from rush.cli import simulate as _simulate  # noqa: F401
    from rush.cli import trace as _trace
    from rush.cli import train as _train

    app.add_typer(_trace.app, name="trace", help="Inspect, fetch, convert, resample and synthesise traces.")
    app.add_typer(_train.app, name="train", help="Train models from traces.")


_register()


def main() -> None:
    try:
        app()
    except RushError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
