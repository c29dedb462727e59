"""``rush flux-module``: where the Flux scheduler module is, and what the broker needs to load it."""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

import typer

from rush.cli.app import app


@app.command("flux-module")
def flux_module_command(
    pythonpath: bool = typer.Option(
        False,
        "--pythonpath",
        help="Print the FLUX_PYTHONPATH_PREPEND value the Flux broker needs to import rush instead.",
    ),
) -> None:
    """Print the path of rush's Flux scheduler module (flux module load PATH config=rush.toml).

    The broker runs Python modules with its own python3, so rush and its dependencies must be
    on that interpreter's path: set FLUX_PYTHONPATH_PREPEND to what --pythonpath prints (in
    the flux service's environment for a system instance). See docs/admin-flux.md.
    """
    import rush

    package = Path(rush.__file__).resolve().parent
    if pythonpath:
        paths = dict.fromkeys(
            [str(package.parent), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
        )
        typer.echo(":".join(paths))
        return
    module = package / "flux_module" / "sched-rush.py"
    if not module.is_file():  # an install that left the module file out
        typer.secho(f"error: {module} is missing; reinstall rush", fg="red", err=True)
        sys.exit(2)
    typer.echo(str(module))
