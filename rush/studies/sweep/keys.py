"""A cell's key: the hash of its canonical JSON, so that a resumed sweep finds its finished cells."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any

from rush.errors import ConfigError

# Columns the sweep adds to every row; a cell parameter or a result field may not use them.
KEY = "key"
PART = "part"
PARTS = "parts"
ERROR_TYPE = "error_type"
ERROR = "error"
RESERVED = (KEY, PART, PARTS, ERROR_TYPE, ERROR)


def _check_value(value: Any, where: str, depth: int = 0) -> None:
    """A cell value must be JSON: str, int, float (finite), bool, None, lists and str-keyed dicts."""
    if depth > 20:
        raise ConfigError("cell nested too deeply", where=where, fix="flatten the cell's parameters")
    if value is None or isinstance(value, str | bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(f"a cell value is {value}", where=where, fix="use finite numbers (or a string)")
        return
    if isinstance(value, list | tuple):
        for item in value:
            _check_value(item, where, depth + 1)
        return
    if isinstance(value, dict):
        for k, item in value.items():
            if not isinstance(k, str):
                raise ConfigError(f"a cell key is {k!r}", where=where, fix="use string keys")
            _check_value(item, where, depth + 1)
        return
    raise ConfigError(
        f"a cell value of type {type(value).__name__} is not JSON",
        where=where,
        fix="give cells as JSON-able dicts (str, int, float, bool, None, lists, dicts)",
    )


def check_cell(cell: Any, index: int) -> None:
    where = f"cell {index}"
    if not isinstance(cell, dict):
        raise ConfigError(f"a cell is a {type(cell).__name__}", where=where, fix="give each cell as a dict")
    for name, value in cell.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(f"a parameter name is {name!r}", where=where, fix="use non-empty string names")
        if name in RESERVED:
            raise ConfigError(
                f"the parameter name {name!r} is the sweep's own column",
                where=where,
                fix=f"rename it (reserved: {', '.join(RESERVED)})",
            )
        _check_value(value, f"{where}.{name}")


def canonical(cell: dict) -> str:
    return json.dumps(cell, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def cell_key(cell: dict, key_fields: Sequence[str] | None = None) -> str:
    """16 hex digits of the sha256 of the cell's canonical JSON (only ``key_fields`` when given)."""
    if key_fields is not None:
        missing = [f for f in key_fields if f not in cell]
        if missing:
            raise ConfigError(
                f"the cell has no {', '.join(map(repr, missing))}",
                where="key_fields",
                fix="list only parameters every cell has",
            )
        cell = {f: cell[f] for f in key_fields}
    return hashlib.sha256(canonical(cell).encode()).hexdigest()[:16]
