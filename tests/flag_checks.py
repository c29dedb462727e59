"""The tests' tools for scripts' flags. Scanners of a script's command line (``ast``, nothing
run): the flags argparse converts with a bare ``int`` or ``float`` (no least value, no cap: a
count of 0, -5 or 10^12 would reach the work), and the list flags a script splits itself
(``args.X.split(",")``: a bad item is met later, or not at all); tests/test_benchmark_args.py
runs them over benchmarks/, tests/studies/test_script_args.py over sim/. And :func:`parse_flag`,
one value through an argparse type as a script's parser would take it."""

from __future__ import annotations

import argparse
import ast
from pathlib import Path
from typing import Any

BARE = ("int", "float")
SEPARATORS = (",", ";")


def _flag(node: ast.Call) -> str:
    first = node.args[0] if node.args else None
    return first.value if isinstance(first, ast.Constant) else "?"


def unchecked_flags(path: Path) -> list[str]:
    """The flags of ``path`` whose values argparse converts with a bare ``int`` or ``float``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            for kw in node.keywords:
                if kw.arg == "type" and isinstance(kw.value, ast.Name) and kw.value.id in BARE:
                    found.append(f"{path.name}: {_flag(node)}")
    return found


def split_lists(path: Path) -> list[str]:
    """The places in ``path`` that split a flag's value by commas or semicolons themselves."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "split" and node.args:
            target, sep = node.func.value, node.args[0]
            if isinstance(target, ast.Attribute) and getattr(target.value, "id", "") == "args":
                if isinstance(sep, ast.Constant) and sep.value in SEPARATORS:
                    found.append(f"{path.name}:{node.lineno} --{target.attr}")
    return found


def parse_flag(kind: Any, text: str) -> Any:
    """``--x TEXT`` parsed with ``type=kind``; a refused value raises ``argparse.ArgumentError``
    (naming ``--x``) instead of exiting."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--x", type=kind)
    return parser.parse_args(["--x", text]).x
