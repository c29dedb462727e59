"""Prototypes of the fixes benchmarks/bench_flux_nodes.py suggests for rush's Flux module, to
measure them (``--fast``). Loaded by path in place of ``rush/flux_module/sched-rush.py`` (same
arguments).

The first fix (a pool that decodes the core's ``ranks`` constraint once) is now the module's
own (rush/flux_module/rank_pool.py), so this module only adds the two below.

With ``RUSH_BENCH_YIELD=1`` also the second fix: the module's pass is synchronous, so the
job-manager's answers to the first allocations (``alloc_success`` responds in a KVS-commit
continuation) wait until the whole pass (hundreds of allocations) ends: the first RUN comes
after the longest pass, not after the first allocation. Here the pass is a generator that
yields after each allocation, as sched-backfill's does, and a Flux event during a pass does
not abort it (the base class closes an in-progress generator; the pass's decisions stay
valid: frees only add resources, a job cancelled meanwhile is skipped) but asks for another
pass once it ends; the planning time feeds the base class's burst-coalescing delay.

With ``RUSH_BENCH_BATCH=1`` the third: the R of every job a pass allocates goes into one KVS
transaction, committed at the end of the pass and waited for synchronously (a synchronous
future is read out of order: it does not wait behind the thousands of alloc requests the
job-manager sent, which an asynchronous commit's continuation does), then every job is
answered. Measured: the first commit continuation runs only after every alloc request of
the burst has been handled, so today the first start waits for the whole queue's ingestion.
"""

from __future__ import annotations

import heapq
import os
import time

from _flux._core import ffi, lib  # type: ignore[import-not-found]
from flux.kvs import KVSTxn  # type: ignore[import-not-found]
from flux.kvs import commit_async as kvs_commit_async  # type: ignore[import-not-found]
from flux.scheduler import Scheduler  # type: ignore[import-not-found]

from rush.flux_module.scheduler import RushScheduler
from rush.planner.journal import DecisionRow


class FastRushScheduler(RushScheduler):
    yielding = os.environ.get("RUSH_BENCH_YIELD", "") == "1"
    _rerun = False

    _allocs_seen = 0
    _traced = False

    def alloc(self, *args):
        self._allocs_seen += 1
        return super().alloc(*args)

    def _alloc_commit_continuation(self, future, args):
        """Trace (``$RUSH_BENCH_TRACE``) when the first alloc response goes out, and how many
        alloc requests the module had handled by then."""
        trace = os.environ.get("RUSH_BENCH_TRACE", "")
        if trace and not self._traced:
            self._traced = True
            with open(trace, "a") as out:
                out.write(f"{time.time()} first commit continuation after {self._allocs_seen} allocs\n")
        return super()._alloc_commit_continuation(future, args)

    batching = os.environ.get("RUSH_BENCH_BATCH", "") == "1"
    _batch: list = []

    def alloc_success(self, msg, R, annotations=None):
        if not self.batching:
            return super().alloc_success(msg, R, annotations)
        self._batch = [*self._batch, (msg, R, annotations)]
        return None

    def _flush_batch(self) -> None:
        """Commit every R allocated in this pass in one transaction, then answer each job."""
        batch, self._batch = self._batch, []
        if not batch:
            return
        txn = KVSTxn(self.handle)
        buf = ffi.new("char[128]")
        for msg, R, _ in batch:
            if lib.flux_job_kvs_key(buf, 128, msg.payload["id"], b"R") < 0:
                raise OSError("flux_job_kvs_key failed")
            txn.put(ffi.string(buf).decode(), R)
        kvs_commit_async(self.handle, _kvstxn=txn).get()
        for msg, R, notes in batch:
            response = {"id": msg.payload["id"], "type": 0, "R": R}  # 0: FLUX_SCHED_ALLOC_SUCCESS
            if notes is not None:
                response["annotations"] = notes
            self.handle.respond(msg, response)

    def start_schedule(self):
        if self.yielding and self._sched_generator is not None:
            self._rerun = True  # finish this pass, then another one
            return
        super().start_schedule()

    def _on_sched_check(self, *args):
        super()._on_sched_check(*args)
        if self._sched_generator is None and self._rerun:
            self._rerun = False
            Scheduler.start_schedule(self)

    def schedule(self):
        if not self.yielding:
            result = super().schedule()
            self._flush_batch()
            return result
        return self._yielding_schedule()

    def _yielding_schedule(self):
        """RushScheduler.schedule with a yield after each allocation (same decisions)."""
        if not self._queue and not self.running:
            return
        planning = time.monotonic()
        report = self.planner.run_cycle()
        # The base class coalesces bursts only for synchronous passes: feed it the planning
        # time, so that a burst of arrivals is not met with one planner cycle per job.
        self._update_sched_ewma(time.monotonic() - planning)
        if not report.ok or self.planner.last is None or self.planner.last[0] != report.cycle:
            return
        cycle, built, decisions = self.planner.last
        queued = {job.jobid: job for job in self._queue}
        reserved = [d.job_id for d in decisions.decisions if d.action == "reserve"]
        done: set[int] = set()
        records = []
        refused = None
        for d in decisions.decisions:
            job = queued.get(d.job_id)
            if job is None or d.job_id not in self.pending:
                continue  # not queued, or cancelled during this pass
            if d.action == "infeasible":
                if self._deny_infeasible(job, d.reason):
                    done.add(d.job_id)
                continue
            if d.action not in ("start", "backfill"):
                continue
            if refused is not None:
                records.append((d, "failed", f"not attempted: the pool refused job {refused}"))
                continue
            status, answer = self._allocate(
                job, d, reserved[0] if reserved and d.action == "backfill" else None
            )
            if status == "refused":
                refused, status = d.job_id, "failed"
                self.log.error(f"rush: job {d.job_id}: {answer}")
            elif status == "done" or answer.startswith("denied"):
                done.add(d.job_id)
                self.pending.pop(d.job_id, None)
            records.append((d, status, answer))
            yield  # the reactor runs: this job's alloc response goes out now
        if done:
            self._queue = [job for job in self._queue if job.jobid not in done]
            heapq.heapify(self._queue)
            for job_id in done:
                self.pending.pop(job_id, None)
                self._estimates.pop(job_id, None)
        self._publish_estimates(decisions.decisions)
        journal = self.planner.journal
        with journal.transaction():
            for d, status, answer in records:
                row = DecisionRow(
                    cycle, d.job_id, d.action, d.reason, d.value, built.outputs.get(d.job_id), "apply"
                )
                journal.record(row, status, answer)


def mod_main(h, *args):
    FastRushScheduler(h, *args).run()
