"""Where conservative backfilling on nodes spends its first pass, by phase (issue 31).

The compiled pass (:mod:`rush.core.conservative_nodes`) cannot be timed inside, so each phase
is measured by doing it twice: an instrumented copy of the kernel, built from its source by
patches that are each asserted to apply (as :mod:`conservative_search_ceiling` does), takes a
``phase`` argument and repeats that phase's work on shadow copies (or, for pure calls, calls
them again and keeps the result so it is not optimised away); the extra time over the
instrumented copy with no phase repeated is the phase's cost. The phases:

* ``profile``: the count profiles' inserts (each placement's window booked into the flat
  core, and GPU, profile: two breakpoints inserted, the tail shifted);
* ``order``: the bookings' start and end orders (two sorted inserts a placement);
* ``count fit``: the count profile's search for the first window where the counts fit;
* ``eligible``: each job's pass over every node for its eligibility and units offered;
* ``node choice``: placement on the room where the units suffice (``decide_in``);
* ``setup``: everything before the first job (a copy returning there; its time, not an extra).

What is left (the total less the setup and the phases) is the room: built or carried to each
job's first window and slid from candidate to candidate; the copy also counts the booking
entries applied while building, carrying and sliding. Every variant but ``setup`` decides as the
kernel (starts, their nodes and cores, reservations and their times: checked).

Printed: median CPU ms (``time.process_time``) of ``--repeat`` interleaved calls of the kernel
and of each variant on :mod:`bench_estimates`'s inputs (10 000 pending on 1 000 nodes:
:mod:`bench_nodes`), the extra of each phase, the load average.

Run: ``python benchmarks/conservative_phase_profile.py [--pending 10000] [--repeat 5]``
Figures: docs/research.md (issue 31, "the count profile in blocks").
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
from conservative_search_ceiling import plan_of

import rush.core.conservative_nodes as kernel
from rush.core import CoreConfig
from rush.core.scheduling_pass import scheduling_pass

print = functools.partial(print, flush=True)  # noqa: A001 - progress shows while the slow cases run

PHASES = ("none", "profile", "order", "count fit", "eligible", "node choice", "setup")
# tally slots: entries applied building fresh, sliding; rooms moved, built; sinks.
BUILT, SLID, MOVED, FRESH, SINK = 0, 1, 2, 3, 4
# candidates slid, placement calls, searches started; by kind (0 cores anywhere, 1 whole nodes,
# 2 shared nodes): candidates, searches, entries slid; then candidates per job (sequence order).
CAND, PLACE, SEARCHED, CAND_KIND, SEARCHED_KIND, SLID_KIND, PER_JOB = 5, 6, 7, 8, 11, 14, 17

# (old, new), or alternatives ((old, new), ...) of which exactly one applies (the kernel with
# flat count profiles, main's before issue 31's blocks, or with blocks): each old text must
# occur exactly once in the kernel's source.
PATCHES = (
    (
        '    nodes: NodeView,\n) -> tuple[int, int, int]:\n    """Conservative backfilling on nodes;',
        "    nodes: NodeView,\n    phase: int,\n    tally: np.ndarray,\n"
        ') -> tuple[int, int, int]:\n    """Conservative backfilling on nodes;',
    ),
    (
        "    res_slot = np.empty(2 * on + 2, dtype=np.int64)\n",
        "    res_slot = np.empty(2 * on + 2, dtype=np.int64)\n"
        "    if phase == 6:\n        return 0, 0, 0\n"
        "    sh_tc = ptime_c.copy()\n    sh_ac = avail_c.copy()\n"
        "    sh_tg = ptime_g.copy()\n    sh_ag = avail_g.copy()\n    sh_n = n\n"
        "    sh_start = start_at.copy()\n    sh_bys = by_start.copy()\n"
        "    sh_end = end_at.copy()\n    sh_bye = by_end.copy()\n",
    ),
    (
        (
            "            i = _count_fit((ptime_c, avail_c), (ptime_g, avail_g), n, counts, duration, (lo, bound))\n",
            "            i = _count_fit((ptime_c, avail_c), (ptime_g, avail_g), n, counts, duration, (lo, bound))\n"
            "            if phase == 3:\n"
            "                lo2 = np.searchsorted(ptime_c[:n], since, side='left')\n"
            "                tally[SINK] += _count_fit(\n"
            "                    (ptime_c, avail_c), (ptime_g, avail_g), n, counts, duration, (lo2, bound)\n"
            "                )\n",
        ),
        (
            "            at = count_fit(profile, counts, duration, place_at(profile, since), bound)\n",
            "            at = count_fit(profile, counts, duration, place_at(profile, since), bound)\n"
            "            if phase == 3:\n"
            "                tally[SINK] += count_fit(profile, counts, duration, place_at(profile, since), bound)[1]\n",
        ),
    ),
    (
        "            if moved:\n                cuts = ((next_out, next_in), (to_out, to_in))\n",
        "            tally[MOVED if moved else FRESH] += 1\n"
        "            if moved:\n                cuts = ((next_out, next_in), (to_out, to_in))\n",
    ),
    (
        "            next_out = to_out\n            next_in = to_in\n            carried = True\n",
        "            if phase == 4:\n"
        "                extra = 0\n"
        "                for node in range(m):\n"
        "                    ok = usable[node] and (p < 0 or ((parts[node] >> p) & 1) == 1)\n"
        "                    unit = _offer(rule, ok, (room.cores[node], room.gpus[node]), (cap_c[node], cap_g[node]))\n"
        "                    extra += unit + ((2 if flagged and unit > 0 else 1) if ok else 0)\n"
        "                tally[SINK] += extra\n"
        "            next_out = to_out\n            next_in = to_in\n            carried = True\n",
    ),
    (
        (
            "                    if b_on[b] and b_t0[b] < window_end:\n                        total += _apply(\n",
            "                    if b_on[b] and b_t0[b] < window_end:\n"
            "                        tally[BUILT] += b_slot[2 * b + 1] - b_slot[2 * b]\n"
            "                        total += _apply(\n",
        ),
        (
            "                        if b_on[b] and b_t0[b] < window_end:\n                            total += _apply(\n",
            "                        if b_on[b] and b_t0[b] < window_end:\n"
            "                            tally[BUILT] += b_slot[2 * b + 1] - b_slot[2 * b]\n"
            "                            total += _apply(\n",
        ),
    ),
    (
        (
            "                    if b_on[b] and b_t1[b] > t:\n                        total += _apply(\n",
            "                    if b_on[b] and b_t1[b] > t:\n"
            "                        tally[BUILT] += b_slot[2 * b + 1] - b_slot[2 * b]\n"
            "                        total += _apply(\n",
        ),
        (
            "                        if b_on[b] and b_t1[b] > t:\n                            total += _apply(\n",
            "                        if b_on[b] and b_t1[b] > t:\n"
            "                            tally[BUILT] += b_slot[2 * b + 1] - b_slot[2 * b]\n"
            "                            total += _apply(\n",
        ),
    ),
    (
        "                if b_on[b] and b_t0[b] < window_end:\n                    total += _apply(\n",
        "                if b_on[b] and b_t0[b] < window_end:\n"
        "                    tally[SLID] += b_slot[2 * b + 1] - b_slot[2 * b]\n"
        "                    tally[SLID_KIND + shape[0]] += b_slot[2 * b + 1] - b_slot[2 * b]\n"
        "                    total += _apply(\n",
    ),
    (
        "                if b_on[b] and b_t1[b] > t:\n                    total += _apply(\n",
        "                if b_on[b] and b_t1[b] > t:\n"
        "                    tally[SLID] += b_slot[2 * b + 1] - b_slot[2 * b]\n"
        "                    tally[SLID_KIND + shape[0]] += b_slot[2 * b + 1] - b_slot[2 * b]\n"
        "                    total += _apply(\n",
    ),
    (
        "                count = decide_in(\n"
        "                    table, job_ask(nodes.request, j), need, room, skip_now, nodes.placement, booked, used\n"
        "                )\n",
        "                count = decide_in(\n"
        "                    table, job_ask(nodes.request, j), need, room, skip_now, nodes.placement, booked, used\n"
        "                )\n"
        "                if phase == 5:\n"
        "                    tally[SINK] += decide_in(\n"
        "                        table, job_ask(nodes.request, j), need, room, skip_now, nodes.placement, booked, used\n"
        "                    )\n",
    ),
    (
        (
            "            n = _occupy(ptime_c, avail_c, n, placed_at, duration, -c)\n            b_slot[2 * nb] = used\n",
            "            n = _occupy(ptime_c, avail_c, n, placed_at, duration, -c)\n"
            "            if phase == 1:\n"
            "                if gpu_counts:\n"
            "                    _occupy(sh_tg, sh_ag, sh_n, placed_at, duration, -g)\n"
            "                sh_n = _occupy(sh_tc, sh_ac, sh_n, placed_at, duration, -c)\n"
            "            if phase == 2:\n"
            "                _insert_sorted(sh_start, sh_bys, nb, b_t0[nb], nb)\n"
            "                _insert_sorted(sh_end, sh_bye, nb, b_t1[nb], nb)\n"
            "            b_slot[2 * nb] = used\n",
        ),
        (
            "            occupy(profile, placed_at, duration, (-c, -g if gpu_counts else 0))\n"
            "            b_slot[2 * nb] = used\n",
            "            occupy(profile, placed_at, duration, (-c, -g if gpu_counts else 0))\n"
            "            if phase == 1:\n"
            "                occupy(sh_prof, placed_at, duration, (-c, -g if gpu_counts else 0))\n"
            "            if phase == 2:\n"
            "                _insert_sorted(sh_start, sh_bys, nb, b_t0[nb], nb)\n"
            "                _insert_sorted(sh_end, sh_bye, nb, b_t1[nb], nb)\n"
            "            b_slot[2 * nb] = used\n",
        ),
    ),
    (
        "    profile = blocks_from(ptime_c, (avail_c, counts_g), n, capacity)\n",
        "    profile = blocks_from(ptime_c, (avail_c, counts_g), n, capacity)\n"
        "    sh_prof = blocks_from(ptime_c, (avail_c, counts_g), n, capacity)\n",
        "optional",
    ),
    (
        (
            "    _keep_reservations(state, order, on, out, nr, res_slot, entries_of, kept)\n",
            "    tally[SINK] += sh_n + int(sh_ac[0] + sh_ag[0] + sh_bys[0] + sh_bye[0])\n"
            "    _keep_reservations(state, order, on, out, nr, res_slot, entries_of, kept)\n",
        ),
        (
            "    _keep_reservations(state, (order, on), jobs.est, out, nr, res_slot, entries_of, kept)\n",
            "    tally[SINK] += sh_n + int(sh_ac[0] + sh_ag[0] + sh_bys[0] + sh_bye[0])\n"
            "    _keep_reservations(state, (order, on), jobs.est, out, nr, res_slot, entries_of, kept)\n",
        ),
    ),
    # Counts (issue 31, round 17): candidates slid per job and per kind, placement calls
    # (each a scan of the job's nodes), searches started, profile inserts.
    (
        "        while 0 <= i < n and ptime_c[i] < bound:\n            t = ptime_c[i]\n",
        "        while 0 <= i < n and ptime_c[i] < bound:\n            t = ptime_c[i]\n"
        "            tally[CAND] += 1\n            tally[CAND_KIND + shape[0]] += 1\n"
        "            tally[PER_JOB + s] += 1\n",
    ),
    (
        "            if t == now or total >= need:\n",
        "            if t == now or total >= need:\n                tally[PLACE] += 1\n",
    ),
    (
        "        total = 0  # units the room offers job j (place() fails below ``need``)\n        if i >= 0:\n",
        "        total = 0  # units the room offers job j (place() fails below ``need``)\n        if i >= 0:\n"
        "            tally[SEARCHED] += 1\n            tally[SEARCHED_KIND + shape[0]] += 1\n",
    ),
    (
        "INF = np.inf\n",
        "INF = np.inf\nBUILT, SLID, MOVED, FRESH, SINK = 0, 1, 2, 3, 4\n"
        "CAND, PLACE, SEARCHED, CAND_KIND, SEARCHED_KIND, SLID_KIND, PER_JOB = 5, 6, 7, 8, 11, 14, 17\n",
    ),
)


def instrumented_kernel():
    """The kernel's module, patched, imported from a file of its own (numba caches it there)."""
    source = Path(kernel.__file__).read_text()
    for patch in PATCHES:
        if len(patch) == 3:  # (old, new, "optional"): applied where it applies
            old, new, _ = patch
            source = source.replace(old, new) if source.count(old) == 1 else source
            continue
        options = (patch,) if isinstance(patch[0], str) else patch
        fits = [(old, new) for old, new in options if source.count(old) == 1]
        if len(fits) != 1:
            sys.exit(
                f"the kernel changed: a patch of {Path(__file__).name} no longer applies:\n{options[0][0]}"
            )
        source = source.replace(*fits[0])
    source += "# registered in sys.modules (cached copies from before it are not loadable)\n"
    folder = Path(tempfile.gettempdir()) / f"rush-phase-profile-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    path = folder / "conservative_nodes_phases.py"
    if not path.exists() or path.read_text() != source:
        path.write_text(source)
    spec = importlib.util.spec_from_file_location("conservative_nodes_phases", path)
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: numba names a function's module in what it caches, and one
    # not in sys.modules is cached as "<dynamic>", which the next process cannot load.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.conservative_nodes_pass


def print_counts(tally: np.ndarray, pending: int) -> None:
    """Candidates slid (per job and per kind of request), placement calls and searches."""
    per_job = np.sort(tally[PER_JOB : PER_JOB + pending])[::-1]
    total = max(int(per_job.sum()), 1)
    tenth = int(per_job[: max(pending // 10, 1)].sum())
    print(
        f"candidates slid {tally[CAND]} ({tally[CAND] / pending:.0f} a job; median {np.median(per_job):.0f}, "
        f"p90 {np.percentile(per_job, 90):.0f}, p99 {np.percentile(per_job, 99):.0f}, max {per_job[0]}; "
        f"the top tenth of jobs {100 * tenth / total:.0f} %); placement calls {tally[PLACE]}, "
        f"searches started {tally[SEARCHED]}"
    )
    for kind, name in enumerate(("cores anywhere", "whole nodes", "shared nodes")):
        print(
            f"  {name:15s} searches {tally[SEARCHED_KIND + kind]:6d}  candidates {tally[CAND_KIND + kind]:8d}  "
            f"entries slid {tally[SLID_KIND + kind] / 1e6:5.1f} M"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=bench_args.positive, default=10_000)
    parser.add_argument("--repeat", type=bench_args.positive, default=5)
    args = parser.parse_args()
    on_nodes, _ = make_snapshots(args.pending)
    inputs = first_pass_inputs(on_nodes, CoreConfig(backfill="conservative"))
    patched = instrumented_kernel()
    print(
        f"{args.pending} pending jobs on {inputs[7].pool.count} nodes; load average {os.getloadavg()[0]:.2f}"
    )
    fresh = tuple(_fresh(a) for a in inputs)
    reference = plan_of(fresh, scheduling_pass(*fresh))
    tally = np.zeros(PER_JOB + args.pending, dtype=np.int64)
    fresh = tuple(_fresh(a) for a in inputs)
    if plan_of(fresh, patched(*fresh, 0, tally)) != reference:
        sys.exit("the instrumented kernel decides differently from the kernel: not measured")
    print(
        f"booking entries applied: {tally[BUILT] / 1e6:.1f} M building rooms ({tally[FRESH]} built, "
        f"{tally[MOVED]} carried), {tally[SLID] / 1e6:.1f} M sliding them"
    )
    print_counts(tally, args.pending)
    seconds: dict[str, list[float]] = {name: [] for name in ("kernel", *PHASES)}
    for _ in range(args.repeat):
        fresh = tuple(_fresh(a) for a in inputs)
        t0 = time.process_time()
        scheduling_pass(*fresh)
        seconds["kernel"].append(time.process_time() - t0)
        for phase, name in enumerate(PHASES):
            fresh = tuple(_fresh(a) for a in inputs)
            t0 = time.process_time()
            result = patched(*fresh, phase, np.zeros(PER_JOB + args.pending, dtype=np.int64))
            seconds[name].append(time.process_time() - t0)
            if name != "setup" and plan_of(fresh, result) != reference:
                sys.exit(f"phase {name} repeated decided differently: not measured")
    base = statistics.median(seconds["none"])
    setup = statistics.median(seconds["setup"])
    print(f"{'case':28s} {'median ms':>10s} {'min ms':>8s} {'max ms':>8s} {'phase ms':>9s}  (CPU)")
    rest = base - setup
    for name, values in seconds.items():
        median = statistics.median(values)
        if name in ("kernel", "none"):
            extra = ""
        elif name == "setup":
            extra = f"{setup * 1e3:9.1f}"
        else:
            extra = f"{(median - base) * 1e3:9.1f}"
            rest -= median - base
        label = {"kernel": "kernel (unpatched)", "none": "instrumented, none twice"}.get(
            name, f"twice: {name}"
        )
        print(f"{label:28s} {median * 1e3:10.1f} {min(values) * 1e3:8.1f} {max(values) * 1e3:8.1f} {extra}")
    print(f"left: the rooms built, carried and slid (and the rest) {rest * 1e3:.1f} ms")
    print(
        f"every repeated phase decided as the kernel: yes; load average {os.getloadavg()[0]:.2f} after the run"
    )


if __name__ == "__main__":
    main()
