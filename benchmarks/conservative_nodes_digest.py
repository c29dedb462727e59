"""A digest of everything conservative backfilling on nodes decides on the benchmarks' passes,
to compare two checkouts (issue 31: a faster kernel must decide exactly as main's).

Passes: :mod:`bench_conservative_nodes`'s first pass (10 000 pending on 1 000 nodes by default)
and its three next passes (kept nodes, kept but blind, times only), and :mod:`bench_scale`'s
live ``schedule()`` calls (the first, and the next cycle ``--step`` 0 and 1 s later with the
reservations kept). Per compiled pass the digest covers every start (job, backfill flag, its
nodes, cores and GPUs), skip, reservation (job, time, its kept nodes, cores and GPUs), the state
it carries (reservation rows, skips) and its node memory; per ``schedule()`` call every decision
and the record it keeps. Run it once per checkout and compare the lines:

``PYTHONPATH=/work/main python benchmarks/conservative_nodes_digest.py`` then
``PYTHONPATH=. python benchmarks/conservative_nodes_digest.py``
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib

import bench_args
import numpy as np
from bench_conservative_nodes import first_pass_inputs, run_pair
from bench_nodes import _fresh, make_snapshots
from bench_scale import make_snapshot
from live_next_pass import next_snapshot

import rush
from rush.core import CoreConfig
from rush.core.schedule import schedule
from rush.core.scheduling_pass import scheduling_pass


def pass_digest(args: tuple) -> str:
    """Run the compiled pass on a copy of ``args``; the digest of what it decided and kept."""
    fresh = tuple(_fresh(a) for a in args)
    result = scheduling_pass(*fresh)
    ns, nk, nr = int(result.started), int(result.skipped), int(result.reserved)
    state, out, nodes = fresh[3], fresh[6], fresh[7]
    placed, kept = nodes.placed, nodes.reserved
    h = hashlib.sha256()
    for array in (
        out.start[:ns],
        out.backfilled[:ns],
        placed.offset[: ns + 1],
        placed.node[: placed.offset[ns]],
        placed.cores[: placed.offset[ns]],
        placed.gpus[: placed.offset[ns]],
        out.skip[:nk],
        out.reserved[:nr],
        out.reserved_at[:nr],
        kept.offset[: nr + 1],
        kept.node[: kept.offset[nr]],
        kept.cores[: kept.offset[nr]],
        kept.gpus[: kept.offset[nr]],
        state.reserved_row,
        state.reserved_at,
        state.skips,
        state.node_memory,
    ):
        h.update(np.ascontiguousarray(array).tobytes())
    return f"{ns} starts, {nk} skips, {nr} reservations: {h.hexdigest()[:16]}"


def _feed(h, value) -> None:
    """Every array of ``value`` in full (a repr would elide them), the rest by repr."""
    if isinstance(value, np.ndarray):
        h.update(repr((value.dtype, value.shape)).encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (tuple, list)):
        for v in value:
            _feed(h, v)
    elif dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            _feed(h, getattr(value, f.name))
    else:
        h.update(repr(value).encode())


def schedule_digest(decided) -> str:
    """The digest of a ``schedule()`` call's decisions (all but the priority ones), reservations,
    start estimates and the record it keeps."""
    h = hashlib.sha256()
    actions = ("start", "backfill", "reserve", "skip", "kill", "infeasible")
    h.update(repr(decided.among(actions)).encode())
    h.update(repr(sorted(decided.reserved_at.items())).encode())
    h.update(repr(sorted(decided.estimated_start.items())).encode())
    _feed(h, decided.kept)
    return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--nodes", type=bench_args.positive, default=1_000)
    parser.add_argument("--ended", type=bench_args.non_negative, default=5)
    args = parser.parse_args()
    print(f"rush from {rush.__file__}")
    config = CoreConfig(backfill="conservative")
    on_nodes, _ = make_snapshots(args.pending)
    cold = first_pass_inputs(on_nodes, config)
    kept, times_only, blind = run_pair(cold, args.ended)
    for label, inputs in (("first", cold), ("kept", kept), ("blind", blind), ("times only", times_only)):
        print(f"pass {label:10s} {pass_digest(inputs)}")
    snapshot = make_snapshot(args.nodes, args.pending)
    decided = schedule(snapshot, config, explain_priorities=False)
    print(f"schedule first      {schedule_digest(decided)}")
    for step in (0.0, 1.0):
        later = next_snapshot(snapshot, decided, args.ended, kept=True, step=step)
        print(
            f"schedule next +{step:.0f} s  {schedule_digest(schedule(later, config, explain_priorities=False))}"
        )


if __name__ == "__main__":
    main()
