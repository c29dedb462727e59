"""The ``rush`` command line. Sub-command groups live in their own modules.

``rush <command> ...`` imports only the module that defines ``<command>``
(:data:`COMMAND_MODULES`): ``rush explain`` does not pay for the simulator's or the
collectors' imports. ``rush --help``, an unknown command and ``from rush.cli.main import app``
(the docs generator, the tests) get every command.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
import threading

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
# Commands that end by leaving at once (:func:`leave_at_once`): their output is on stdout/stderr
# or written and closed by `with` blocks before the command returns; the journal is only read.
LEAVE_AT_ONCE = frozenset({"simulate", "compare", "explain", "status"})


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
    except SystemExit as done:
        if first in LEAVE_AT_ONCE:
            leave_at_once(done.code)
        raise


def leave_at_once(code: object) -> None:
    """End the process without the interpreter's teardown; return if it cannot.

    Tearing down numba's and llvmlite's modules and objects costs about 0.3 s of CPU at exit
    (issue 31: a quarter of a replay of SDSC-SP2), and the command line's modules about 0.02 s
    (a tenth of ``rush explain``). What a normal exit does that matters is done here: the
    atexit handlers run (logging, multiprocessing, tempfile and test harnesses), then stdout
    and stderr are flushed. A process with other threads, or whose output cannot be flushed (a
    closed pipe), takes the normal way out.
    """
    if threading.active_count() > 1:
        return
    if code is not None and not isinstance(code, int):
        return  # a message as the code: the normal exit prints it
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        code = code or 120  # what the interpreter returns when its final flush fails
    os._exit((code or 0) & 0xFF)


if __name__ == "__main__":
    main()
