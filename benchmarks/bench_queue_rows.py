"""The journal's queue rows in a live cycle (rush.planner.queue_view.queue_rows, which both shells'
planner runs after the pass and bench_live_cycle.py leaves out), at 10 000 pending on 1 000 nodes.

Each run makes the live path of :mod:`bench_live_cycle` (the snapshot builder, the kept columns,
``schedule()``, the daemon's plan) take a first and a next cycle, and times, in CPU ms
(``time.process_time``; the host is shared), the queue rows of each cycle with the shells' memo of
row inputs (``previous`` rows and ``inputs`` kept between the cycles), beside the cycle's own time
(``cycle``: read to decisions, as bench_live_cycle.py measures it). ``--read``: the part that
reads each pending job's values (``read``: this tree's columns, or an older tree's core jobs,
made there in a first cycle) timed apart just before the rows. ``made``: the core jobs alive
after the rows (the pass makes a few for its decisions in words).

``write``: the rows written to a journal (``Journal.record_queue`` on a fresh journal in a
temporary directory, ``synchronous`` as the shell opens it: NORMAL for the Flux module, FULL for
the daemon; CPU ms, so the disk's flushes are not in it), and ``whole``: the cycle, the rows and
their write, what a live cycle pays from the read to the journal (the cycle is the reference,
measured in the same run).

``--other FILE``: another version of rush/planner/queue_view.py (e.g. ``git show
REV:rush/planner/queue_view.py > /tmp/old.py``), timed in the same process, its runs alternated
with this tree's (each run a fresh live path: a first cycle makes its core jobs anew).
``--other DIR``: another tree (e.g. ``git worktree add /tmp/base main``): its queue_view.py and
journal.py, both, so that the old rows are written as the old journal wrote them.

``--cycles N``: time the N-th cycle as ``next`` (the cycles between run and write their rows,
untimed); ``--ended 0`` with it: a next cycle where few rows change.

Run: ``python benchmarks/bench_queue_rows.py [--pending 10000] [--repeat 5] [--other FILE|DIR]``.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import inspect
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from types import ModuleType

import bench_args
import bench_live_cycle as live_cycle
import bench_nodes
from live_next_pass import next_snapshot

import rush.planner.journal as this_journal
import rush.planner.queue_view as this_tree
from rush.core import CoreConfig
from rush.core.pass_budget import DEFAULT_MAX_JOBS_CONSIDERED
from rush.planner.queue_view import QueueView

print = functools.partial(print, flush=True)  # noqa: A001 - progress shows while cases run
POLICY = "FCFS"


def load(path: str, name: str = "other_queue_view") -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def read(module: ModuleType, view: QueueView) -> dict:
    """What the rows read of each pending job, as ``module`` reads it: the columns (this tree), or
    each core job (a queue_view without ``_pending_of``)."""
    pending_of = getattr(module, "_pending_of", None)
    if pending_of is not None:
        return pending_of(view)
    return {p.job_id: p for p in view.built.snapshot.pending}


def held(module: ModuleType) -> tuple:
    """The shells' ``hold_estimates`` (journal rows keep an estimated start within the core's
    granularity), for a queue_view that has it; none for an older one."""
    return (True,) if "hold_estimates" in inspect.signature(module.queue_rows).parameters else ()


def run(tree: tuple[ModuleType, ModuleType], pending: int, shell: str, args) -> dict[str, float]:
    """One fresh live path's first and next cycle: CPU seconds of each, of its queue rows and of
    their write to a fresh journal."""
    module, journal_module = tree
    config = CoreConfig(backfill="easy", max_jobs_considered=DEFAULT_MAX_JOBS_CONSIDERED)
    snapshot = bench_nodes.make_snapshot(pending, 1, live_cycle.NODES, live_cycle.PODS)
    live = live_cycle.LivePath(config, explain=shell == "daemon")
    built_by = live.builder.build
    kept: list = []
    live.builder.build = lambda state, records: kept.append(built_by(state, records)) or kept[-1]
    objects = {} if shell == "flux-module" else None
    previous: dict = {}
    inputs: dict = {}
    out: dict[str, float] = {}
    folder = tempfile.TemporaryDirectory(prefix="bench-queue-rows-")
    journal = journal_module.Journal(
        f"{folder.name}/journal.sqlite", synchronous="NORMAL" if shell == "flux-module" else "FULL"
    )
    state = live_cycle.rjms_state(snapshot, objects)
    cycles = ["first"] + ["between"] * (args.cycles - 2) + ["next"]
    for cycle in cycles:
        parts: dict[str, float] = defaultdict(float)
        decided = live.cycle(state, parts)  # (after a gc.collect(), not timed)
        t1 = time.process_time()
        view = QueueView(1, state.taken_at, state, kept[-1], decided, config, POLICY)
        if args.read:
            read(module, view)
        t2 = time.process_time()
        rows = module.queue_rows(view, previous, inputs, *held(module))
        t3 = time.process_time()
        journal.record_queue(rows)
        out[f"{cycle} write"] = time.process_time() - t3
        out[f"{cycle} rows"] = t3 - t2
        out[f"{cycle} cycle"] = sum(parts[p] for p in ("build", "columns", "schedule", "words"))
        out[f"{cycle} read"] = t2 - t1
        out[f"{cycle} written"] = len(rows)
        out[f"{cycle} made"] = kept[-1].snapshot.pending.made()
        out[f"{cycle} whole"] = out[f"{cycle} cycle"] + out[f"{cycle} rows"] + out[f"{cycle} write"]
        for row in rows:
            if row.state == "gone":
                previous.pop(row.job_id, None)
            else:
                previous[row.job_id] = row
        later = next_snapshot(snapshot, decided, args.ended, kept=False)
        snapshot = live_cycle.with_arrivals(later, args.arrivals, pending)
        state = live_cycle.rjms_state(snapshot, objects)
    journal.close()
    folder.cleanup()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--repeat", type=bench_args.positive, default=5)
    parser.add_argument("--ended", type=bench_args.non_negative, default=5)
    parser.add_argument("--arrivals", type=bench_args.non_negative, default=5)
    parser.add_argument("--shells", type=bench_args.names(bench_args.SHELLS), default="flux-module,daemon")
    parser.add_argument(
        "--cycles",
        type=bench_args.positive,
        default=2,
        help="the cycle timed as 'next' (2: the one after the first; e.g. 45 at 10 000 pending: the "
        "priority terms' budget spent, all rows given theirs)",
    )
    parser.add_argument(
        "--other", help="another version of rush/planner/queue_view.py, or another tree, alternated"
    )
    parser.add_argument(
        "--read",
        action="store_true",
        help="time apart, before the rows, what they read of each pending job (the rows then read "
        "it again: cheap for core jobs once made, about as dear for the columns)",
    )
    args = parser.parse_args()
    trees = {"this": (this_tree, this_journal)}
    if args.other and os.path.isdir(args.other):
        planner = os.path.join(args.other, "rush", "planner")
        journal = load(os.path.join(planner, "journal.py"), "other_journal")
        trees["other"] = (load(os.path.join(planner, "queue_view.py")), journal)
    elif args.other:
        trees["other"] = (load(args.other), this_journal)
    print(f"queue_view from {this_tree.__file__}; other: {args.other}; load {os.getloadavg()[0]:.1f}")
    warm = bench_nodes.make_snapshot(100, 1, live_cycle.NODES, live_cycle.PODS)  # numba's cache
    live_cycle.LivePath(CoreConfig(backfill="easy"), True).cycle(
        live_cycle.rjms_state(warm, None), defaultdict(float)
    )
    live_cycle.settle("rush")
    keys = [f"{c} {p}" for c in ("first", "next") for p in ("cycle", "read", "rows", "write", "whole")]
    print(
        f"{'shell':12s} {'tree':6s} "
        + " ".join(f"{k:>11s}" for k in keys)
        + f" {'written':>8s} {'next wr.':>8s} {'made':>6s}"
    )
    for shell in args.shells:
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        for _ in range(args.repeat):
            for name, tree in trees.items():  # alternated
                runs[name].append(run(tree, args.pending, shell, args))
        for name, got in runs.items():
            medians = {k: statistics.median(r[k] for r in got) for k in got[0]}
            print(
                f"{shell:12s} {name:6s} "
                + " ".join(f"{medians[k] * 1e3:11.1f}" for k in keys)
                + f" {medians['first written']:8.0f} {medians['next written']:8.0f}"
                + f" {medians['first made']:6.0f}"
            )
        print(f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
