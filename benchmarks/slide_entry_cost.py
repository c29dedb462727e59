"""What one booking entry costs the conservative node pass's slide, apart (issue 31, round 19).

Hardware counters are not available on the shared host, so this times the slide's entry loop
alone, in one process, on the bookings the benchmark's first pass leaves (10 000 pending on
1 000 nodes, :mod:`bench_conservative_nodes`): the running jobs' entries, then each start's and
reservation's, in the order the pass placed them (so a booking's entries are where the kernel
keeps them), visited by start (each taken from the room) and then by end (each given back), as
the slide visits them. Variants, each a compiled loop over the same data:

* ``kernel _apply``: :func:`rush.core.conservative_nodes._apply` with a shared one-node rule
  (16 cores, no GPUs), the offer test before and after each entry;
* ``room only``: the same loop updating the room, no offer test;
* ``no GPU column``: the offer tests, cores only (the GPU column neither read nor written);
* ``shared, no branch``: both columns, the shared request's offer test without branches;
* ``shared, GPU flag``: the GPU test a per-node flag kept by GPU-taking entries only;
* ``offer states``: ``_apply`` testing the offer only where an entry can change it (a take on a
  node offering a unit, a gift on one offering none: issue 31, round 24).

Printed: ns per entry applied (median of ``--repeat`` sweeps of ``--sweeps`` passes each, CPU
time), the load average.

Run: ``python benchmarks/slide_entry_cost.py [--pending 10000] [--repeat 5] [--sweeps 20]``
Figures: docs/research.md (issue 31, rounds 19 and 24).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import bench_args
import numpy as np
from bench_conservative_nodes import first_pass_inputs
from bench_nodes import _fresh, make_snapshots
from numba import njit

from rush.core import CoreConfig
from rush.core.conservative_nodes import _apply
from rush.core.scheduling_pass import scheduling_pass


def first_pass_bookings(pending: int) -> tuple:
    """The first pass's bookings: entries (node, cores, GPUs) in placement order and per
    booking its window and entry range."""
    snapshot = make_snapshots(pending)[0]
    config = CoreConfig(backfill="conservative")
    args = tuple(_fresh(a) for a in first_pass_inputs(snapshot, config))
    moment, _, jobs, _, _, running, out, nodes = args
    result = scheduling_pass(*args)
    nodes_, cores, gpus, t0, t1, span = [], [], [], [], [], []

    def book(slots, row: int, window: tuple[float, float]) -> None:
        a, b = slots.offset[row], slots.offset[row + 1]
        span.append((len(nodes_), len(nodes_) + b - a))
        nodes_.extend(slots.node[a:b])
        cores.extend(slots.cores[a:b])
        gpus.extend(slots.gpus[a:b])
        t0.append(window[0])
        t1.append(window[1])

    now = moment.now
    for a in range(running.count):
        book(nodes.held, running.procs[a], (now, max(running.end[a], now + 1.0)))
    for i in range(int(result.started)):
        j = out.start[i]
        book(nodes.placed, i, (now, now + max(jobs.est[j], 1e-6)))
    for r in range(int(result.reserved)):
        j = out.reserved[r]
        at = out.reserved_at[r]
        book(nodes.reserved, r, (at, at + max(jobs.est[j], 1e-6)))
    entries = np.array([nodes_, cores, gpus], dtype=np.int64)
    spans = np.array(span, dtype=np.int64)
    return entries, np.array(t0), np.array(t1), spans, nodes.pool


@njit(cache=True)
def sweep_kernel(entries, by_start, by_end, spans, room, eligible, capacity, plan) -> int:
    """Every booking taken (by start) and given back (by end), ``sweeps`` times, by ``_apply``
    (``plan``: sweeps, and 1 to test the offer only where an entry can change it, the node
    states in ``eligible``; 0: the test before and after every entry)."""
    sweeps, flagged = plan
    rule = (1, 0, 16, 0, flagged)
    at, c, g = entries[0], entries[1], entries[2]
    total = 0
    for _ in range(sweeps):
        for x in range(by_start.shape[0]):
            b = by_start[x]
            total += _apply((at, c, g), spans[b, 0], spans[b, 1], -1, room, eligible, capacity, rule)
        for x in range(by_end.shape[0]):
            b = by_end[x]
            total += _apply((at, c, g), spans[b, 0], spans[b, 1], 1, room, eligible, capacity, rule)
    return total


@njit(cache=True)
def sweep_room_only(entries, by_start, by_end, spans, room, sweeps) -> int:
    """The same visits updating the room alone."""
    at, c, g = entries[0], entries[1], entries[2]
    room_c, room_g = room
    for _ in range(sweeps):
        for x in range(by_start.shape[0]):
            b = by_start[x]
            for k in range(spans[b, 0], spans[b, 1]):
                room_c[at[k]] -= c[k]
                room_g[at[k]] -= g[k]
        for x in range(by_end.shape[0]):
            b = by_end[x]
            for k in range(spans[b, 0], spans[b, 1]):
                room_c[at[k]] += c[k]
                room_g[at[k]] += g[k]
    return int(room_c.sum())


@njit(cache=True)
def sweep_cores_only(entries, by_start, by_end, spans, room_c, eligible, sweeps) -> int:
    """The offer tests (a 16-core request) on the cores column alone."""
    at, c = entries[0], entries[1]
    total = 0
    for _ in range(sweeps):
        for sign, order in ((-1, by_start), (1, by_end)):
            for x in range(order.shape[0]):
                b = order[x]
                for k in range(spans[b, 0], spans[b, 1]):
                    node = at[k]
                    total -= 1 if eligible[node] and room_c[node] >= 16 else 0
                    room_c[node] += sign * c[k]
                    total += 1 if eligible[node] and room_c[node] >= 16 else 0
    return total


@njit(cache=True)
def sweep_shared(entries, by_start, by_end, spans, room, eligible, sweeps) -> int:
    """The offer tests of a shared request (16 cores, no GPUs) written without branches, both
    columns: what a kernel specialised for shared requests would run."""
    at, c, g = entries[0], entries[1], entries[2]
    room_c, room_g = room
    total = 0
    for _ in range(sweeps):
        for sign, order in ((-1, by_start), (1, by_end)):
            for x in range(order.shape[0]):
                b = order[x]
                for k in range(spans[b, 0], spans[b, 1]):
                    node = at[k]
                    rc = room_c[node]
                    rg = room_g[node]
                    e = np.int64(eligible[node])
                    before = e & np.int64(rc >= 16) & np.int64(rg >= 0)
                    rc += sign * c[k]
                    rg += sign * g[k]
                    room_c[node] = rc
                    room_g[node] = rg
                    total += (e & np.int64(rc >= 16) & np.int64(rg >= 0)) - before
    return total


@njit(cache=True)
def sweep_gpu_flag(entries, by_start, by_end, spans, room, eligible, sweeps) -> int:
    """A shared request (16 cores, no GPUs) whose GPU test is a per-node flag (eligible and
    enough GPUs), kept up to date only by entries that take GPUs; the room's GPU column
    written only by those."""
    at, c, g = entries[0], entries[1], entries[2]
    room_c, room_g = room
    ok = np.empty(room_c.shape[0], dtype=np.int64)
    for node in range(ok.shape[0]):
        ok[node] = 1 if eligible[node] and room_g[node] >= 0 else 0
    total = 0
    for _ in range(sweeps):
        for sign, order in ((-1, by_start), (1, by_end)):
            for x in range(order.shape[0]):
                b = order[x]
                for k in range(spans[b, 0], spans[b, 1]):
                    node = at[k]
                    rc = room_c[node]
                    before = ok[node] & np.int64(rc >= 16)
                    if g[k] != 0:
                        room_g[node] += sign * g[k]
                        ok[node] = 1 if eligible[node] and room_g[node] >= 0 else 0
                    rc += sign * c[k]
                    room_c[node] = rc
                    total += (ok[node] & np.int64(rc >= 16)) - before
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--repeat", type=bench_args.positive, default=5)
    parser.add_argument("--sweeps", type=bench_args.positive, default=20)
    options = parser.parse_args()
    entries, t0, t1, spans, pool = first_pass_bookings(options.pending)
    by_start = np.argsort(t0, kind="mergesort")
    by_end = np.argsort(t1, kind="mergesort")
    applied = 2 * (spans[:, 1] - spans[:, 0]).sum() * options.sweeps
    print(
        f"{spans.shape[0]} bookings, {entries.shape[1]} entries; {applied / 1e6:.1f} M entries applied a run of --sweeps; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    eligible = pool.usable.copy()
    capacity = (pool.cores.astype(np.int64), pool.gpus.astype(np.int64))

    def kernel():
        room = (capacity[0].copy(), capacity[1].copy())
        return sweep_kernel(entries, by_start, by_end, spans, room, eligible, capacity, (options.sweeps, 0))

    def offer_states():
        room = (capacity[0].copy(), capacity[1].copy())
        # 0 not eligible, 1 eligible offering nothing, 2 offering (16 cores free on the full room)
        state = np.where(eligible, np.where(room[0] >= 16, 2, 1), 0).astype(np.int8)
        return sweep_kernel(entries, by_start, by_end, spans, room, state, capacity, (options.sweeps, 1))

    def room_only():
        room = (capacity[0].copy(), capacity[1].copy())
        return sweep_room_only(entries, by_start, by_end, spans, room, options.sweeps)

    def cores_only():
        return sweep_cores_only(
            entries, by_start, by_end, spans, capacity[0].copy(), eligible, options.sweeps
        )

    def shared():
        room = (capacity[0].copy(), capacity[1].copy())
        return sweep_shared(entries, by_start, by_end, spans, room, eligible, options.sweeps)

    def gpu_flag():
        room = (capacity[0].copy(), capacity[1].copy())
        return sweep_gpu_flag(entries, by_start, by_end, spans, room, eligible, options.sweeps)

    variants = {
        "shared, GPU flag": gpu_flag,
        "kernel _apply": kernel,
        "offer states": offer_states,
        "room only": room_only,
        "no GPU column": cores_only,
        "shared, no branch": shared,
    }
    for run in variants.values():
        run()  # compile or load
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(options.repeat):
        for name, run in variants.items():
            start = time.process_time()
            run()
            times[name].append(time.process_time() - start)
    for name, values in times.items():
        ms = statistics.median(values) * 1e3
        print(f"{name:16s} {ms:8.1f} ms CPU a run, {ms * 1e6 / applied:6.2f} ns an entry")
    print(f"load average {os.getloadavg()[0]:.2f} after the run")


if __name__ == "__main__":
    main()
