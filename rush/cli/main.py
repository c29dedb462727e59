"""The ``rush`` command line. Sub-command groups live in their own modules.

``rush <command> ...`` imports only the module that defines ``<command>``
(:data:`COMMAND_MODULES`): ``rush explain`` does not pay for the simulator's or the
collectors' imports. ``rush --help``, an unknown command and ``from rush.cli.main import app``
(the docs generator, the tests) get every command.
"""

from __future__ import annotations

import importlib
import sys

import typer

from rush.errors import RushError

# The first word of a command line -> the rush.cli module that defines it.
COMMAND_MODULES: dict[str, str] = {
    "simulate": "simulate",
    "compare": "simulate",
    "explain": "explain",
    "status": "explain",
    "replay": "replay",
    "report": "report",
    "daemon": "daemon",
    "flux-module": "flux",
    "warmup": "warmup",
    "collect": "collect",
    "probe": "collect",
    "energy": "collect",
    "trace": "trace",
    "train": "train",
    "sweep": "sweep",
    "dataset": "dataset",
    "campaign": "campaign",
    "experiment": "experiment",
}
# Modules that hold a sub-app (``app``) added under a group name, with the group's help.
GROUPS: dict[str, str] = {
    "trace": "Inspect, fetch, convert, resample and synthesise traces.",
    "train": "Train models from traces.",
    "sweep": "Run grids of simulations on Dask (resumable).",
    "dataset": "Build variability datasets from campaign records.",
    "campaign": "Run control-job campaigns through the RJMS.",
    "experiment": "Reproduce published studies (one command each).",
}
_registered: set[str] = set()


def register(modules: list[str] | None = None) -> typer.Typer:
    """Import the command modules (all by default) so that their commands are on the app."""
    from rush.cli.app import app

    wanted = [m for m in modules or sorted(set(COMMAND_MODULES.values())) if m not in _registered]
    loaded = {name: importlib.import_module(f"rush.cli.{name}") for name in wanted}
    for name in GROUPS:  # after the modules' own commands, in this order (rush --help's)
        if name in loaded:
            app.add_typer(loaded[name].app, name=name, help=GROUPS[name])
    _registered.update(loaded)
    return app


def __getattr__(name: str) -> typer.Typer:
    # ``from rush.cli.main import app``: the whole command line.
    if name == "app":
        return register()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    args = sys.argv[1:]
    first = args[0] if args else ""
    app = register([COMMAND_MODULES[first]] if first in COMMAND_MODULES else None)
    try:
        app()
    except RushError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
