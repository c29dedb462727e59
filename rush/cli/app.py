"""The ``rush`` Typer application and its root options.

Sub-command modules add their commands to ``app``; :mod:`rush.cli.main` imports the ones a
command line needs (all for ``rush --help``) and runs it. Kept apart from ``main`` so that no sub-command module imports ``main`` (a cycle).
"""

from __future__ import annotations

from pathlib import Path

import typer

from rush.cli import lean_options

lean_options.install()
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
