"""Two source trees' modules in one process, for the A/B benchmarks (``ab_live_cycle.py``,
``ab_slurm_cycle.py``): each tree's benchmark modules and its own ``rush`` imported once, then
swapped into ``sys.modules`` around each call, so that imports made inside functions resolve to
that tree's."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence


def owned(name: str, own: Sequence[str]) -> bool:
    """Whether module ``name`` is one of ``own`` or inside one of them."""
    return any(name == o or name.startswith(o + ".") for o in own)


def use(modules: dict, own: Sequence[str]) -> dict:
    """``modules``'s tree made the one ``own``'s imports resolve to; its modules back."""
    for name in [n for n in sys.modules if owned(n, own)]:
        del sys.modules[name]
    sys.modules.update(modules)
    return modules


def load(tree: str, entry: str, own: Sequence[str]) -> dict:
    """``tree``'s benchmark module ``entry`` with everything of ``own`` it imports (its own
    ``rush`` among them), by name; stops if ``rush`` came from elsewhere."""
    use({}, own)
    sys.path[:0] = [os.path.join(tree, "benchmarks"), tree]
    try:
        bench = importlib.import_module(entry)
    finally:
        del sys.path[:2]
    where = os.path.realpath(bench.rush.__file__)
    assert where.startswith(os.path.realpath(tree)), f"{tree}: rush imported from {where}"
    return {n: m for n, m in sys.modules.items() if owned(n, own)}
