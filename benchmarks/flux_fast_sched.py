"""Prototypes of changes to rush's Flux module, to measure them beside it
(benchmarks/bench_flux_nodes.py ``--fast``). Loaded by path in place of
``rush/flux_module/sched-rush.py`` (same arguments); rush/flux_module/ is unchanged.

The earlier prototypes (a pool that decodes the core's ``ranks`` constraint once, one KVS
commit per pass answered out of order, answers by the commit's continuation only) are now the
module's own (rank_pool.py, alloc_answers.py). The one here: with ``RUSH_BENCH_DELAY_MAX=S``
the base class's burst-coalescing delay may grow to S seconds (1 s in flux-core): fewer
passes, each over the whole queue, while jobs arrive and end. With ``RUSH_BENCH_NEVER_WAIT=1``
no pass waits for its commit, not even a small one (alloc_answers.ANSWER_AT_ONCE = 0).
"""

from __future__ import annotations

import os

from rush.flux_module.scheduler import RushScheduler


class FastRushScheduler(RushScheduler):
    def __init__(self, h, *args):
        super().__init__(h, *args)
        if os.environ.get("RUSH_BENCH_NEVER_WAIT", "") == "1":
            self.answers.answer_at_once = 0
        if os.environ.get("RUSH_BENCH_DELAY_MAX", ""):
            self.SCHED_DELAY_MAX = float(os.environ["RUSH_BENCH_DELAY_MAX"])


def mod_main(h, *args):
    FastRushScheduler(h, *args).run()
