"""rush as Flux's scheduler: a broker module on flux-core's ``flux.scheduler.Scheduler``.

Load it in place of ``sched-simple`` (the flux-core Python bindings and rush must be
importable by the broker's ``python3``: ``FLUX_PYTHONPATH_PREPEND``, see plugins/flux/README.md)::

    flux module remove sched-simple
    flux module load $(rush flux module-path) config=/etc/rush/rush.toml

or by modprobe configuration (``deploy/flux/modprobe-rush.toml``). Module arguments:
``config=PATH`` (rush.toml; default ``/etc/rush/rush.toml``), ``journal=PATH`` (overrides
``daemon.journal``), ``default-limit=SECONDS`` (the time limit of jobs submitted without one;
default: the instance's expiration, else unlimited), plus the base class's ``queue-depth=`` and
``log-level=``. The full pending queue is kept (``queue_depth = "unlimited"``).

This is a shell: no scheduling rule lives here. Every pass turns the module's own view (the
pending queue, the jobs it started, the resource pool) into a :class:`ClusterState` and hands
it to the planner (:class:`rush.planner.plan.Planner`, the same cycle as ``rush daemon``):
runtime classes, the variation predictor, :func:`rush.core.schedule`, skip counting and
false-small kills, all journaled. Its backend declares that it starts jobs, so the planner
plans no priorities and a skip is only counted. The module then only allocates the core's
``start`` and ``backfill`` decisions, in the core's order, from Flux's resource pool, and
journals each with its reason and outcome. A skipped job simply stays queued; a periodic pass
(``daemon.cycle_interval``) re-evaluates skips and kill deadlines when nothing else happens.
"""

from __future__ import annotations

import heapq
import math
import pwd
import time
from dataclasses import dataclass, replace
from pathlib import Path

from flux.resource import InfeasibleRequest, InsufficientResources  # type: ignore[import-not-found]
from flux.scheduler import PendingJob, Scheduler  # type: ignore[import-not-found]

from rush.core.job_rules import time_limit
from rush.core.schedule import schedule
from rush.core.snapshot import Decision, RunningJob, Snapshot
from rush.core.snapshot import PendingJob as CorePendingJob
from rush.errors import RushError
from rush.planner.config import load_config
from rush.planner.journal import DecisionRow
from rush.planner.plan import Planner
from rush.rjms.base import ClusterState, RJMSJob
from rush.rjms.flux import FluxBackend, count_cores, jobspec_tags, trusted_submit_time

DEFAULT_CONFIG = "/etc/rush/rush.toml"


@dataclass
class ModuleArgs:
    config: Path = Path(DEFAULT_CONFIG)
    journal: Path | None = None
    default_limit: float | None = None

    @classmethod
    def parse(cls, args: list[str]) -> tuple[ModuleArgs, list[str]]:
        """rush's own ``key=value`` arguments; the rest is left for the base class's check."""
        out, rest = cls(), []
        for arg in args:
            key, sep, value = arg.partition("=")
            if key == "config" and sep and value:
                out.config = Path(value)
            elif key == "journal" and sep and value:
                out.journal = Path(value)
            elif key == "default-limit" and sep:
                try:
                    out.default_limit = float(value)
                except ValueError:
                    out.default_limit = math.nan
                if not (math.isfinite(out.default_limit) and out.default_limit > 0):
                    raise ValueError(f"default-limit={value!r}: give seconds > 0, e.g. default-limit=3600")
            else:
                rest.append(arg)
        return out, rest


def user_name(userid: int, cache: dict[int, str]) -> str:
    if userid not in cache:
        try:
            cache[userid] = pwd.getpwuid(userid).pw_name
        except (KeyError, OverflowError):
            cache[userid] = str(userid)
    return cache[userid]


class ModuleBackend(FluxBackend):
    """The planner's backend inside the module: reads come from the module's own view, and it
    starts jobs (the module allocates them), so the planner places no holds and no priorities.
    Kills go through Flux as for the daemon (cancel and resubmit)."""

    capabilities = replace(FluxBackend.capabilities, starts_jobs=True)

    def __init__(self, sched: RushScheduler) -> None:
        super().__init__(handle=sched.handle)
        self.sched = sched

    def read_state(self, partitions=()) -> ClusterState:
        return self.sched.cluster_state(partitions)


class RushScheduler(Scheduler):
    queue_depth = "unlimited"

    def __init__(self, h, *args):
        options, rest = ModuleArgs.parse(list(args))
        super().__init__(h, *rest)
        self._reject_unknown_args()  # a mistyped argument is named before the config is read
        self.options = options
        try:
            config = load_config(options.config)
        except RushError as exc:
            raise ValueError(f"rush configuration: {exc}") from None
        if options.journal is not None:
            config = config.model_copy(
                update={"daemon": config.daemon.model_copy(update={"journal": options.journal})}
            )
        self.config = config
        # Queued jobs as rush reads them (built once, at alloc) and the jobs this module started.
        self.pending: dict[int, RJMSJob] = {}
        self.running: dict[int, RJMSJob] = {}
        self._users: dict[int, str] = {}
        # A pass per Flux event: commits reach the OS, not the disk, each time (a broker crash
        # loses nothing; a machine crash takes the running jobs with it anyway).
        # Kept typed: the module asks its own backend for Flux-only facts (the owner).
        self.backend = ModuleBackend(self)
        self.planner = Planner(config, backend=self.backend, journal_sync="NORMAL")
        self._warm_up()
        interval = float(config.daemon.cycle_interval)
        self._tick = h.timer_watcher_create(interval, lambda *_: self._periodic_pass(), repeat=interval)
        self._tick.start()
        self.log.info(
            f"rush scheduler: policy {config.policy.policy}, backfill {config.policy.backfill}, "
            f"journal {config.daemon.journal}"
        )

    def _warm_up(self) -> None:
        """Load the core's compiled kernels now, not in the first pass over a full queue."""
        now = time.time()
        snapshot = Snapshot(
            now=now,
            total_procs=2,
            free_procs=1,
            pending=(CorePendingJob(1, now, 2, 60.0),),
            running=(RunningJob(2, now, 1, 60.0),),
        )
        schedule(snapshot, self.planner.core_config)

    def _periodic_pass(self) -> None:
        """Skips expire and kill deadlines pass with no Flux event: a pass every cycle_interval,
        also with an empty queue while jobs run (the base class asks for one only with jobs queued)."""
        if self._queue:
            self._request_schedule()
        elif self.running:
            self.schedule()

    def _owner(self) -> int | None:
        return self.backend._owner()

    # -- the module's view ----------------------------------------------------------------
    def _limit(self, duration: float) -> float:
        expiration = float(self.resources.expiration or 0.0)
        left = expiration - time.time() if expiration > 0 else None
        return time_limit(float(duration), self.options.default_limit, left)

    def cluster_state(self, partitions=()) -> ClusterState:
        now = time.time()
        pool = self.resources
        total = pool.to_resource_set().ncores
        busy = pool.copy_allocated().ncores + pool.copy_down().ncores
        # The job objects are kept from alloc on, so the snapshot builder reuses their entries.
        jobs = [self.pending[job.jobid] for job in self._queue if job.jobid in self.pending]
        jobs.extend(self.running.values())
        if partitions:
            jobs = [j for j in jobs if j.partition in partitions]
        return ClusterState(
            taken_at=now,
            total_procs=int(total),
            free_procs=max(int(total) - int(busy), 0),
            jobs=tuple(jobs),
            partitions=tuple(sorted({j.partition for j in jobs if j.partition})),
        )

    # -- Scheduler overrides --------------------------------------------------------------
    def alloc(self, request, jobid, priority, userid, t_submit, jobspec):
        """Queue a job; one that can never run here is denied at once (it would block the queue)."""
        try:
            rr = self.resources.parse_resource_request(jobspec)
            self.resources.check_feasibility(rr)
        except Exception as exc:  # jobspec is untrusted input: deny, never stop the module
            why = str(exc) or type(exc).__name__
            request.deny(why[:500])
            self.planner.journal.event(None, "denied", f"job {jobid}: {why[:500]}")
            return
        system = jobspec.get("attributes", {}).get("system", {})
        system = system if isinstance(system, dict) else {}
        job = system.get("job", {})
        tags = jobspec_tags(jobspec)
        self.pending[jobid] = RJMSJob(
            job_id=int(jobid),
            state="PENDING",
            submit=trusted_submit_time(tags, float(t_submit), int(userid), self._owner()),
            procs=int(rr.ncores),
            requested_time=self._limit(float(rr.duration)),
            user=user_name(int(userid), self._users),
            partition=str(system.get("queue", ""))[:256],
            name=str(job.get("name", ""))[:256] if isinstance(job, dict) else "",
            tags=tags,
        )
        heapq.heappush(self._queue, PendingJob(jobid, priority, t_submit, request, rr))

    def hello(self, jobid, priority, userid, t_submit, R):
        """A job running when the module (re)loads: registered, with its tags from its jobspec."""
        super().hello(jobid, priority, userid, t_submit, R)
        r = R.to_dict()
        execution = r.get("execution", {})
        start = float(execution.get("starttime") or t_submit)
        expiration = float(execution.get("expiration") or 0.0)
        try:
            answer = self.handle.rpc("job-info.lookup", {"id": jobid, "keys": ["jobspec"], "flags": 0}).get()
            tags = jobspec_tags(answer.get("jobspec", {}))
        except OSError:
            tags = {}
        self.running[jobid] = RJMSJob(
            job_id=int(jobid),
            state="RUNNING",
            submit=trusted_submit_time(tags, float(t_submit), int(userid), self._owner()),
            procs=max(count_cores(r), 1),
            requested_time=expiration - start if expiration > start else math.inf,
            start=start,
            user=user_name(int(userid), self._users),
            tags=tags,
        )

    def free(self, jobid, R, final=False):
        super().free(jobid, R, final)
        if final:
            self.running.pop(jobid, None)

    def cancel(self, jobid):
        super().cancel(jobid)
        self.pending.pop(jobid, None)

    def expiration(self, msg, jobid, expiration):
        """A running job's time limit changed (flux update): the core sees its new estimate."""
        self.resources.update_expiration(jobid, expiration)
        job = self.running.get(jobid)
        if job is not None and job.start is not None:
            self.running[jobid] = replace(job, requested_time=max(float(expiration) - job.start, 0.0))
        self.handle.respond(msg, None)

    def schedule(self):
        """One pass: the planner decides, this module allocates its starts in its order."""
        if not self._queue and not self.running:
            return
        report = self.planner.run_cycle()
        if not report.ok or self.planner.last is None or self.planner.last[0] != report.cycle:
            return  # journaled by the planner; nothing is started on a failed pass
        cycle, built, decisions = self.planner.last
        queued = {job.jobid: job for job in self._queue}
        done: set[int] = set()
        records = []
        for d in decisions.decisions:
            if d.action not in ("start", "backfill"):
                continue
            job = queued.get(d.job_id)
            if job is None:
                continue
            status, answer = self._allocate(job, d)
            if status != "deferred":
                done.add(d.job_id)
            records.append((d, status, answer))
        if done:
            self._queue = [job for job in self._queue if job.jobid not in done]
            heapq.heapify(self._queue)
            for job_id in done:
                self.pending.pop(job_id, None)
        journal = self.planner.journal
        with journal.transaction():
            for d, status, answer in records:
                journal.record(
                    DecisionRow(
                        cycle, d.job_id, d.action, d.reason, d.value, built.outputs.get(d.job_id), "apply"
                    ),
                    status,
                    answer,
                )

    def _allocate(self, job, decision: Decision) -> tuple[str, str]:
        """Allocate one of the core's starts: (journal status, answer)."""
        rr = job.resource_request
        try:
            alloc = self.resources.alloc(job.jobid, rr)
        except InsufficientResources as exc:
            # The core counts cores; the pool also sees topology (e.g. whole nodes). Retried next pass.
            return "deferred", f"not allocated: {exc or 'insufficient resources'}; retried next pass"
        except InfeasibleRequest as exc:
            job.request.deny(str(exc) or "unsatisfiable request")
            return "failed", f"denied: {exc}"
        now = time.time()
        alloc.set_starttime(now)
        limit = self._limit(float(rr.duration))
        if math.isfinite(limit):
            alloc.set_expiration(now + limit)
        queued = self.pending.get(job.jobid)
        summary = alloc.dumps()
        job.request.success(alloc, {"sched": {"resource_summary": summary, "rush": decision.reason[:200]}})
        if queued is not None:
            self.running[job.jobid] = replace(queued, state="RUNNING", start=now, requested_time=limit)
        return "done", f"allocated {summary}"


def mod_main(h, *args):
    RushScheduler(h, *args).run()
