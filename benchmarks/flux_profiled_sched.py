"""rush's Flux scheduler module under cProfile, for benchmarks/bench_flux_nodes.py --profile.

Loaded by path in place of ``rush/flux_module/sched-rush.py`` (same arguments). Every
``schedule()`` pass and every ``alloc()`` (a job arriving) runs under one cProfile profiler;
the statistics are dumped to ``$RUSH_BENCH_PROFILE`` after each pass (the last dump covers
the whole run). The module itself is unchanged: this only subclasses it.
"""

from __future__ import annotations

import cProfile
import os
import time

from rush.flux_module.scheduler import RushScheduler


class ProfiledRushScheduler(RushScheduler):
    def __init__(self, h, *args):
        self._profile = cProfile.Profile()
        self._dump_to = os.environ.get("RUSH_BENCH_PROFILE", "")
        self._last_dump = 0.0
        super().__init__(h, *args)

    def _profiled(self, method, *args):
        self._profile.enable()
        try:
            return method(*args)
        finally:
            self._profile.disable()

    def alloc(self, *args):
        return self._profiled(super().alloc, *args)

    def free(self, *args, **kwargs):
        self._profile.enable()
        try:
            return super().free(*args, **kwargs)
        finally:
            self._profile.disable()

    def schedule(self):
        result = self._profiled(super().schedule)
        # Dumping costs time itself: at most once a second (the bench waits for the last one).
        if self._dump_to and time.monotonic() - self._last_dump > 1.0:
            self._profile.dump_stats(self._dump_to)
            self._last_dump = time.monotonic()
        return result


def mod_main(h, *args):
    ProfiledRushScheduler(h, *args).run()
