"""A scheduler module with a per-job timeline, for benchmarks/bench_flux_nodes.py ``--lag``.

Loaded by path in place of a scheduler module; ``$RUSH_BENCH_LAG_BASE`` names the scheduler it
wraps: ``rush`` (rush/flux_module/sched-rush.py's :class:`RushScheduler`, same arguments) or
``backfill`` (flux-core's own ``sched-backfill.py``, from the flux-core this module runs on).
Neither is changed: this only subclasses it and records, by the wall clock (``time.time()``,
the clock of the job's eventlog, so the two line up; a cheap call, no RPC), for every job:

- ``arrival``: its alloc request reaches the module's ``alloc()``;
- ``decided``: the module allocates it (``alloc_success``: the scheduler's decision carried out);
- ``responded``: the alloc response is handed to the broker (``handle.respond`` with R);

and, per pass, the jobs queued at its start, its start and end (``pass``) and, for rush, each KVS commit of R sent
(``commit``: the jobs in it). The records are appended as JSON lines to ``$RUSH_BENCH_LAG``
every 0.25 s while there are new ones (so the writing is off the passes' path); the
benchmark reads them after the last job is clean and lines them up with each job's eventlog
(``alloc``, ``start``, ``finish``, ``free``, ``clean``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path

import flux  # type: ignore[import-not-found]

BASE = os.environ.get("RUSH_BENCH_LAG_BASE", "rush")


def _backfill_class() -> type:
    """flux-core's own sched-backfill module's scheduler class (its file has a hyphen)."""
    path = Path(flux.__file__).resolve().parents[3] / "flux" / "modules" / "sched-backfill.py"
    spec = importlib.util.spec_from_file_location("flux_sched_backfill", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BackfillScheduler


if BASE == "backfill":
    Base = _backfill_class()
elif BASE == "rush":
    from rush.flux_module.scheduler import RushScheduler as Base
else:
    raise ValueError(f"RUSH_BENCH_LAG_BASE={BASE!r}: give rush or backfill")


class LagScheduler(Base):  # type: ignore[misc,valid-type]
    def __init__(self, h, *args):
        self._lag_to = os.environ.get("RUSH_BENCH_LAG", "")
        self._lag: list[list] = []
        super().__init__(h, *args)
        respond = self.handle.respond

        def timed_respond(msg, payload=None):
            if isinstance(payload, dict) and "R" in payload and "id" in payload:
                self._lag.append(["responded", payload["id"], time.time()])
            return respond(msg, payload)

        self.handle.respond = timed_respond
        if hasattr(self, "answers"):  # rush: each KVS commit of a pass's R, when sent
            collected = self.answers._commit_collected

            def timed_commit():
                batch = collected()
                if batch is not None:
                    self._lag.append(["commit", [a[0] for a in batch.answers], time.time()])
                return batch

            self.answers._commit_collected = timed_commit
        self._lag_flush = h.timer_watcher_create(0.25, lambda *_: self._flush(), repeat=0.25)
        self._lag_flush.start()

    def _flush(self) -> None:
        if self._lag and self._lag_to:
            records, self._lag = self._lag, []
            with open(self._lag_to, "a") as out:
                out.writelines(json.dumps(r) + "\n" for r in records)

    def _commits_answered(self) -> None:  # rush: the last open commit answered
        self._lag.append(["all_answered", self.settle.settling(), time.time()])
        return super()._commits_answered()

    def _on_sched_timer(self, *args):
        self._lag.append(["due", self._sched_pending, time.time()])
        return super()._on_sched_timer(*args)

    def alloc(self, request, jobid, *args):
        self._lag.append(["arrival", jobid, time.time()])
        return super().alloc(request, jobid, *args)

    def alloc_success(self, msg, R, annotations=None):
        jobid = getattr(self, "_answering", None)  # rush's: without decoding the message again
        self._lag.append(["decided", jobid if jobid is not None else msg.payload["id"], time.time()])
        return super().alloc_success(msg, R, annotations)

    def schedule(self):
        began, queued = time.time(), len(self._queue)
        result = super().schedule()
        if result is None:  # a synchronous pass (rush's)
            self._lag.append(["pass", queued, began, time.time()])
            return result
        return self._timed_generator(result, began, queued)  # sched-backfill's generator pass

    def _timed_generator(self, generator, began: float, queued: int):
        try:
            yield from generator
        finally:
            self._lag.append(["pass", queued, began, time.time()])


def mod_main(h, *args):
    LagScheduler(h, *args).run()
