"""rush's Flux scheduler module under cProfile or wall-clock timers, for
benchmarks/bench_flux_nodes.py ``--profile`` / ``--timers``.

Loaded by path in place of ``rush/flux_module/sched-rush.py`` (same arguments). The whole
module's reactor loop (every message handler, every pass, every continuation; flux-core's base
class and its pool included) runs under one cProfile profiler timed by the thread's CPU clock,
so that a loaded host does not inflate it; the statistics are dumped to
``$RUSH_BENCH_PROFILE`` every second of activity (the last dump covers the whole run). With ``$RUSH_BENCH_TIMERS`` set, no profiler: the wall-clock seconds of the
module's steps (a job's arrival as the base class handles it, the planner's pass, the
allocations, the KVS commit's wait, the answers, the rest of the pass, the garbage collector's
pauses by generation) are summed, with their CPU seconds (the thread clock), and written
there as JSON after each pass, so that the shares are those of the real run, not of a
profiled one. The module itself is unchanged: this only subclasses it.
"""

from __future__ import annotations

import cProfile
import gc
import json
import os
import time
from collections import defaultdict

from rush.flux_module.scheduler import RushScheduler


class ProfiledRushScheduler(RushScheduler):
    def __init__(self, h, *args):
        self._profile = cProfile.Profile(time.thread_time)
        self._dump_to = os.environ.get("RUSH_BENCH_PROFILE", "")
        self._timers_to = os.environ.get("RUSH_BENCH_TIMERS", "")
        self._seconds: dict[str, float] = defaultdict(float)
        self._cpu: dict[str, float] = defaultdict(float)  # the same steps' CPU seconds (thread clock)
        self._calls: dict[str, int] = defaultdict(int)
        # (wall-clock start, step, wall seconds, CPU seconds) of every timed step: the run's timeline.
        self._timeline: list[tuple[float, str, float, float]] = []
        self._active = False
        super().__init__(h, *args)
        if self._timers_to:
            run_cycle = self.planner.run_cycle
            self.planner.run_cycle = lambda: self._timed("planner", run_cycle)
            commit, answer = self.answers.commit, self.answers.answer
            self.answers.commit = lambda: self._timed("KVS commit sent", commit)
            self.answers.answer = lambda batch: self._timed("KVS commit wait + answers", answer, batch)
            self._time_pass_parts()
            gc.callbacks.append(self._gc_timer)  # the cyclic collector's pauses, wherever they fall

    def _time_pass_parts(self) -> None:
        """The planner's pass by part (instance attributes shadow the methods; the core's
        ``schedule`` is the planner module's own name for it): where a long pass goes."""
        import rush.planner.plan as plan_module

        planner = self.planner
        for name, obj, attr in (
            ("pass: read (pool view, jobs)", self.backend, "read_state"),
            ("pass: snapshot build", planner.builder, "build"),
            ("pass: kept columns", planner._columns, "update"),
            ("pass: queue rows", planner, "_record_queue"),
            ("pass: act (book, advice rows)", planner, "_act"),
            ("pass: t_estimate annotations", self, "_publish_estimates"),
        ):
            method = getattr(obj, attr)
            setattr(obj, attr, lambda *a, _m=method, _n=name, **k: self._timed(_n, _m, *a, **k))
        core_schedule = plan_module.schedule
        plan_module.schedule = lambda *a, **k: self._timed("pass: core schedule()", core_schedule, *a, **k)

    def _gc_timer(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        name = f"garbage collection (gen {info.get('generation')})"
        self._seconds[name] += time.perf_counter() - getattr(self, "_gc_started", time.perf_counter())
        self._calls[name] += 1

    def _timed(self, name, method, *args, **kwargs):
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return method(*args, **kwargs)
        finally:
            seconds, cpu = time.perf_counter() - t0, time.thread_time() - c0
            self._seconds[name] += seconds
            self._cpu[name] += cpu
            self._timeline.append((time.time() - seconds, name, seconds, cpu))
            self._calls[name] += 1

    def run(self):
        if self._timers_to or not self._dump_to:
            return super().run()
        # Dumping costs time itself: at most once a second, and only after activity.
        self._dumper = self.handle.timer_watcher_create(1.0, lambda *_: self._dump(), repeat=1.0)
        self._dumper.start()
        self._active = False
        self._profile.enable()
        try:
            return super().run()
        finally:
            self._profile.disable()

    def _dump(self) -> None:
        if self._active:
            self._profile.dump_stats(self._dump_to)  # disables the profiler: on again
            self._profile.enable()
            self._active = False

    # Flux registers its handlers by name (getattr on the instance): these are the ones called.
    def _handle_alloc(self, msg):
        return self._timed("arrival (base class + alloc)", super()._handle_alloc, msg)

    def _handle_free(self, msg):
        return self._timed("job end (base class + free)", super()._handle_free, msg)

    def _allocate_starts(self, decisions):
        return self._timed("allocations", super()._allocate_starts, decisions)

    def alloc(self, *args):
        self._active = True
        return super().alloc(*args)

    def free(self, *args, **kwargs):
        self._active = True
        return super().free(*args, **kwargs)

    def schedule(self):
        if self._timers_to:
            result = self._timed("pass (all of schedule)", super().schedule)
            with open(self._timers_to, "w") as out:
                json.dump(
                    {
                        "seconds": self._seconds,
                        "cpu": self._cpu,
                        "calls": self._calls,
                        "at": time.time(),
                        "timeline": self._timeline,
                    },
                    out,
                )
            return result
        self._active = True
        return super().schedule()


def mod_main(h, *args):
    ProfiledRushScheduler(h, *args).run()
