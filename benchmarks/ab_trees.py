"""Two source trees' modules in one process, for the A/B benchmarks (``ab_live_cycle.py``,
``ab_slurm_cycle.py``, ``ab_flux_cycle.py``, ``ab_daemon_cycle.py``): each tree's benchmark modules and its own ``rush`` imported once, then
swapped into ``sys.modules`` around each call, so that imports made inside functions resolve to
that tree's."""

from __future__ import annotations

import importlib
import os
import statistics
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


def summarize(
    rows: dict[str, list[dict[str, float]]], parts: Sequence[str], ratio: bool = False
) -> list[str]:
    """One line a part: the median of the rounds for A and for B, then B against A round by
    round (B - A in ms with its median, or B / A when ``ratio``)."""
    width = max(len(part) for part in parts)
    lines = []
    for part in parts:
        pairs = list(zip(rows["A"], rows["B"], strict=True))
        head = (
            f"{part:{width}s} median of rounds A {statistics.median(a[part] for a, _ in pairs):6.1f} "
            f"B {statistics.median(b[part] for _, b in pairs):6.1f}; "
        )
        if ratio:
            lines.append(head + "B/A by round " + " ".join(f"{b[part] / a[part]:.3f}" for a, b in pairs))
        else:
            diffs = [b[part] - a[part] for a, b in pairs]
            by_round = " ".join(f"{d:+.1f}" for d in diffs)
            lines.append(head + f"B-A by round {by_round} (median {statistics.median(diffs):+.1f})")
    return lines
