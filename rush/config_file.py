"""Reading configuration files safely, and one way to report their validation errors.

:func:`read_toml` is the one reader for ``rush.toml`` and the other TOML inputs (sweep grids);
:func:`explain` turns pydantic's ``ValidationError`` into the :class:`~rush.errors.ConfigError`
every validated input reports (``rush.toml``, ``[collect]``, sweep grids, campaign options).

A configuration file is small. Whatever is given instead — a directory, a FIFO (opening it
would block forever), ``/dev/zero``, a 100 MB file, bytes that are not UTF-8, TOML nested
deeply enough to exhaust the parser's recursion — is a :class:`~rush.errors.ConfigError`
naming the file and the fix, read with work and memory bounded by ``MAX_CONFIG_BYTES``.
"""

from __future__ import annotations

import difflib
import inspect
import ipaddress
import math
import re
import stat
import tomllib
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from rush.errors import ConfigError

# A complete, commented rush.toml is a few kB; 1 MiB leaves room for long partition lists.
MAX_CONFIG_BYTES = 1 << 20
EXAMPLE = "deploy/rush.toml"


def read_toml(path: str | Path, example: str = EXAMPLE) -> dict[str, Any]:
    """The parsed TOML document at ``path``; every problem is a ConfigError with where and fix."""
    path = Path(path)
    where = str(path)
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ConfigError(
            "configuration file not found", where=where, fix=f"copy {example} there and edit it"
        ) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise ConfigError(f"cannot read the configuration: {exc}", where=where) from None
    if not stat.S_ISREG(info.st_mode):
        kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise ConfigError(
            f"the configuration path is {kind}", where=where, fix="give the path of a rush.toml file"
        )
    if info.st_size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"the configuration is {info.st_size} bytes; at most {MAX_CONFIG_BYTES} are read",
            where=where,
            fix=f"give the rush.toml itself (see {example}); this file is not one",
        )
    try:
        with path.open("rb") as handle:
            # Read one byte more than allowed: a file that grew after stat() is still caught.
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(
            f"cannot read the configuration: {exc.strerror}",
            where=where,
            fix="check the file's permissions (the daemon's user must be able to read it)",
        ) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"the configuration is larger than {MAX_CONFIG_BYTES} bytes",
            where=where,
            fix=f"give the rush.toml itself (see {example})",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"not UTF-8: byte 0x{data[exc.start]:02x} at line {line} (byte offset {exc.start})",
            where=f"{where}:{line}",
            fix="save the file as UTF-8 (TOML files must be UTF-8)",
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message ends with "(at line L, column C)".
        raise ConfigError(
            f"not valid TOML: {exc}", where=where, fix="fix the syntax at the line and column shown"
        ) from None
    except RecursionError:
        raise ConfigError(
            "not a usable configuration: arrays or tables nested too deeply",
            where=where,
            fix=f"rush.toml needs at most a few levels of nesting (see {example})",
        ) from None


# -- field checks shared by the daemon's and the collector's configuration models ----------------

_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)\s*([smhd]?)\s*$")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
# RFC 1123 host names; IP addresses are checked by the ipaddress module.
_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
_PORT = re.compile(r"^[0-9]{1,5}$")


def parse_duration(value: float | int | str) -> float:
    """``30`` / ``"30s"`` / ``"5m"`` / ``"12h"`` / ``"14d"`` -> seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a duration: {value!r} (use seconds or a number with s, m, h or d)")
    if not isinstance(value, str):
        return float(value)
    match = _DURATION.match(value)
    if not match:
        raise ValueError(f"not a duration: {value!r} (use seconds or a number with s, m, h or d)")
    return float(match.group(1)) * _SECONDS[match.group(2)]


def duration_or_number(value: Any) -> Any:
    """Before-validator: a duration string becomes seconds; anything else goes to the strict float."""
    return parse_duration(value) if isinstance(value, str) else value


def split_host_port(value: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[IPv6]:PORT`` -> (host without brackets, port); ValueError when malformed."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not _PORT.match(port) or int(port) > 65535:
        raise ValueError(f"must be HOST:PORT with a port 0..65535, e.g. 127.0.0.1:9877, not {value!r}")
    if host.startswith("[") and host.endswith("]"):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ValueError(f"{host} is not an IPv6 address in brackets, e.g. [::1]:9877") from None
        return host[1:-1], int(port)
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        if ":" in host:
            raise ValueError(f"write an IPv6 address in brackets: [{host}]:{port}") from None
        labels = host.removesuffix(".").split(".")
        if len(host) > 253 or not all(_HOST_LABEL.match(label) for label in labels):
            raise ValueError(f"{host!r} is not a host name or IP address") from None
    return host, int(port)


def host_port(value: Any) -> Any:
    """After-validator for ``HOST:PORT`` strings (the value is kept as written)."""
    split_host_port(value)
    return value


def file_path(value: Any) -> str:
    """Before-validator for a file's path: a non-empty string, no NUL, not a directory.

    Returns the string: pydantic's own Path validation follows (in Python and JSON mode)."""
    if isinstance(value, Path):
        value = str(value)
    if not isinstance(value, str):
        raise ValueError("must be a path (a string)")
    if not value.strip():
        raise ValueError("must not be empty")
    if "\0" in value:
        raise ValueError("must not contain a NUL character")
    try:
        is_dir = Path(value).is_dir()
    except OSError as exc:  # e.g. ENAMETOOLONG: is_dir() only answers False for a missing path
        raise ValueError(f"cannot be a path here ({exc.strerror}); give a shorter path") from None
    if is_dir:
        raise ValueError("is a directory; give the path of a file (inside it)")
    return value


def non_finite(value: Any, depth: int = 0, max_depth: int = 8) -> str | None:
    """The first NaN/inf or over-deep nesting inside a free-form table (backend or collector options)."""
    if depth > max_depth:
        return f"nested more than {max_depth} levels"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a finite number"
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for item in items:
        problem = non_finite(item, depth + 1, max_depth)
        if problem:
            return problem
    return None


# -- pydantic's errors as ConfigErrors ----------------------------------------------------------

MAX_SHOWN = 80  # characters of a bad value echoed back: a hostile file may hold megabytes in one


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model a field holds, through ``list[...]``, ``X | None`` and ``Annotated``."""
    if inspect.isclass(annotation) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def _fields(model: type[BaseModel] | None) -> dict[str, Any]:
    """A model's fields by the key an input uses: the alias when there is one (``--runs``)."""
    fields = model.model_fields if model is not None else {}
    return {info.alias or name: info for name, info in fields.items()}


def _walk(model: type[BaseModel], loc: tuple[int | str, ...]) -> tuple[type[BaseModel] | None, Any]:
    """The model holding the last key of ``loc`` and the FieldInfo of the deepest known key on it."""
    parent: type[BaseModel] | None = model
    info = None
    for i, part in enumerate(loc):
        if isinstance(part, int):
            continue  # an index into a list keeps the list's item model
        fields = _fields(parent)
        if part not in fields:
            return parent, info  # a key inside a free-form table: its table's description
        info = fields[part]
        if i < len(loc) - 1:
            parent = _inner_model(info.annotation)
    return parent, info


def key_path(loc: tuple[int | str, ...], prefix: str = "") -> str:
    """``("sources", 0, "kind")`` -> ``sources[0].kind`` (after ``prefix.`` when given)."""
    key = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    return (prefix + key if prefix else key[1:]) or prefix or "top level"


def explain(
    exc: ValidationError, source: str, model: type[BaseModel], *, prefix: str = "", example: str = EXAMPLE
) -> ConfigError:
    """The first validation error as a ConfigError: ``where`` is ``source: key.path``, ``fix`` what to do.

    The fix is the field's description ("KEY must be <description>"), the keys allowed where an
    unknown one was found (with the closest spelling), or ``example`` when the model says nothing."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = tuple(first["loc"])
    key = key_path(loc, prefix)
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    where = f"{source}: {key}"
    parent, info = _walk(model, loc)
    if first["type"] == "extra_forbidden":
        allowed = list(_fields(parent))
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        section = key_path(loc[:-1], prefix) if loc[:-1] or prefix else "the top level"
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        listed = f"; allowed in {section}: {', '.join(allowed)}" if allowed else f"; see {example}"
        return ConfigError(
            f"unknown key {key!r}{more}", where=where, fix=f"remove it or fix its spelling{hint}{listed}"
        )
    description = info.description if info is not None else None
    if first["type"] == "missing":
        return ConfigError(
            f"missing key {key!r}{more}",
            where=where,
            fix=f"add {key}: {description}" if description else f"add it (see {example})",
        )
    value = first.get("input")
    shown = "" if isinstance(value, dict | list) else f" {repr(value)[:MAX_SHOWN]}"
    message = first["msg"].removeprefix("Value error, ")
    # An entry of a list: the description is the list's ("policies must be a list of ...").
    described = loc
    while described and isinstance(described[-1], int):
        described = described[:-1]
    return ConfigError(
        f"bad value{shown} for {key!r}: {message}{more}",
        where=where,
        fix=f"{key_path(described, prefix)} must be {description}" if description else f"see {example}",
    )
