"""The one-second-later conservative cycle on nodes: reservations searched, windows slid, CPU
(issue 31, item 2; per-node freed room, :mod:`rush.core.freed_room`).

Along :mod:`bench_scale`'s diagonal (its machine and queue: ``--sizes`` nodes/pending pairs),
one live ``schedule()`` with start estimates (the first pass), then the live cycle one second
later (:mod:`live_next_pass`: the first call's starts running, ``--ended`` running jobs ended
early, the reservations given back with their nodes), ``--cycles`` times in a row.

``--count``: the kept reservations searched and the candidate windows slid in each cycle, by
instrumented copies of the conservative node kernel (built from its source by patches that are
each asserted to apply): this tree's and, with ``--base-rev``, the one of that git revision
(default ``main``), both run in this process on the same pass inputs (caught on their way into
``scheduling_pass``); their starts, reservations and times are checked equal to the kernel's.
Otherwise: the median CPU time (``time.process_time``) of ``--repeat`` calls of the one-second
cycle; run it once with ``PYTHONPATH`` at each tree, interleaved, for a paired comparison
(``--compare /path/to/other/tree`` does so itself, printing the load average).

Run: ``python benchmarks/bench_freed_room.py --count --sizes 500/5000,1000/10000`` and
``python benchmarks/bench_freed_room.py --compare /work/main --sizes 500/5000,1000/10000``.
Figures: docs/research.md (issue 31, "Per-node freed room").
"""

from __future__ import annotations

import argparse
import copy
import functools
import importlib.util
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_scale import make_snapshot
from live_next_pass import next_snapshot

import rush.core.schedule as core_schedule
from rush.core import CoreConfig
from rush.core.scheduling_pass import order_queue

print = functools.partial(print, flush=True)  # noqa: A001 - progress shows while the slow cases run

CONSERVATIVE = CoreConfig(backfill="conservative")
KERNEL = Path(__file__).resolve().parent.parent / "rush" / "core" / "conservative_nodes.py"

# (old, new): each old text must occur exactly once in the kernel's source.
PATCHES = (
    (
        '    nodes: NodeView,\n) -> tuple[int, int, int]:\n    """Conservative backfilling on nodes;',
        '    nodes: NodeView,\n    tally: np.ndarray,\n) -> tuple[int, int, int]:\n    """Conservative backfilling on nodes;',
    ),
    ("                taken = True\n", "                taken = True\n                tally[0] += 1\n"),
    (
        "            t = ptime_c[i]\n            # Slide the window",
        "            t = ptime_c[i]\n            tally[1] += 1\n            # Slide the window",
    ),
)


def instrumented(source: str, tag: str):
    """The kernel ``source``, patched to count, imported as a module of its own."""
    for old, new in PATCHES:
        if source.count(old) != 1:
            sys.exit(f"{tag}: a patch of {Path(__file__).name} no longer applies (fix PATCHES)")
        source = source.replace(old, new)
    folder = Path(tempfile.gettempdir()) / f"rush-freed-room-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    path = folder / f"counted_{tag}.py"
    if not path.exists() or path.read_text() != source:
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"counted_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.conservative_nodes_pass


def cycles(nodes: int, pending: int, count: int, ended: int):
    """The first pass's snapshot and decisions, then ``count`` one-second-later snapshots."""
    snapshot = make_snapshot(nodes, pending)
    decided = core_schedule.schedule(snapshot, CONSERVATIVE, explain_priorities=False)
    for _ in range(count):
        snapshot = next_snapshot(snapshot, decided, ended, kept=True, step=1.0)
        yield snapshot
        decided = core_schedule.schedule(snapshot, CONSERVATIVE, explain_priorities=False)


def _plan(out, result) -> tuple:
    ns, nr = int(result[0]), int(result[2])
    return (
        out.start[:ns].tolist(),
        out.reserved[:nr].tolist(),
        out.reserved_at[:nr].tolist(),
    )


def count(args, sizes) -> None:
    base = subprocess.run(
        ["git", "-C", str(KERNEL.parent), "show", f"{args.base_rev}:rush/core/conservative_nodes.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    kernels = {
        args.base_rev: instrumented(base, "base"),
        "this tree": instrumented(KERNEL.read_text(), "tree"),
    }
    print(
        f"{'nodes':>6s} {'pending':>8s} {'cycle':>5s} {'kernel':>10s} {'searched':>9s} {'windows slid':>13s}"
    )
    caught: list = []
    original = core_schedule.scheduling_pass

    def spy(*pass_args):
        before = copy.deepcopy(pass_args)
        result = original(*pass_args)
        caught.append((before, _plan(pass_args[6], result)))
        return result

    core_schedule.scheduling_pass = spy
    try:
        for nodes, pending in sizes:
            for c, snapshot in enumerate(cycles(nodes, pending, args.cycles, args.ended)):
                caught.clear()
                core_schedule.schedule(snapshot, CONSERVATIVE, explain_priorities=False)
                inputs, plan = caught[0]
                for name, kernel in kernels.items():
                    moment, config, jobs, state, queues, running, out, view = copy.deepcopy(inputs)
                    order_queue(moment, config, jobs, queues)
                    tally = np.zeros(2, dtype=np.int64)
                    result = kernel(moment, config, jobs, state, queues, running, out, view, tally)
                    print(f"{nodes:6d} {pending:8d} {c + 1:5d} {name:>10s} {tally[0]:9d} {tally[1]:13d}")
                    if _plan(out, result) != plan:
                        sys.exit(f"{nodes}/{pending} cycle {c + 1}: {name} decides unlike the kernel")
    finally:
        core_schedule.scheduling_pass = original


def seconds(args, sizes) -> None:
    for nodes, pending in sizes:
        for c, snapshot in enumerate(cycles(nodes, pending, args.cycles, args.ended)):
            spent = []
            for _ in range(args.repeat):
                t0 = time.process_time()
                core_schedule.schedule(snapshot, CONSERVATIVE, explain_priorities=False)
                spent.append(time.process_time() - t0)
            print(f"cpu {nodes} {pending} {c + 1} {statistics.median(spent):.4f}")


def compare(args, sizes) -> None:
    trees = {"base": args.compare, "this tree": str(KERNEL.parent.parent.parent)}
    figures: dict[tuple[str, int, int], float] = {}
    print(f"load average before: {os.getloadavg()}")
    for nodes, pending in sizes:
        for name, tree in trees.items():
            command = [
                sys.executable,
                __file__,
                "--sizes",
                f"{nodes}/{pending}",
                "--repeat",
                str(args.repeat),
            ]
            command += ["--cycles", str(args.cycles), "--ended", str(args.ended)]
            env = dict(os.environ, PYTHONPATH=tree)
            done = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
            for line in done.splitlines():
                if line.startswith("cpu "):
                    _, _, _, c, s = line.split()
                    print(f"{name:>10s} {nodes:6d} {pending:8d} cycle {c} {float(s):9.3f} s CPU")
                    if c == "1":
                        figures[name, nodes, pending] = float(s)
        print(f"load average: {os.getloadavg()}")
    for name in trees:
        done = [(n, p) for n, p in sizes if (name, n, p) in figures]
        if len(done) >= 2:
            x = np.log([p for _, p in done])
            y = np.log([figures[name, n, p] for n, p in done])
            nlogn = np.log([p * math.log(p) for _, p in done])
            print(
                f"{name}: growth exponent of the first one-second cycle {np.polyfit(x, y, 1)[0]:.2f} "
                f"(n log n: {np.polyfit(x, nlogn, 1)[0]:.2f})"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500/5000,1000/10000,2000/20000", help="nodes/pending pairs")
    parser.add_argument("--cycles", type=int, default=1, help="one-second-later cycles in a row")
    parser.add_argument("--ended", type=int, default=5, help="running jobs ended early before each cycle")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--count", action="store_true", help="searched and slid, by instrumented kernels")
    parser.add_argument("--base-rev", default="main", help="the revision --count compares with")
    parser.add_argument("--compare", default="", help="another tree: CPU paired with it, interleaved")
    args = parser.parse_args()
    sizes = [tuple(int(x) for x in pair.split("/")) for pair in args.sizes.split(",")]
    if args.count:
        count(args, sizes)
    elif args.compare:
        compare(args, sizes)
    else:
        seconds(args, sizes)


if __name__ == "__main__":
    main()
