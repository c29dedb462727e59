"""Imports only point down the layers, and no two packages (or two ``rush.cli`` modules) import each other.

Every module under ``rush/`` is parsed with ``ast`` (imports inside functions included: the
project imports lazily for start-up time), each import is mapped to its top-level package
(``rush.models.variability.train`` -> ``models``), and the package's layer is looked up in
``LAYERS`` below, the one place the layering is written down. A package may import its own
layer or any layer below; imports between two packages of one layer are listed in ``SIDEWAYS``
with their reason, and no cycle is allowed between packages or between ``rush.cli`` modules.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache
from graphlib import CycleError, TopologicalSorter
from itertools import pairwise
from pathlib import Path

import pytest

import rush

ROOT = Path(rush.__file__).resolve().parent

# Bottom first. A package may import packages of its own layer or of the layers above it in this list.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("rush", "errors", "config_file", "jit_cache", "hashing", "output_file", "data")),
    ("core", ("core",)),
    ("traces", ("workload",)),
    ("sources", ("rjms", "collect")),
    ("models", ("models", "energy")),
    ("planner", ("planner",)),
    ("shells", ("simulator", "daemon", "flux_module", "contention", "campaign")),
    ("studies", ("studies",)),
    ("command line", ("cli", "__main__")),
)
# Imports between two packages of one layer, each with its reason; any other is refused, and an
# entry no import needs any more must go, so this list only shrinks.
SIDEWAYS: dict[tuple[str, str], str] = {
    ("rush", "jit_cache"): "importing rush points numba's cache at the kernels' version",
    ("config_file", "errors"): "configuration errors are RushErrors",
    ("output_file", "errors"): "a refused output is a RushError",
    ("collect", "rjms"): "the MPI probe is submitted through an RJMS backend (type hints only)",
    ("__main__", "cli"): "python -m rush runs the command line",
}
LAYER_OF: dict[str, int] = {
    package: rank for rank, (_, packages) in enumerate(LAYERS) for package in packages
}


def layer_table() -> str:
    rows = [f"  {rank}. {name}: {', '.join(packages)}" for rank, (name, packages) in enumerate(LAYERS)]
    return "layers, bottom first (a package imports only its own layer or lower ones):\n" + "\n".join(rows)


def module_name(path: Path) -> str:
    parts = ["rush", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    # sched-rush.py is loaded by Flux by path: not an importable name, but its imports count.
    return {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def imported_names(module: str, path: Path) -> list[tuple[str, int]]:
    """Every ``rush...`` module name ``module`` imports, with the line (relative imports resolved)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found.append((base, node.lineno))
            # ``from rush.x import y`` where y is a module imports rush.x.y
            found += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
    return [(name, line) for name, line in found if name == "rush" or name.startswith("rush.")]


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "rush"


@cache
def import_edges() -> tuple[tuple[str, str, int, str], ...]:
    """(importing module, imported module, line, file) for every import of a rush module."""
    modules = all_modules()
    edges = []
    for module, path in modules.items():
        for name, line in imported_names(module, path):
            while name not in modules and "." in name:  # an attribute: its module
                name = name.rpartition(".")[0]
            if name in modules and name != module:
                edges.append((module, name, line, str(path.relative_to(ROOT.parent))))
    return tuple(dict.fromkeys(edges))  # one per import line, in order


def test_every_package_has_a_layer() -> None:
    packages = {package_of(module) for module in all_modules()}
    missing = sorted(packages - set(LAYER_OF))
    assert not missing, (
        f"packages without a layer: {missing}; add each to LAYERS in {__file__}\n{layer_table()}"
    )


def test_imports_only_point_down() -> None:
    upward = [
        f"{where}:{line}: {source} imports {target} "
        f"({package_of(source)}, layer {LAYER_OF[package_of(source)]} -> "
        f"{package_of(target)}, layer {LAYER_OF[package_of(target)]})"
        for source, target, line, where in import_edges()
        if LAYER_OF.get(package_of(target), -1) > LAYER_OF.get(package_of(source), -1)
    ]
    assert not upward, "imports pointing up:\n" + "\n".join(upward) + "\n" + layer_table()


def test_imports_within_a_layer_are_the_listed_ones() -> None:
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for source, target, line, where in import_edges():
        pair = (package_of(source), package_of(target))
        if pair[0] != pair[1] and LAYER_OF.get(pair[0]) == LAYER_OF.get(pair[1]):
            found[pair].append(f"{where}:{line}")
    unlisted = [
        f"  {a} -> {b}: {', '.join(w)}" for (a, b), w in sorted(found.items()) if (a, b) not in SIDEWAYS
    ]
    assert not unlisted, (
        "imports within a layer not in SIDEWAYS (move one down, or list it with its reason):\n"
        + ("\n".join(unlisted))
    )
    stale = sorted(set(SIDEWAYS) - set(found))
    assert not stale, f"SIDEWAYS lists imports that no longer exist, remove them: {stale}"


def cycle(edges: dict[tuple[str, str], list[str]]) -> str:
    """One cycle of the graph with the imports that make it, or "" (graphlib names one cycle at a time)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for source, target in edges:
        graph[source].add(target)
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        # [a, b, ..., a], each a predecessor of the next in graphlib's terms: b imports a
        nodes = exc.args[1]
        return "\n".join(f"  {b} -> {a}: {', '.join(dict.fromkeys(edges[b, a]))}" for a, b in pairwise(nodes))
    return ""


def test_no_cycle_between_packages() -> None:
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for source, target, line, where in import_edges():
        if package_of(source) != package_of(target):
            edges[package_of(source), package_of(target)].append(f"{where}:{line}")
    found = cycle(edges)
    assert not found, f"a package cycle:\n{found}\n{layer_table()}"


def test_no_cycle_between_cli_modules() -> None:
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for source, target, line, where in import_edges():
        if package_of(source) == package_of(target) == "cli":
            edges[source, target].append(f"{where}:{line}")
    found = cycle(edges)
    assert not found, (
        f"a cycle between rush.cli modules (sub-commands import rush.cli.app, not main):\n{found}"
    )


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from rush.simulator.engine import simulate\n",
            ["rush.simulator.engine", "rush.simulator.engine.simulate"],
        ),
        ("def f():\n    from rush.studies import sweep\n", ["rush.studies", "rush.studies.sweep"]),
        ("import rush.cli.main\n", ["rush.cli.main"]),
        ("from . import base\n", ["rush.collect", "rush.collect.base"]),
        ("from ..core.schedule import schedule\n", ["rush.core.schedule", "rush.core.schedule.schedule"]),
    ],
)
def test_imports_are_found_where_they_hide(tmp_path: Path, source: str, expected: list[str]) -> None:
    """The checker itself: lazy imports inside functions and relative imports are seen."""
    path = tmp_path / "service.py"
    path.write_text(source)
    assert [name for name, _ in imported_names("rush.collect.service", path)] == expected


def test_an_upward_import_is_reported(tmp_path: Path) -> None:
    """A core module importing the simulator is an upward edge by the table."""
    path = tmp_path / "rules.py"
    path.write_text("def f():\n    from rush.simulator.engine import simulate\n")
    name, line = imported_names("rush.core.job_rules", path)[0]
    assert (name, line) == ("rush.simulator.engine", 2)
    assert LAYER_OF[package_of(name)] > LAYER_OF[package_of("rush.core.job_rules")]


def test_a_cycle_is_reported_with_its_imports() -> None:
    edges = {
        ("collect", "daemon"): ["rush/collect/service.py:31"],
        ("daemon", "collect"): ["rush/daemon/x.py:5"],
    }
    found = cycle(edges)
    assert "rush/collect/service.py:31" in found and "rush/daemon/x.py:5" in found
    assert cycle({("daemon", "collect"): ["rush/daemon/x.py:5"]}) == ""
