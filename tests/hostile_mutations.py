"""Hypothesis strategies for the fuzz tests of rush's readers: mutations of a valid sample.

``mutate(doc, data)`` replaces or deletes a few leaves of a JSON-like document with hostile
values (NaN, inf, huge and negative numbers, wrong types, long and odd strings);
``byte_mutate(raw, data)`` flips, truncates, inserts and duplicates bytes. Both draw from a
hypothesis ``data`` object, so a derandomized profile gives the same cases every run.
Each fuzz test asserts: a valid result or the surface's documented error type, never another
exception, never a NaN or negative published value.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

HOSTILE_VALUES = [
    None, True, False, 0, -1, -(2**63), 2**63, 2**64, 10**400, -(10**400), 1.5, -0.0,
    math.nan, math.inf, -math.inf, 1e308, -1e308, "", "x", "nan", "inf", "-1", "²", "٣",
    "9" * 5000, "\x00", "1e999", [], {}, [1], {"a": 1}, "a" * 10_000,
    {"set": True, "infinite": False, "number": math.nan},
    {"set": True, "infinite": False, "number": 10**400},
    {"set": True, "infinite": True, "number": 0}, {"set": False}, {"number": -5},
]  # fmt: skip
HOSTILE_LEAVES = st.sampled_from(HOSTILE_VALUES) | st.integers() | st.floats() | st.text(max_size=20)
INSERTS = [b"nan", b"inf", b"-1", b"9" * 400, b"1e308", b"\xff", b"\x00", b"-", b"|", b",", b"\n"]
INSERTS += [b"\r", b";", b"=", b":", b"#", b'"', b"\\", b"[", b"{", "²".encode()]

# Fast and repeatable: the same examples every run, no example database.
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=200,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def leaf_paths(doc: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from leaf_paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from leaf_paths(value, (*prefix, index))


def mutate(doc: Any, data: st.DataObject, most: int = 3) -> Any:
    """A deep copy of ``doc`` with 1..``most`` values replaced by hostile ones or deleted."""
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, most))):
        paths = [p for p in leaf_paths(doc) if p]
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if data.draw(st.integers(0, 4)) == 0 and isinstance(parent, dict):
            del parent[path[-1]]
        else:  # a copy: a shared {} or [] mutated later would make the document cyclic
            parent[path[-1]] = copy.deepcopy(data.draw(HOSTILE_LEAVES))
    return doc


def byte_mutate(raw: bytes, data: st.DataObject) -> bytes:
    """``raw`` with 1..6 byte-level damages."""
    out = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 6))):
        if not out:
            break
        kind = data.draw(st.integers(0, 5))
        at = data.draw(st.integers(0, len(out) - 1))
        if kind == 0:
            out[at] = data.draw(st.integers(0, 255))
        elif kind == 1:
            del out[at:]
        elif kind == 2:
            out[at:at] = data.draw(st.sampled_from(INSERTS))
        elif kind == 3:
            start = data.draw(st.integers(0, len(out) - 1))
            out[at:at] = out[start : start + data.draw(st.integers(0, 50))]
        elif kind == 4:
            del out[at : at + data.draw(st.integers(1, 10))]
        else:
            out[at:at] = data.draw(st.binary(max_size=8))
    return bytes(out)


def finite_and_not_negative(*values: float) -> bool:
    return all(math.isfinite(v) and v >= 0 for v in values)
