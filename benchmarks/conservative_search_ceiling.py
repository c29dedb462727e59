"""What the best index of free room could buy conservative backfilling on nodes (issue 31).

Conservative backfilling on nodes (:mod:`rush.core.conservative_nodes`) searches each job's
earliest window by building the job's room at its first candidate start and sliding it from
candidate to candidate, applying every booking that leaves or enters the window. An index of
free intervals (by length, per node) would hand the job the candidate where its search ends.
This script measures the ceiling of any such index: an instrumented copy of the kernel, built
from its source by patches that are each asserted to apply, records where each job's search
ends on a first call; later calls start the selected jobs' searches at that candidate, so they
build the room once, where the job is placed, and slide nowhere. The decisions are those of the
unpatched kernel (checked: starts, reservations, their times and nodes).

Selections: ``none`` (the instrumented kernel as it is), ``whole-node`` (exclusive requests and
shared ones asking a whole node's cores: the requests an exact index of each node's gaps by
length covers), ``shared`` (the other node requests: part of a node), ``counts`` (processor
requests, cores anywhere), ``all``. Printed: the CPU time (``time.process_time``) of
``--repeat`` calls of each, interleaved, on :mod:`bench_estimates`'s inputs (10 000 pending on
1 000 nodes: :mod:`bench_nodes`), the unpatched kernel's beside them, the load average, and per
selection the jobs and candidate starts (slide steps) it covers in the first call.

Run: ``python benchmarks/conservative_search_ceiling.py [--pending 10000] [--repeat 5]``
Figures: docs/research.md (issue 31, "which index is worth building?").
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import bench_args
import numpy as np
from bench_conservative_nodes import first_pass_inputs
from bench_nodes import _fresh, make_snapshots

import rush.core.conservative_nodes as kernel
from rush.core import CoreConfig
from rush.core.scheduling_pass import scheduling_pass

print = functools.partial(print, flush=True)  # noqa: A001 - progress shows while the slow cases run

SELECTIONS = ("none", "whole-node", "shared", "counts", "all")

# (old, new): each old text must occur exactly once in the kernel's source.
PATCHES = (
    (
        '    nodes: NodeView,\n) -> tuple[int, int, int]:\n    """Conservative backfilling on nodes;',
        "    nodes: NodeView,\n    jump: np.ndarray,\n    record: np.ndarray,\n    steps: np.ndarray,\n"
        ') -> tuple[int, int, int]:\n    """Conservative backfilling on nodes;',
    ),
    (
        "            i = _count_fit((ptime_c, avail_c), (ptime_g, avail_g), n, counts, duration, (lo, bound))\n",
        "            i = _count_fit((ptime_c, avail_c), (ptime_g, avail_g), n, counts, duration, (lo, bound))\n"
        "        if not hold and not np.isnan(jump[j]):\n"
        '            i = -1 if jump[j] == INF else np.searchsorted(ptime_c[:n], jump[j], side="left")\n',
    ),
    (
        "        while 0 <= i < n and ptime_c[i] < bound:\n            t = ptime_c[i]\n",
        "        while 0 <= i < n and ptime_c[i] < bound:\n            steps[j] += 1\n            t = ptime_c[i]\n",
    ),
    (
        "        if count == SKIPPED:\n            out.skip[nk] = j\n",
        "        record[j] = placed_at if count >= 0 else (np.nan if count == SKIPPED else INF)\n"
        "        if count == SKIPPED:\n            out.skip[nk] = j\n",
    ),
)


def instrumented_kernel():
    """The kernel's module, patched, imported from a file of its own (numba caches it there)."""
    source = Path(kernel.__file__).read_text()
    for old, new in PATCHES:
        if source.count(old) != 1:
            sys.exit(f"the kernel changed: a patch of {Path(__file__).name} no longer applies (fix PATCHES)")
        source = source.replace(old, new)
    source += "# registered in sys.modules (cached copies from before it are not loadable)\n"
    folder = Path(tempfile.gettempdir()) / f"rush-search-ceiling-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    path = folder / "conservative_nodes_ceiling.py"
    if not path.exists() or path.read_text() != source:
        path.write_text(source)
    spec = importlib.util.spec_from_file_location("conservative_nodes_ceiling", path)
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: numba names a function's module in what it caches, and one
    # not in sys.modules is cached as "<dynamic>", which the next process cannot load.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.conservative_nodes_pass


def kinds(nodes) -> np.ndarray:
    """Per job: 0 processor request, 1 whole node, 2 part of a node."""
    request = nodes.request
    whole = request.exclusive | (request.cores >= nodes.pool.cores.max())
    return np.where(request.nodes == 0, 0, np.where(whole, 1, 2))


def plan_of(args: tuple, result) -> tuple:
    """Starts (with their nodes), reservations and their times: what the pass decided."""
    started, reserved = int(result[0]), int(result[2])
    out, nodes = args[6], args[7]
    placed = nodes.placed
    ends = int(placed.offset[started])
    return (
        out.start[:started].tolist(),
        placed.node[:ends].tolist(),
        placed.cores[:ends].tolist(),
        out.reserved[:reserved].tolist(),
        out.reserved_at[:reserved].tolist(),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--repeat", type=bench_args.positive, default=5)
    args = parser.parse_args()
    on_nodes, _ = make_snapshots(args.pending)
    inputs = first_pass_inputs(on_nodes, CoreConfig(backfill="conservative"))
    patched = instrumented_kernel()
    jobs = len(inputs[2].procs)
    kind = kinds(inputs[7])
    print(
        f"{args.pending} pending jobs on {inputs[7].pool.count} nodes; load average {os.getloadavg()[0]:.2f}"
    )

    fresh = tuple(_fresh(a) for a in inputs)
    reference = plan_of(fresh, scheduling_pass(*fresh))
    record = np.full(jobs, np.nan)
    steps = np.zeros(jobs, dtype=np.int64)
    fresh = tuple(_fresh(a) for a in inputs)
    first = plan_of(fresh, patched(*fresh, np.full(jobs, np.nan), record, steps))
    if first != reference:
        sys.exit("the instrumented kernel decides differently from the kernel: not measured")
    selected = {
        "none": np.zeros(jobs, dtype=np.bool_),
        "whole-node": kind == 1,
        "shared": kind == 2,
        "counts": kind == 0,
        "all": np.ones(jobs, dtype=np.bool_),
    }
    for name in SELECTIONS[1:]:
        take = selected[name]
        print(
            f"{name:10s}: {int(take.sum()):5d} jobs, {int(steps[take].sum()):8d} of {int(steps.sum())} "
            f"candidate starts tried ({100 * steps[take].sum() / max(steps.sum(), 1):.0f} %)"
        )
    seconds: dict[str, list[float]] = {name: [] for name in ("kernel", *SELECTIONS)}
    for _ in range(args.repeat):
        fresh = tuple(_fresh(a) for a in inputs)
        t0 = time.process_time()
        scheduling_pass(*fresh)
        seconds["kernel"].append(time.process_time() - t0)
        for name in SELECTIONS:
            jump = np.where(selected[name], record, np.nan)
            fresh = tuple(_fresh(a) for a in inputs)
            t0 = time.process_time()
            result = patched(*fresh, jump, np.full(jobs, np.nan), np.zeros(jobs, dtype=np.int64))
            seconds[name].append(time.process_time() - t0)
            if plan_of(fresh, result) != reference:
                sys.exit(f"selection {name} decided differently: not measured")
    print(f"{'case':28s} {'median ms':>10s} {'min ms':>8s} {'max ms':>8s}  (CPU)")
    for name, values in seconds.items():
        label = "kernel (unpatched)" if name == "kernel" else f"search starts at the end: {name}"
        print(
            f"{label:28s} {statistics.median(values) * 1e3:10.1f} {min(values) * 1e3:8.1f} {max(values) * 1e3:8.1f}"
        )
    print(f"every selection decided as the kernel: yes; load average {os.getloadavg()[0]:.2f} after the run")


if __name__ == "__main__":
    main()
