"""The command line of a study script whose ``main`` takes its arguments by position: an
argparse parser made from ``main``'s signature, so that a missing, extra or malformed argument
is refused with exit 2 and a usage line that names each argument, before any work (a positional
``sys.argv`` read stopped with an IndexError or ValueError traceback instead)."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# Parameter annotations are strings (``from __future__ import annotations``): the type named
# first converts the argument (``Path | None`` -> Path); any other is passed as text.
CONVERT: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "Path": Path}


def _convert(annotation: object) -> Callable[[str], Any]:
    return CONVERT.get(str(annotation).split("|")[0].strip(), str)


def parser_for(main: Callable[..., Any], description: str = "") -> argparse.ArgumentParser:
    """One positional argument per parameter of ``main``: required without a default, optional
    with one, any number for ``*args`` or a ``list[...]`` parameter (given as a list)."""
    parser = argparse.ArgumentParser(description=description)
    for p in inspect.signature(main).parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            parser.add_argument(p.name, nargs="*", type=_convert(p.annotation))
        elif str(p.annotation).startswith("list["):
            parser.add_argument(p.name, nargs="*")
        elif p.default is p.empty:
            parser.add_argument(p.name, type=_convert(p.annotation))
        else:
            parser.add_argument(p.name, nargs="?", default=p.default, type=_convert(p.annotation))
    return parser


def run_main(main: Callable[..., Any], argv: Sequence[str] | None = None, description: str = "") -> Any:
    """``main`` called with the command line's arguments, checked by :func:`parser_for`."""
    args = parser_for(main, description).parse_args(argv)
    values: list[Any] = []
    for p in inspect.signature(main).parameters.values():
        value = getattr(args, p.name)
        if p.kind is p.VAR_POSITIONAL:
            values.extend(value)
        else:
            values.append(value)
    return main(*values)
