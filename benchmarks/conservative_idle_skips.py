"""How many candidate starts the idle-node bound (rush/core/idle_bound.py, issue 31 round 17)
rules out on bench_estimates' first pass (10 000 pending on 1 000 nodes): an instrumented copy
of the kernel, built from its source by patches asserted to apply, counts whole-node-like
searches, candidates skipped at the first fit and in the slide, jumps, and the candidates such
jobs still slide; its decisions are checked equal to the kernel's.

Run: ``PYTHONPATH=. python benchmarks/conservative_idle_skips.py``
"""

import importlib.util
import os
import tempfile
from pathlib import Path

import numpy as np
from bench_conservative_nodes import first_pass_inputs
from bench_nodes import _fresh, make_snapshots
from conservative_search_ceiling import plan_of

import rush.core.conservative_nodes as kernel
from rush.core import CoreConfig
from rush.core.scheduling_pass import scheduling_pass

src = Path(kernel.__file__).read_text()
P = [
    (
        '    nodes: NodeView,\n) -> tuple[int, int, int]:\n    """Conservative backfilling on nodes;',
        '    nodes: NodeView,\n    tally: np.ndarray,\n) -> tuple[int, int, int]:\n    """Conservative backfilling on nodes;',
    ),
    (
        "        if whole and i > 0:\n            i = fit_with_idle(",
        "        if whole:\n            tally[0] += 1\n        if whole and i > 0:\n            i0 = i\n            i = fit_with_idle(",
    ),
    (
        "        u_ok = i\n",
        "        u_ok = i\n        if whole and i > 0 and i0 >= 0:\n            tally[1] += i - i0\n        if whole and i < 0:\n            tally[2] += 1\n",
    ),
    (
        "                if to < 0 or ptime_c[to] >= bound:\n                    break\n                u_ok = to\n",
        "                if to < 0 or ptime_c[to] >= bound:\n                    tally[3] += 1\n                    break\n                u_ok = to\n                tally[4] += 1\n                tally[5] += to - i\n",
    ),
    (
        "                if to - i >= IDLE_JUMP:\n                    i = to\n",
        "                if to - i >= IDLE_JUMP:\n                    tally[6] += 1\n                    tally[7] += to - i\n                    i = to\n",
    ),
    (
        "        while 0 <= i < n and ptime_c[i] < bound:\n            t = ptime_c[i]\n",
        "        while 0 <= i < n and ptime_c[i] < bound:\n            t = ptime_c[i]\n            if whole:\n                tally[8] += 1\n",
    ),
]
for old, new in P:
    assert src.count(old) == 1, old
    src = src.replace(old, new)
folder = Path(tempfile.gettempdir()) / f"rush-idle-skips-{os.getuid()}"
folder.mkdir(exist_ok=True)
path = folder / "conservative_nodes_counted.py"
if not path.exists() or path.read_text() != src:
    path.write_text(src)
spec = importlib.util.spec_from_file_location("conservative_nodes_counted", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
on_nodes, _ = make_snapshots(10_000)
inputs = first_pass_inputs(on_nodes, CoreConfig(backfill="conservative"))
fresh = tuple(_fresh(a) for a in inputs)
reference = plan_of(fresh, scheduling_pass(*fresh))
tally = np.zeros(16, dtype=np.int64)
fresh = tuple(_fresh(a) for a in inputs)
assert plan_of(fresh, mod.conservative_nodes_pass(*fresh, tally)) == reference
names = [
    "whole-like jobs searched",
    "candidates skipped at the first fit",
    "whole-like jobs with no fit by U",
    "slide: no fit left (stopped)",
    "slide: U checks that skipped",
    "slide: candidates ruled out",
    "slide: jumps (room moved)",
    "slide: candidates jumped",
    "whole-like candidates slid",
]
for k, name in enumerate(names):
    print(f"{name:40s} {tally[k]}")
