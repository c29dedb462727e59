"""Option values that need no conversion skip typer's pydantic adapters (start-up, issue 31).

typer 0.29 converts every option's value through a pydantic ``TypeAdapter`` built for that
option on first use, defaults and ``None`` included: importing pydantic and building the
adapters of ``rush simulate``'s 22 options cost about 0.06 s of CPU per command line (a tenth
of issue 31's 0.6 s replay target), for values that come out unchanged. Here a value that
typer's adapter would return as it is stays as it is without one: ``None`` (any option of one
value); a ``str`` for a plain ``str`` option; an ``int`` or ``float`` for an option of exactly
that type, within its bounds. Two conversions are done here as pydantic does them: a plain
decimal text for an ``int`` option (``int(text)``), and a non-empty text for a ``Path`` option
(``Path(text)``, then typer's own path checks and messages, ``coerce_cli_path``). Anything
else (a float given as text, a choice, a value out of bounds) goes to typer's own adapter,
built then, so those conversions and error messages are typer's.

Relies on typer's private ``_TyperParameter.get_runtime_param``; with a typer that has none
(another version), :func:`install` changes nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

try:
    from typer._param_types import coerce_cli_path
except ImportError:  # another typer
    coerce_cli_path = None

_SIMPLE = (str, int, float)


_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")  # what pydantic's int reads as int(text), surely


class _LeanRuntimeParam:
    """Passes values through that need no conversion; builds typer's runtime param for the rest."""

    def __init__(self, descriptor: Any, build: Any) -> None:
        self.descriptor, self.build, self.full = descriptor, build, None
        self.kind = _kind(descriptor)

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if not (param.multiple or param.nargs != 1):
            if value is None:
                return None  # what typer's RuntimeParam.coerce returns first, for any type
            annotation = self.descriptor.annotation
            if self.kind == "plain" and type(value) is annotation and self._within(value):
                return value
            if (
                self.kind == "plain"
                and annotation is int
                and type(value) is str
                and _DECIMAL.fullmatch(value)
            ):
                if self._within(int(value)):
                    return int(value)
            if self.kind == "path" and type(value) is str and value:
                # typer's own path checks and messages, given the Path pydantic would make of the text
                return coerce_cli_path(
                    Path(value), self.descriptor.parameter_info, path_type=Path, param=param, ctx=ctx
                )
        if self.full is None:
            self.full = self.build(self.descriptor)
        return self.full.coerce(value, param=param, ctx=ctx)

    def _within(self, value: Any) -> bool:
        info = self.descriptor.parameter_info
        low, high = getattr(info, "min", None), getattr(info, "max", None)
        if low is None and high is None:
            return True
        return type(value) is not str and (low is None or value >= low) and (high is None or value <= high)


def _kind(descriptor: Any) -> str:
    """ "plain": a str, int or float option whose adapter returns a value of that type unchanged (in
    bounds); "path": a ``Path`` option (typer checks it with ``coerce_cli_path``); else ""."""
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None or getattr(info, "parser", None) is not None:
        return ""
    if getattr(info, "click_type", None) is not None or descriptor.is_choice:
        return ""
    if descriptor.annotation is Path and getattr(info, "path_type", None) in (None, Path):
        return "path" if coerce_cli_path is not None else ""
    if descriptor.annotation in _SIMPLE and not descriptor.is_path:
        return "plain"
    return ""


def install() -> bool:
    """Wrap typer's runtime parameters (once); False if this typer has no such hook."""
    try:
        from typer import _coercion, core
    except ImportError:
        return False
    parameter = getattr(core, "_TyperParameter", None)
    build = getattr(_coercion, "build_runtime_param", None)
    original = getattr(parameter, "get_runtime_param", None)
    if parameter is None or build is None or original is None or getattr(original, "lean", False):
        return False

    def get_runtime_param(self: Any) -> Any:
        if getattr(self, "_runtime_param", None) is None:
            descriptor = getattr(self, "type_descriptor", None)
            if descriptor is None:
                return original(self)
            self._runtime_param = _LeanRuntimeParam(descriptor, build)
        return self._runtime_param

    get_runtime_param.lean = True  # type: ignore[attr-defined]
    parameter.get_runtime_param = get_runtime_param
    return True
