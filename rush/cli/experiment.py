"""``rush experiment``: studies that reproduce published results, one command each.

Each study is a module of :mod:`rush.cli.experiments` defining ``register(app)``, which adds
one command to this group; new studies need no edit here.
"""

from __future__ import annotations

import importlib
import pkgutil

import typer

from rush.cli import experiments

app = typer.Typer(no_args_is_help=True)

for _info in sorted(pkgutil.iter_modules(experiments.__path__), key=lambda m: m.name):
    if not _info.name.startswith("_"):
        importlib.import_module(f"{experiments.__name__}.{_info.name}").register(app)
