"""The cyclic garbage collector's rule for the long-lived shells (the daemon and the Flux module).

Hypothesis (issue 31, measured by ``benchmarks/bench_live_cycle.py --steady``): a cycle allocates
about 10^5 short-lived objects (the RJMS read, the snapshot, the decisions), which refcounting
frees when the cycle ends. With CPython's default thresholds (700, 10, 10) those objects trigger
~140 young collections per cycle, survive them while the cycle runs, are promoted to the oldest
generation and so trigger a full collection about once per cycle, which walks the whole heap
(the kept planner state, numba, numpy: 30-50 ms at 10 000 pending). Freezing what start-up
loaded (``gc.freeze``, documented for exactly this: long-lived state moved out of the
collector's reach) and raising the youngest threshold so that a cycle's garbage is freed by
refcounting before the collector looks at it, makes full collections rare and cheap. Nothing
per cycle is frozen: a frozen object that later becomes cyclic garbage is never collected.
"""

from __future__ import annotations

import gc

# Young objects allocated (net) before a youngest-generation collection: a cycle's read and
# snapshot mostly die by refcount first. Older thresholds stay CPython's.
YOUNG_THRESHOLD = 50_000


def settle_collector() -> str:
    """Once, after the shell's start-up (config, models and kernels loaded): collect, freeze the
    survivors (they live as long as the process) and raise the youngest threshold. Returns the
    outcome in words, for the shell's start-up log."""
    gc.collect()
    gc.freeze()
    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(YOUNG_THRESHOLD, young), older, oldest)
    return f"collector settled: {gc.get_freeze_count()} objects frozen, thresholds {gc.get_threshold()}"
