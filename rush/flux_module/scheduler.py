"""rush as Flux's scheduler: a broker module on flux-core's ``flux.scheduler.Scheduler``.

Load it in place of ``sched-simple`` (the flux-core Python bindings and rush must be
importable by the broker's ``python3``: ``FLUX_PYTHONPATH_PREPEND``, see plugins/flux/README.md)::

    flux module remove sched-simple
    flux module load $(rush flux module-path) config=/etc/rush/rush.toml

or by modprobe configuration (``deploy/flux/modprobe-rush.toml``). Module arguments:
``config=PATH`` (rush.toml; default ``/etc/rush/rush.toml``), ``journal=PATH`` (overrides
``daemon.journal``), ``default-limit=SECONDS`` (the time limit of jobs submitted without one;
default: the instance's expiration, else unlimited), ``start-batch=N`` (at most N of a pass's
starts are allocated before the module answers the messages that came meanwhile; the next pass
follows at once; default :data:`START_BATCH`), ``settle=SECONDS`` (the longest a due pass waits for
the messages queued for the module and, after a long pass, its open KVS commits,
pass_settle.py; default :data:`rush.flux_module.pass_settle.SETTLE_MIN`; 0: it never waits, as
before), ``idle-queue=N`` (an idle module, no job running and no commit open, runs a due pass at
once while at most N jobs are queued; default :data:`rush.flux_module.pass_settle.IDLE_QUEUE`;
0: an idle module settles as a busy one), plus the base class's ``queue-depth=`` and
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
Every Flux event is a pass too, so a skip limit counts passes, not seconds. With
``daemon.dry_run = false`` the journal keeps each job's skip count (``jobs.skips``) and the
``hold``/``skip``/``release`` rows say ``done``; in dry-run the skips still happen (starts always
do) but are journaled as dry-run and counted in memory only.

With ``site.fairshare = "rjms"`` each pass reads flux-accounting's fair-share factors once
(``job-manager.jobtap-query`` of ``mf_priority.so``: one RPC, one entry per association) and
gives every queued job its association's factor (its userid and ``system.bank``, which
mf_priority writes into the jobspec before the job reaches the scheduler) for the policy's
``fairshare`` term. A missing association or a factor outside [0, 1] fails the pass with the
job named (nothing is started on it); the next pass reads again.
"""

from __future__ import annotations

import heapq
import json
import math
import pwd
import time
from dataclasses import dataclass, replace
from pathlib import Path

from _flux._core import lib  # type: ignore[import-not-found]
from flux.job import JobID  # type: ignore[import-not-found]
from flux.resource import InfeasibleRequest, InsufficientResources  # type: ignore[import-not-found]
from flux.scheduler import PendingJob, Scheduler  # type: ignore[import-not-found]

from rush.core.job_rules import time_limit
from rush.core.resources import Request as CoreRequest
from rush.core.snapshot import Decision, Decisions
from rush.core.start_estimates import BASIS_NOW, estimate_moved
from rush.core.warm_up import warm_live_pass
from rush.errors import RJMSError, RushError
from rush.flux_module.alloc_answers import AllocAnswers
from rush.flux_module.pass_settle import IDLE_QUEUE, SETTLE_FIX, SETTLE_MIN, PassSettle, settle_hooks_missing
from rush.flux_module.rank_pool import RankCachedResourcePool, allocation_of, confined_request, pool_nodes
from rush.planner.collector import settle_collector
from rush.planner.config import load_config
from rush.planner.journal import DecisionRow
from rush.planner.plan import Planner
from rush.rjms.base import ClusterState, RJMSJob
from rush.rjms.flux import (
    FAIRSHARE_FIX,
    MF_PRIORITY,
    FluxBackend,
    allocation_from_r,
    association_fairshare,
    association_fairshares,
    count_cores,
    jobspec_tags,
    nodes_from_r,
    queue_requirements,
    r_hosts,
    r_ranks,
    request_from_jobspec,
    trusted_submit_time,
)

DEFAULT_CONFIG = "/etc/rush/rush.toml"
# At most this many sched.t_estimate annotations per pass (highest priority first).
MAX_ANNOTATIONS_PER_PASS = 1000
# At most this many of a pass's starts are allocated before the module answers the messages
# queued meanwhile (RPCs, arrivals, ends); the rest are decided again by the next pass, at once.
# About 0.2 s of allocations (0.6-0.9 ms each at 1 000 nodes, benchmarks/bench_flux_nodes.py).
START_BATCH = 256
# Distinct (resources, queue) of arriving jobs whose core request is remembered.
SHAPES_REMEMBERED = 1024


@dataclass
class ModuleArgs:
    config: Path = Path(DEFAULT_CONFIG)
    journal: Path | None = None
    default_limit: float | None = None
    start_batch: int = START_BATCH
    settle: float = SETTLE_MIN
    idle_queue: int = IDLE_QUEUE

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
            elif key == "start-batch" and sep:
                if not (value.isdigit() and 1 <= int(value) <= 1_000_000):
                    raise ValueError(
                        f"start-batch={value!r}: give a number of jobs >= 1, e.g. start-batch=256"
                    )
                out.start_batch = int(value)
            elif key == "settle" and sep:
                try:
                    out.settle = float(value)
                except ValueError:
                    out.settle = math.nan
                if not (math.isfinite(out.settle) and 0 <= out.settle <= 60):
                    raise ValueError(f"settle={value!r}: give seconds from 0 to 60, e.g. settle=0.05")
            elif key == "idle-queue" and sep:
                if not (value.isdigit() and int(value) <= 1_000_000):
                    raise ValueError(
                        f"idle-queue={value!r}: give a number of jobs >= 0, e.g. idle-queue={IDLE_QUEUE} "
                        "(0: an idle module settles as a busy one)"
                    )
                out.idle_queue = int(value)
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
        if self.sched.fairshare:
            self.sched.read_fairshares()
        return self.sched.cluster_state(partitions)

    def end_times(self, job_ids) -> dict[int, float]:
        """When the module freed each finished job (the planner's completions), without an RPC."""
        ended = self.sched.ended
        return {j: ended.pop(j) for j in job_ids if j in ended}


class RushScheduler(Scheduler):
    queue_depth = "unlimited"
    # The core's placements are ranks constraints; this pool decodes each once (rank_pool.py).
    pool_class = RankCachedResourcePool

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
        # site.fairshare = "rjms": flux-accounting's factor per queued job, read each pass.
        self.fairshare = config.site.fairshare == "rjms"
        # Queued jobs as rush reads them (built once, at alloc) and the jobs this module started.
        self.pending: dict[int, RJMSJob] = {}
        self.running: dict[int, RJMSJob] = {}
        # Finished jobs' end times until the planner's next pass reads them (its accounting).
        self.ended: dict[int, float] = {}
        self._users: dict[int, str] = {}
        self._userids: dict[int, int] = {}  # queued job -> its userid (its association's)
        # Node name <-> broker rank (names are R's hostnames when unique, else rank<N>).
        self._rank_of: dict[str, int] = {}
        self._names: dict[int, str] = {}
        self._queues = self._queue_properties()
        # The t_estimate last published per job (sched-backfill's protocol: only on change).
        self._estimates: dict[int, float] = {}
        self.estimates_sent = 0  # t_estimate annotations sent (flux module stats)
        # Jobs the core finds infeasible and the pool does not (logged once each).
        self._disagreed: set[int] = set()
        # Each running job's R_lite as this module allocated it: a final free with the same R_lite
        # returns the whole allocation without parsing R into a pool again (_handle_free).
        self._allocated: dict[int, list] = {}
        # The job whose allocation is being answered (alloc_success is given only its message).
        self._answering: int | None = None
        # Each pass's allocations: KVS commits of CHUNK jobs, answered when done (alloc_answers.py).
        self.answers = AllocAnswers(h, self.log, self.stop_error, on_all_answered=self._commits_answered)
        # A due pass first reads what is queued for the module and lets its commits complete,
        # through flux-core 0.88's private pass timer: without it, every due pass runs at once.
        self.settle = PassSettle(limit=options.settle, idle_queue=options.idle_queue)
        missing = settle_hooks_missing(Scheduler, self)
        if missing:
            self.settle.off = f"flux-core {self._flux_version()} has no {', '.join(missing)}"
            self.log.warning(f"rush: {self.settle.off}: {SETTLE_FIX}")
        self._shapes: dict[str, CoreRequest] = {}
        # A pass per Flux event: commits reach the OS, not the disk, each time (a broker crash
        # loses nothing; a machine crash takes the running jobs with it anyway).
        # Kept typed: the module asks its own backend for Flux-only facts (the owner).
        self.backend = ModuleBackend(self)
        self.planner = Planner(config, backend=self.backend, journal_sync="NORMAL")
        self._warm_up()
        # What is loaded by now (rush, numba, numpy: most of the process's objects) lives as long
        # as the module: out of the cyclic collector's way, whose full passes over it took
        # seconds in a burst of thousands of jobs (benchmarks/bench_flux_nodes.py --timers).
        self.log.info(settle_collector())
        interval = float(config.daemon.cycle_interval)
        self._tick = h.timer_watcher_create(interval, lambda *_: self._periodic_pass(), repeat=interval)
        self._tick.start()
        # A pass that left starts for the next one runs it on the next reactor turn, after the
        # messages that came meanwhile, without the base class's coalescing delay.
        self._next_batch = h.timer_watcher_create(0.0, lambda *_: self._on_sched_timer())
        self.log.info(
            f"rush scheduler: policy {config.policy.policy}, backfill {config.policy.backfill}, "
            f"skip limit {config.policy.skip_limit}, "
            f"variation {config.variation.predictor if config.variation.enabled else 'off'}, "
            f"journal {config.daemon.journal}"
        )
        if config.daemon.dry_run and config.variation.enabled:
            # The module starts jobs whatever dry_run says, so a skip is in effect either way;
            # only applying keeps the skip counts in the journal (a reload counts on from them).
            self.log.warning(
                "rush: daemon.dry_run = true: skipped jobs stay queued but their skips are "
                "journaled as dry-run and counted in memory only (a module reload starts them "
                "from 0); set daemon.dry_run = false"
            )

    def _warm_up(self) -> None:
        """Load every compiled kernel a pass can call now, not in a pass over a full queue (the
        start-estimate projection was first called, and compiled, in the first pass over more
        than 2 000 waiting jobs: rush.core.warm_up)."""
        warm_live_pass(self.planner.core_config)

    def _flux_version(self) -> str:
        try:
            return str(self.handle.attr_get("version"))
        except (OSError, AttributeError, TypeError, ValueError):
            return "(version unknown)"

    def _on_sched_timer(self, *_):
        """A due pass (the base class's timer, or the next batch's) settles first
        (pass_settle.py): put off while a message is waiting for the module or one of its
        commits is open, within the settle bound; the reactor reads meanwhile; an idle module's
        pass (no job running, a short queue, no commit open) runs at once. Without the
        base class's timer (``settle.off``) the pass runs at once, through the base class's
        callback when it has one."""
        base = getattr(super(), "_on_sched_timer", None)
        if not self.settle.off:
            waiting = lib.flux_pollevents(self.handle.handle)
            wait = self.settle.wait(
                time.monotonic(),
                waiting > 0 and bool(waiting & lib.FLUX_POLLIN),
                bool(self.answers.open),
                (len(self.running), len(self._queue)),
            )
            if wait is not None:
                self._sched_pending = True  # the base class's events do not re-arm it meanwhile
                self._arm_pass(wait)
                return
        began, cpu = time.monotonic(), time.thread_time()
        if callable(base):
            base()
        else:
            self.schedule()
        self.settle.ran(time.monotonic() - began, time.thread_time() - cpu)

    def _commits_answered(self) -> None:
        """The module's last open commit is answered: a settling pass need not wait longer."""
        if self.settle.settling():
            self._arm_pass(0.0)

    def _arm_pass(self, after: float) -> None:
        """The pass timer to fire ``after`` seconds from now, whether or not it is armed: libflux's
        timer reset sets an armed timer's time without re-arming it (libev), so a settling pass
        was not woken by its commits' answers before its bound; stopped first, it is (seen with
        benchmarks/bench_flux_nodes.py --lag, docs/research.md, r30tput5)."""
        stop = getattr(self._sched_timer, "stop", None)
        if callable(stop):
            stop()
        self._sched_timer.reset(after=after)

    def stats_get(self):
        stats = super().stats_get()
        stats.update(self.settle.stats())
        stats["t_estimate_annotations"] = self.estimates_sent
        return stats

    def _periodic_pass(self) -> None:
        """Skips expire and kill deadlines pass with no Flux event: a pass every cycle_interval,
        also with an empty queue while jobs run (the base class asks for one only with jobs queued)."""
        if self._queue:
            self._request_schedule()
        elif self.running or self.planner.awaiting_completions:
            self.schedule()

    def _owner(self) -> int | None:
        return self.backend._owner()

    # -- the module's view ----------------------------------------------------------------
    def _limit(self, duration: float) -> float:
        expiration = float(self.resources.expiration or 0.0)
        left = expiration - time.time() if expiration > 0 else None
        return time_limit(float(duration), self.options.default_limit, left)

    def _queue_properties(self) -> dict[str, list[str]]:
        """Flux queues (rush's partitions) and the node properties each requires, from the
        instance's configuration ([queues.NAME] requires = [...]); {} without queues."""
        try:
            return queue_requirements(self.handle.rpc("config.get").get() or {})
        except OSError:
            return {}

    def read_fairshares(self) -> None:
        """Each queued job's fair-share factor from mf_priority.so's associations (one RPC);
        a job's entry is replaced only when its factor changed (the snapshot builder keeps
        its cached entry otherwise). RJMSError: the pass fails, naming the job."""
        if not self.pending:
            return
        try:
            answer = self.handle.rpc("job-manager.jobtap-query", {"name": MF_PRIORITY}).get()
        except OSError as exc:
            raise RJMSError(
                f"cannot query {MF_PRIORITY}: {exc.strerror or exc}",
                where=f"flux jobtap query {MF_PRIORITY}",
                fix=FAIRSHARE_FIX,
            ) from exc
        table = association_fairshares(answer if isinstance(answer, dict) else {})
        for job_id, job in list(self.pending.items()):
            factor = association_fairshare(job_id, self._userids.get(job_id, -1), job.account, table)
            if job.fairshare != factor:
                self.pending[job_id] = replace(job, fairshare=factor)

    def cluster_state(self, partitions=()) -> ClusterState:
        now = time.time()
        pool = self.resources
        view = pool_nodes(pool, self._queues)  # read from the pool's own table
        if view is not None:
            nodes, total, busy = view.nodes, view.total_cores, view.busy_cores
            self._names = view.names
            self._rank_of = {name: rank for rank, name in view.names.items()}
        else:  # a pool of another kind: its R sets
            everything = pool.to_resource_set().to_dict()
            allocated = pool.copy_allocated().to_dict()
            down = pool.copy_down().to_dict()
            total = count_cores(everything)
            busy = count_cores(allocated) + count_cores(down)
            nodes = nodes_from_r(everything, allocated, down, queues=self._queues)
            self._node_names(everything)
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
            nodes=nodes,
        )

    def _node_names(self, everything: dict | None = None) -> dict[int, str]:
        """Node names by rank as :func:`rush.rjms.flux.resource_set.nodes_from_r` gives them (kept both ways)."""
        if everything is None:
            everything = self.resources.to_resource_set().to_dict()
        self._names = r_hosts(everything, list(r_ranks(everything)))
        self._rank_of = {name: rank for rank, name in self._names.items()}
        return self._names

    def _running_job(self, queued: RJMSJob, start: float, limit: float, r: dict, alloc=None) -> RJMSJob:  # noqa: ANN001
        """A job as it runs: its cores and nodes as Flux allocated them (an exclusive
        one-slot job holds the whole node), read from the allocation's rank table when
        it has one, else from its R."""
        read = None if alloc is None else allocation_of(alloc, self._names)
        nodes, cores = read if read is not None else (allocation_from_r(r, self._names), count_cores(r))
        return replace(
            queued,
            state="RUNNING",
            start=start,
            requested_time=limit,
            procs=max(cores, 1),
            allocation=nodes,
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
        try:
            request_shape = self._request_shape(jobspec)
        except (ValueError, TypeError, AttributeError) as exc:
            request_shape = None  # Flux parsed it: read as its cores anywhere
            why = f"job {jobid}: rush cannot read its resource request ({exc}); scheduled as {rr.ncores} cores anywhere"
            self.planner.journal.event(None, "request", why[:500])
        if request_shape is not None and not self._queues:
            request_shape = replace(request_shape, partition="")  # no queues: every node
        bank = system.get("bank", "")
        self._userids[int(jobid)] = int(userid)
        self.pending[jobid] = RJMSJob(
            job_id=int(jobid),
            state="PENDING",
            submit=trusted_submit_time(tags, float(t_submit), int(userid), self._owner()),
            procs=int(rr.ncores),
            requested_time=self._limit(float(rr.duration)),
            user=user_name(int(userid), self._users),
            account=str(bank)[:256] if isinstance(bank, str) else "",  # flux-accounting's bank
            partition=str(system.get("queue", ""))[:256] if self._queues else "",
            name=str(job.get("name", ""))[:256] if isinstance(job, dict) else "",
            tags=tags,
            site_factor=int(priority),
            priority=float(priority),
            request=request_shape,
        )
        heapq.heappush(self._queue, PendingJob(jobid, priority, t_submit, request, rr))

    def _request_shape(self, jobspec: dict) -> CoreRequest:
        """:func:`request_from_jobspec`, remembered per resources and queue (a queue of
        thousands of jobs has a handful of shapes; walking each jobspec's graph costs more
        than the rest of a job's arrival)."""
        system = jobspec.get("attributes", {}).get("system", {}) if isinstance(jobspec, dict) else {}
        queue = system.get("queue", "") if isinstance(system, dict) else ""
        try:
            key = json.dumps([jobspec.get("resources"), queue], sort_keys=True)
        except (TypeError, ValueError, AttributeError):
            return request_from_jobspec(jobspec)
        shape = self._shapes.get(key)
        if shape is None:
            shape = request_from_jobspec(jobspec)
            if len(self._shapes) >= SHAPES_REMEMBERED:
                self._shapes.clear()
            self._shapes[key] = shape
        return shape

    def hello(self, jobid, priority, userid, t_submit, R):
        """A job running when the module (re)loads: registered, with its tags from its jobspec."""
        super().hello(jobid, priority, userid, t_submit, R)
        r = R.to_dict()
        execution = r.get("execution", {})
        if isinstance(execution.get("R_lite"), list):
            self._allocated[jobid] = execution["R_lite"]
        start = float(execution.get("starttime") or t_submit)
        expiration = float(execution.get("expiration") or 0.0)
        try:
            answer = self.handle.rpc("job-info.lookup", {"id": jobid, "keys": ["jobspec"], "flags": 0}).get()
            tags = jobspec_tags(answer.get("jobspec", {}))
            request = request_from_jobspec(answer.get("jobspec", {}))
        except (OSError, ValueError, TypeError, AttributeError):
            tags, request = {}, None
        self.running[jobid] = RJMSJob(
            job_id=int(jobid),
            state="RUNNING",
            submit=trusted_submit_time(tags, float(t_submit), int(userid), self._owner()),
            procs=max(count_cores(r), 1),
            requested_time=expiration - start if expiration > start else math.inf,
            start=start,
            user=user_name(int(userid), self._users),
            tags=tags,
            priority=float(priority),
            request=request,
            allocation=allocation_from_r(r, self._names or self._node_names()),
        )

    def _handle_free(self, msg):
        """A job's resources back. flux-core's handler parses every freed R into a resource
        pool (a third of the module's time per job at 1 000 nodes) for the pool to check it
        against the job's allocation; a final free whose R_lite is the one this module
        allocated frees the job's tracked allocation instead (the pool's own path for an R it
        does not need: same effect, and the check is the equality). Anything else (a partial
        free, an R that differs, a job this module does not know) takes flux-core's path."""
        try:
            p = msg.payload
            jobid = p["id"]
            r_lite = (p.get("R") or {}).get("execution", {}).get("R_lite")
            if not (p.get("final", False) and r_lite is not None and self._allocated.get(jobid) == r_lite):
                return super()._handle_free(msg)
            self.free(jobid, None, final=True)
            self._request_schedule()
        except Exception as exc:  # as flux-core's handler: a broken free stops the module
            self.log.error(f"free callback raised: {exc}")
            self.stop_error()

    def free(self, jobid, R, final=False):
        super().free(jobid, R, final)
        if final:
            self._allocated.pop(jobid, None)
            if self.running.pop(jobid, None) is not None:
                self.ended[jobid] = time.time()

    def cancel(self, jobid):
        super().cancel(jobid)
        self.pending.pop(jobid, None)
        self._userids.pop(jobid, None)
        self._estimates.pop(jobid, None)
        self._disagreed.discard(jobid)

    def expiration(self, msg, jobid, expiration):
        """A running job's time limit changed (flux update): the core sees its new estimate."""
        self.resources.update_expiration(jobid, expiration)
        job = self.running.get(jobid)
        if job is not None and job.start is not None:
            self.running[jobid] = replace(job, requested_time=max(float(expiration) - job.start, 0.0))
        self.handle.respond(msg, None)

    def prioritize(self, jobs):
        """Flux priorities changed (``flux job urgency``, a priority plugin): the queue is
        re-sorted by the base class and each job's RJMSJob carries its new priority
        (``priority``, which the core orders by first under ``policy.rjms_priority = "first"``,
        the default, and ``site_factor``); a pass follows (the base class asks for one)."""
        super().prioritize(jobs)
        for jobid, priority in jobs:
            job = self.pending.get(jobid)
            if job is not None and job.priority != float(priority):
                self.pending[jobid] = replace(job, site_factor=int(priority), priority=float(priority))

    def schedule(self):
        """One pass: the planner decides, this module allocates its starts in its order.

        A start the pool refuses means the core's view of the machine was wrong: it is
        journaled as failed and logged as an error, and no later start of the pass is made
        (they were planned around it: a backfill past a refused head could take its nodes).
        The next pass decides again on a fresh read."""
        if not self._queue and not self.running and not self.planner.awaiting_completions:
            self.ended.clear()
            return
        self.answers.answer_done()  # the last passes' commits done by now (the others: continuation)
        report = self.planner.run_cycle()
        self.ended.clear()  # read by that pass (or of jobs it never saw run)
        if not report.ok or self.planner.last is None or self.planner.last[0] != report.cycle:
            return  # journaled by the planner; nothing is started on a failed pass
        cycle, built, decisions = self.planner.last
        self.answers.begin()
        try:
            done, records, left = self._allocate_starts(decisions)
        finally:
            self.answers.commit()
        if left:  # decided again at once, after the messages that came meanwhile
            self.planner.journal.event(
                cycle,
                "start_batch",
                f"{left} start(s) of this pass left for the next pass: at most {self.options.start_batch} "
                "are allocated before the module answers the messages that came meanwhile",
            )
            self._next_batch.reset()
        try:  # while the KVS commits: the module's own bookkeeping
            if done:
                self._queue = [job for job in self._queue if job.jobid not in done]
                heapq.heapify(self._queue)
                for job_id in done:
                    self.pending.pop(job_id, None)
                    self._userids.pop(job_id, None)
                    self._estimates.pop(job_id, None)
            self._publish_estimates(decisions)
            journal = self.planner.journal
            with journal.transaction():
                for d, status, answer in records:
                    row = DecisionRow(
                        cycle, d.job_id, d.action, d.reason, d.value, built.outputs.get(d.job_id), "apply"
                    )
                    journal.record(row, status, answer)
        finally:
            self.answers.end_of_pass()

    def _allocate_starts(self, decisions: Decisions) -> tuple[set[int], list[tuple[Decision, str, str]], int]:
        """Allocate the core's starts in its order, the first ``start_batch`` of them: the jobs
        done (started or denied), the journal's (decision, status, answer) for each, and how
        many starts were left for the next pass. A prefix of the pass's starts on the pass's
        own nodes: every job started is one the whole pass starts, and the room the others
        leave is decided again by the next pass (rush.core.pass_budget's rule for a cut-off)."""
        queued = {job.jobid: job for job in self._queue}
        reserved = [d.job_id for d in decisions.decisions if d.action == "reserve"]
        head = JobID(reserved[0]).f58 if reserved else None  # what each backfill went around
        done: set[int] = set()
        records = []
        refused: int | None = None
        attempted = left = 0
        for d in decisions.decisions:
            job = queued.get(d.job_id)
            if job is None:
                continue
            if d.action == "infeasible":
                if self._deny_infeasible(job, d.reason):
                    done.add(d.job_id)
                continue
            if d.action not in ("start", "backfill"):
                continue
            if attempted >= self.options.start_batch:
                left += 1
                continue
            attempted += 1
            if refused is not None:
                why = f"not attempted: the pool refused job {refused} earlier in this pass; decided again next pass"
                records.append((d, "failed", why))
                continue
            status, answer = self._allocate(job, d, head if d.action == "backfill" else None)
            if status == "refused":
                refused, status = d.job_id, "failed"
                self.log.error(f"rush: job {d.job_id}: {answer}")
            elif status == "done" or answer.startswith("denied"):
                done.add(d.job_id)
            records.append((d, status, answer))
        return done, records, left

    def alloc_success(self, msg, R, annotations=None):
        """Within a pass the pass's answers commit and answer it (alloc_answers.py); outside
        one, the base class commits and answers it alone."""
        jobid, self._answering = self._answering, None
        if jobid is None or not self.answers.collect(jobid, msg, R, annotations):
            super().alloc_success(msg, R, annotations)

    def _deny_infeasible(self, job, reason: str) -> bool:
        """Deny a job the core finds infeasible here, with the core's reason (naming the fix),
        when Flux's pool agrees. When the pool could run it, the core's reading of its request
        is the approximation (docs/reference/resources.md, Flux: several GPU slots read one
        node each): it is not denied, it stays queued, and the disagreement is logged once."""
        try:
            self.resources.check_feasibility(job.resource_request)
        except InfeasibleRequest:
            job.request.deny(f"rush: {reason}"[:500])
            self.planner.journal.event(None, "denied", f"job {job.jobid}: {reason}"[:500])
            return True
        if job.jobid not in self._disagreed:
            self._disagreed.add(job.jobid)
            why = f"job {job.jobid}: the core finds it infeasible ({reason}) but Flux's pool does not; left queued"
            self.log.error(f"rush: {why}"[:500])
            self.planner.journal.event(None, "infeasible", why[:500])
        return False

    def _publish_estimates(self, decisions: Decisions) -> None:
        """``sched.t_estimate`` on every queued job: the core's estimated start
        (:mod:`rush.core.start_estimates`), as sched-backfill annotates its head job, but for
        the whole queue. Cleared when a job has no start in sight any more; otherwise sent
        only when it moved by more than ``estimate_moved`` (flux jobs shows it to the
        second, but a projection shifting by a few seconds is not news), and at most
        ``MAX_ANNOTATIONS_PER_PASS`` per pass, highest priority first, so a pass over 10 000
        jobs does not send 10 000 events to the job-manager every time.

        A job the pass decided to start that is still queued (left for the next pass by the
        start batch, or not attempted after a refusal) gets none: the next pass follows at
        once, and its estimate, "now", would cost the job-manager an annotation event to set
        and another to clear for a job that starts within the second (sched-backfill
        annotates none of its starts either)."""
        estimated, basis = decisions.estimated_start, decisions.estimate_basis
        rank = {job_id: k for k, job_id in enumerate(decisions.order)}
        sent = 0
        for job in sorted(self._queue, key=lambda q: rank.get(q.jobid, len(rank))):
            if basis.get(job.jobid) == BASIS_NOW:
                continue
            old = self._estimates.get(job.jobid)
            new = estimated.get(job.jobid, math.inf)
            if not math.isfinite(new):
                if old is not None:
                    del self._estimates[job.jobid]
                    job.request.annotate({"sched": {"t_estimate": None}})
                continue
            if sent >= MAX_ANNOTATIONS_PER_PASS:
                continue
            if old is None or abs(new - old) > estimate_moved(old, decisions.now):
                self._estimates[job.jobid] = new
                job.request.annotate({"sched": {"t_estimate": new}})
                sent += 1
        self.estimates_sent += sent

    def _placed_request(self, rr, decision: Decision):
        """The job's request confined to the core's nodes (:func:`confined_request`), so the
        pool allocates on exactly those nodes; ``rr`` unchanged when the decision names no
        nodes (a snapshot without nodes)."""
        if not decision.nodes:
            return rr
        missing = [name for name in decision.nodes if name not in self._rank_of]
        if missing:
            raise KeyError(f"the core placed it on nodes the pool does not have: {missing[:5]}")
        return confined_request(rr, [self._rank_of[name] for name in decision.nodes])

    def _allocate(self, job, decision: Decision, head: str | None) -> tuple[str, str]:
        """Allocate one of the core's starts on its nodes: (journal status, answer); status
        ``refused`` when the pool cannot (a bug: the core's view was not the pool's)."""
        rr = job.resource_request
        try:
            placed = self._placed_request(rr, decision)
            alloc = self.resources.alloc(job.jobid, placed)
        except InsufficientResources as exc:
            where = f" on {','.join(decision.nodes)}" if decision.nodes else ""
            return (
                "refused",
                f"REFUSED by the pool{where}: {exc or 'insufficient resources'} (the core's view was not the pool's)",
            )
        except KeyError as exc:
            return "refused", f"REFUSED: {exc}"
        except InfeasibleRequest as exc:
            try:  # infeasible on the core's nodes only, or for the job itself?
                self.resources.check_feasibility(rr)
            except InfeasibleRequest:
                job.request.deny(str(exc) or "unsatisfiable request")
                return "failed", f"denied: {exc}"
            return (
                "refused",
                f"REFUSED on {','.join(decision.nodes)}: {exc} (the core's view was not the pool's)",
            )
        now = time.time()
        alloc.set_starttime(now)
        limit = self._limit(float(rr.duration))
        if math.isfinite(limit):
            alloc.set_expiration(now + limit)
        queued = self.pending.get(job.jobid)
        summary = alloc.dumps()
        annotations = {"resource_summary": summary, "rush": decision.reason[:200]}
        if head is not None:  # sched-backfill's annotation: the job it backfilled around
            annotations["backfill"] = head
        r = alloc.to_dict()
        self._answering = job.jobid  # its id, without decoding its message again
        job.request.success(r, {"sched": annotations})
        self._allocated[job.jobid] = r["execution"]["R_lite"]
        if queued is not None:
            self.running[job.jobid] = self._running_job(queued, now, limit, r, alloc)
        return "done", f"allocated {summary}"


def mod_main(h, *args):
    RushScheduler(h, *args).run()
