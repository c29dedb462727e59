"""Flux backend: read the queue and act through Flux's own RPCs (flux-core >= 0.49).

The ``flux`` Python bindings come with flux-core (not from PyPI); they are imported
lazily, so rush works without them and says what is missing when this backend is asked
for. Reads and actions are plain RPCs on a Flux handle (``handle.rpc(topic, payload).get()``):

* queue: ``job-list.list`` with ``attrs: ["all"]`` and a state constraint (pending, running);
* resources: ``sched.resource-status`` (R version 1: ``all``, ``allocated``, ``down``);
* rush tags: the jobspec attribute ``system.rush`` (``flux submit --setattr=rush.idempotent=1``),
  read once per job with ``job-info.lookup``;
* priority, two levers (option ``priority_lever``):

  - ``plugin``: rush's jobtap priority plugin (``plugins/flux/rush-priority.c``) takes
    rush's values themselves in batches (``job-manager.rush-priority.set``) and makes them
    the jobs' Flux priorities: no compression;
  - ``urgency``: ``job-manager.urgency``. Flux's urgency has 32 levels (0 hold, 16 default,
    31 expedite), so rush's value is compressed monotonically into 1..30 (a higher rush
    priority never gets a lower urgency; equal urgencies keep Flux's submit order);
  - ``auto`` (the default): ``plugin`` when the plugin's service answers, else ``urgency``;
    decided at the first priority update;

  ``read_state`` reports each job's real Flux priority as ``site_factor`` (what is applied);
  With the plugin's ``combine = "add"`` (rush beside flux-accounting's ``mf_priority.so``)
  the Flux priority is the site plugin's plus rush's value, so ``site_factor`` is that sum;
* fair-share (option ``fairshare``, set by ``site.fairshare = "rjms"``): each pending job's
  flux-accounting fair-share factor, from the ``fairshare`` memo ``mf_priority.so`` posts on
  the job at every priority computation (job-list's ``annotations.user.fairshare``, already
  in the queue listing: no extra RPC), into ``RJMSJob.fairshare``; the bank is
  ``RJMSJob.account``. The rush scheduler module reads the same factors by association from
  ``flux jobtap query mf_priority.so`` (:func:`association_fairshares`);
* hold/release: urgency 0, then back to the urgency the job had (both levers);
* cancel: ``job-manager.raise`` with type ``cancel``; submit: ``flux.job.submit`` of an
  RFC 25 jobspec built here, run as a batch job (:func:`build_jobspec`: the command once on
  the first node, holding every core; the comment's ``rush:k=v,...`` tags as ``system.rush``),
  as the campaign runner, the probe and replay expect of ``submit``.

Flux has no requeue of a running job. A false-small kill is carried out as a cancel
(``job-manager.raise``, note :data:`KILL_NOTE`) followed by the submission of the job's
original jobspec (unwrapped from its signed ``J``, so with its environment) as a new job
whose ``system.rush`` attributes say ``class=large``, ``requeues=N``, ``submit`` (the
original submit time, which rush orders it by), ``requeued_from`` (the cancelled id) and
``requeue_chain`` (every earlier id, oldest first). The daemon journals the intent first and
confirms the replacement on a later cycle (:meth:`FluxBackend.confirm_replacement`): it is
found by its ``requeued_from`` tag, or resubmitted when the old job was cancelled by rush and
no replacement exists; never twice.

Who owns the replacement: job-ingest (flux-core 0.88, ``src/modules/job-ingest/job.c``)
makes the submitting connection's userid the job's userid and requires the signature's
userid to match it; ``sign-type=none`` is accepted only from the instance owner. So the
replacement belongs to whoever runs rush: in a single-user instance (``flux alloc``,
``flux batch``, a test instance) that is the user, as it should be. In a multi-user system
instance rush runs as the instance owner (``flux``) and the replacement would run as
``flux``, not as the user; re-signing as the user needs the user's own munge credential
(the IMP checks it at launch), which the owner cannot produce. There, leave
``policy.kill_false_small`` off (or ``daemon.max_requeues_per_job = 0``) until the user
resubmits through a wrapper of their own. The ``submit``/``requeued_from`` tags are trusted
only on jobs the instance owner submitted, so a user cannot move their job to the front by
setting ``--setattr=rush.submit=0``.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rush.core.resources import Request
from rush.errors import BackendUnavailableError, ConfigError, RJMSError
from rush.rjms.base import (
    ActionResult,
    BackendOption,
    Capabilities,
    ClusterState,
    RJMSBackend,
    RJMSJob,
    check_submit,
    check_time_limit,
    register_backend,
)
from rush.rjms.flux.accounting import memo_fairshare
from rush.rjms.flux.idset import idset_ids
from rush.rjms.flux.job_states import (
    STATE_INACTIVE,
    STATE_PENDING,
    STATE_RUNNING,
    URGENCY_DEFAULT,
    URGENCY_HOLD,
)
from rush.rjms.flux.jobspec import (
    JobSubmission,
    build_jobspec,
    jobspec_tags,
    request_from_jobspec,
    trusted_submit_time,
)
from rush.rjms.flux.resource_set import (
    allocation_from_r,
    count_cores,
    nodes_from_r,
    queue_requirements,
    r_hosts,
    r_ranks,
)

log = logging.getLogger("rush.rjms.flux")
# The note of rush's cancel exception: tells its false-small kills from other cancels.
KILL_NOTE = "rush: false-small kill, resubmitted as large"
# Replacement search: jobs listed at most (a bound on the work of one reconcile).
REPLACEMENT_SEARCH_MAX = 1000
# Flux priorities are uint32; 0 and the maximum mean held and expedited, never a rush value.
PRIORITY_MAX = 2**32 - 1
# rush's jobtap priority plugin (plugins/flux/rush-priority.c): its RPC service and batch limit.
PLUGIN_SERVICE = "job-manager.rush-priority"
PLUGIN_MAX_BATCH = 4096
PRIORITY_LEVERS = ("auto", "plugin", "urgency")
# flux_job_result_t (job-list's ``result``) by name, as accounting records give a job's end.
RESULTS = {1: "COMPLETED", 2: "FAILED", 4: "CANCELED", 8: "TIMEOUT"}


def import_flux() -> Any:
    try:
        import flux  # type: ignore[import-not-found]
        import flux.job  # type: ignore[import-not-found]  # noqa: F401
    except ImportError as exc:
        raise BackendUnavailableError(
            "the flux backend needs Flux's Python bindings, which are not installed",
            where="rjms backend 'flux'",
            fix="install flux-core with its Python bindings (distribution package, spack or conda-forge; "
            "not the unrelated PyPI project 'flux-core') and run rush inside the Flux instance",
        ) from exc
    return flux


def urgency_for(site_factor: int) -> int:
    """rush's priority value (rush.core.priority_values, larger first) -> Flux urgency 1..30.

    Monotone and linear over the value range, so the three bands (large, small/all, starved)
    map to disjoint urgency ranges. Thirty levels cannot hold rush's full order: a jobtap
    priority plugin that takes the value itself is the planned replacement.
    """
    from rush.core.priority_values import MAX_VALUE

    value = min(max(int(site_factor), 1), MAX_VALUE)
    return 1 + (value - 1) * 30 // MAX_VALUE


def result_name(result: Any) -> str:
    """job-list's ``result`` (flux_job_result_t) as its name; another value as given."""
    try:
        return RESULTS.get(int(result), str(result))
    except (TypeError, ValueError):
        return str(result if result is not None else "")


@register_backend("flux")
class FluxBackend(RJMSBackend):
    """Options: ``uri`` (a Flux URI; default: FLUX_URI of the environment), ``max_entries``,
    ``priority_lever`` (``auto``, ``plugin`` or ``urgency``; see the module's docstring),
    ``fairshare`` (read flux-accounting's fair-share factor of each pending job; set by
    ``site.fairshare = "rjms"``).

    ``handle`` (tests and embedding only, not a configuration option): an already open Flux handle.
    """

    # Flux durations are seconds; Flux has no requeue, so rush's requeue cancels and resubmits
    # (the daemon confirms a replacement job, a new id).
    capabilities = Capabilities(
        requeue_replaces_job=True, time_limit_granularity=1.0, submits_node_counts=True
    )
    options = (
        BackendOption("uri", str, "a Flux URI (default: FLUX_URI of the environment)"),
        BackendOption("max_entries", int, "the most jobs read per queue listing"),
        BackendOption("priority_lever", str, "auto, plugin or urgency"),
        BackendOption("fairshare", bool, "read pending jobs' flux-accounting fair-share (site.fairshare)"),
    )

    def __init__(
        self,
        uri: str = "",
        max_entries: int = 10000,
        priority_lever: str = "auto",
        handle: Any = None,
        fairshare: bool = False,
    ) -> None:
        if priority_lever not in PRIORITY_LEVERS:
            raise ConfigError(
                f"unknown priority lever {priority_lever!r}",
                where="rjms.options.priority_lever",
                fix="use auto (the jobtap plugin when it answers, else urgency), plugin or urgency",
            )
        if handle is None:
            import_flux()  # say at once, not at the first read, that the bindings are missing
        self.uri = uri
        self.max_entries = int(max_entries)
        self.priority_lever = priority_lever
        self.fairshare = bool(fairshare)
        self._handle = handle
        self._tags: dict[int, tuple[dict[str, str], float | None]] = {}
        self._requests: dict[int, Request | None] = {}
        # The nodes' (cores, GPUs) the requests were read on: all, and each queue's.
        self._sizes: tuple[tuple[int, int], ...] = ()
        self._queue_sizes: dict[str, tuple[tuple[int, int], ...]] = {}
        self._unread: dict[int, str] = {}  # why rush cannot read a job's request, per job
        # The module that provides ``sched`` (None: unknown): jobspecs are read as it reads them.
        self._scheduler: str | None = None
        self._allocations: dict[int, tuple[tuple[str, int, int], ...]] = {}
        self._held_urgency: dict[int, int] = {}
        self._ended_allocations: dict[int, dict[str, Any]] = {}
        self._lever: str | None = "urgency" if priority_lever == "urgency" else None
        self._plugin_batch = PLUGIN_MAX_BATCH
        # The smallest value the plugin takes: 1, or 0 with combine = "add" (nothing added).
        self._plugin_min = 1

    @property
    def handle(self) -> Any:
        if self._handle is None:
            flux = import_flux()
            try:
                self._handle = flux.Flux(self.uri) if self.uri else flux.Flux()
            except OSError as exc:
                raise RJMSError(
                    f"cannot connect to Flux ({exc.strerror or exc})",
                    where=self.uri or os.environ.get("FLUX_URI", "FLUX_URI unset"),
                    fix="run rush inside the Flux instance or set rjms.options.uri",
                ) from exc
        return self._handle

    def _rpc(self, topic: str, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = self.handle.rpc(topic, payload).get()
        except OSError as exc:
            raise RJMSError(
                f"Flux RPC failed: {exc.strerror or exc}",
                where=topic,
                fix="is the Flux broker up (flux ping)?",
            ) from exc
        if isinstance(answer, str | bytes):
            answer = json.loads(answer) if answer else {}
        if answer is None:
            return {}
        if not isinstance(answer, dict):
            raise RJMSError("Flux answered with something that is not a JSON object", where=topic)
        return answer

    # -- reading --------------------------------------------------------------------------
    def read_state(self, partitions: Sequence[str] = ()) -> ClusterState:
        taken_at = time.time()
        listing = self._rpc(
            "job-list.list",
            {
                "max_entries": self.max_entries,
                "attrs": ["all"],
                "constraint": {"states": [STATE_PENDING | STATE_RUNNING]},
            },
        )
        status = self._rpc("sched.resource-status", {})
        scheduler = self._sched_module()
        if scheduler != self._scheduler:  # another scheduler reads the jobspecs its own way
            self._scheduler = scheduler
            self._tags.clear()
            self._requests.clear()
            self._unread.clear()
        try:
            total = count_cores(status.get("all"))
            free = total - count_cores(status.get("allocated")) - count_cores(status.get("down"))
            nodes = nodes_from_r(
                status.get("all"),
                status.get("allocated"),
                status.get("down"),
                self._drained(),
                queues=self._queues(),
            )
            sizes = tuple(sorted((n.cores, n.gpus) for n in nodes))
            queue_sizes = {
                q: tuple(sorted((n.cores, n.gpus) for n in nodes if q in n.partitions))
                for q in sorted({q for n in nodes for q in n.partitions})
            }
            # Fluxion's packing of slots reads the sizes of the nodes of the job's queue.
            if sizes != self._sizes or queue_sizes != self._queue_sizes:
                self._sizes, self._queue_sizes = sizes, queue_sizes
                self._tags.clear()
                self._requests.clear()
                self._unread.clear()
            jobs = [self._job(j) for j in listing["jobs"]]
            names = r_hosts(status.get("all"), list(r_ranks(status.get("all"))))
            jobs = [self._with_allocation(j, names) for j in jobs]
        except (KeyError, TypeError, ValueError) as exc:
            raise RJMSError(
                f"unexpected Flux answer ({exc!r})",
                where="job-list.list / sched.resource-status",
                fix="rush supports flux-core 0.49 and later",
            ) from exc
        if partitions:  # Flux queues play the part of Slurm partitions
            jobs = [j for j in jobs if j.partition in partitions]
        live = {j.job_id for j in jobs}
        self._tags = {k: v for k, v in self._tags.items() if k in live}
        self._requests = {k: v for k, v in self._requests.items() if k in live}
        self._unread = {k: v for k, v in self._unread.items() if k in live}
        self._allocations = {k: v for k, v in self._allocations.items() if k in live}
        return ClusterState(
            taken_at=taken_at,
            total_procs=total,
            free_procs=max(free, 0),
            jobs=tuple(jobs),
            partitions=tuple(sorted({j.partition for j in jobs if j.partition})),
            nodes=nodes,
        )

    def _sched_module(self) -> str | None:
        """The name of the module that provides the ``sched`` service (``module.list``), or
        None when the broker does not say (then jobspecs are read as flux-core's pool does)."""
        try:
            mods = self._rpc("module.list", {}).get("mods", [])
            return next((str(m["name"]) for m in mods if "sched" in m.get("services", [])), None)
        except (RJMSError, KeyError, TypeError, AttributeError):
            return None

    def _queues(self) -> dict[str, list[str]]:
        """Flux queues (rush's partitions) and the node properties each requires
        (``config.get``); {} without queues or when the broker does not say: every node then
        serves every job."""
        try:
            return queue_requirements(self._rpc("config.get", {}))
        except RJMSError:
            return {}

    def _drained(self) -> list[int]:
        """Drained ranks (``resource.status``'s ``drain``: idset -> reason); [] if unreadable:
        they then read ``down``, which offers nothing to new jobs either."""
        try:
            drain = self._rpc("resource.status", {}).get("drain", {})
            return [r for idset in (drain or {}) for r in idset_ids(str(idset))]
        except (RJMSError, ValueError, TypeError, AttributeError):
            return []

    def _with_allocation(self, job: RJMSJob, names: dict[int, str]) -> RJMSJob:
        """A running job with its allocation from its R (read once per job)."""
        if job.state != "RUNNING":
            return job
        if job.job_id not in self._allocations:
            answer = self._rpc("job-info.lookup", {"id": job.job_id, "keys": ["R"], "flags": 0})
            r = answer.get("R", {})
            r = json.loads(r) if isinstance(r, str) else r
            self._allocations[job.job_id] = allocation_from_r(r, names)
        return replace(job, allocation=self._allocations[job.job_id])

    def _jobspec_info(self, job_id: int) -> tuple[dict[str, str], float | None]:
        """rush tags and requested duration from the job's jobspec (cached per job)."""
        if job_id not in self._tags:
            answer = self._rpc("job-info.lookup", {"id": job_id, "keys": ["jobspec"], "flags": 0})
            spec = answer.get("jobspec", {})
            spec = json.loads(spec) if isinstance(spec, str) else spec
            system = spec.get("attributes", {}).get("system", {})
            tags = jobspec_tags(spec)
            duration = system.get("duration")
            self._tags[job_id] = (tags, float(duration) if duration else None)
            try:
                # As the instance's scheduler will match it: Fluxion reads some shapes (nodes
                # inside a slot, exclusive slots) otherwise than flux-core's pool.
                fluxion = (self._scheduler or "").startswith("sched-fluxion")
                self._requests[job_id] = request_from_jobspec(
                    spec, fluxion=fluxion, sizes=self._sizes, queue_sizes=self._queue_sizes
                )
            except (ValueError, TypeError, AttributeError) as exc:
                # Flux accepted it (its scheduler takes more than rush's request model reads):
                # the core reads its cores anywhere; the daemon journals it once per job.
                self._requests[job_id] = None
                self._unread[job_id] = str(exc)[:500] or type(exc).__name__
                log.warning(
                    "job %d: rush cannot read its resource request (%s); read as its cores anywhere",
                    job_id,
                    exc,
                )
        return self._tags[job_id]

    def _job(self, j: dict[str, Any]) -> RJMSJob:
        job_id = int(j["id"])
        state_bits = int(j["state"])
        state = (
            "PENDING"
            if state_bits & STATE_PENDING
            else "RUNNING"
            if state_bits & STATE_RUNNING
            else "INACTIVE"
        )
        tags, duration = self._jobspec_info(job_id)
        fairshare = memo_fairshare(j) if self.fairshare and state == "PENDING" else None
        duration = float(j.get("duration") or duration or 0)  # 0: no limit requested
        urgency = int(j.get("urgency", URGENCY_DEFAULT))
        # The priority Flux schedules by: the plugin's value, or the urgency without the plugin
        # (job-list leaves it out until the job has one: then the urgency stands in).
        priority = int(j.get("priority", urgency))
        return RJMSJob(
            job_id=job_id,
            state=state,
            submit=self._submit_time(tags, j),
            procs=int(j.get("ncores") or j.get("ntasks") or 1),
            requested_time=duration if duration > 0 else float("inf"),
            start=float(j["t_run"]) if state == "RUNNING" and "t_run" in j else None,
            user=str(j.get("userid", "")),
            account=str(j.get("bank", ""))[:256],  # flux-accounting's bank (empty without it)
            partition=str(j.get("queue", "")),
            name=str(j.get("name", "")),
            tags=tags,
            held=state == "PENDING" and urgency == URGENCY_HOLD,
            reason="held (urgency 0)" if urgency == URGENCY_HOLD else "",
            site_factor=priority,
            priority=float(priority),
            fairshare=fairshare,
            request=self._requests.get(job_id),
            request_note=self._unread.get(job_id, ""),
        )

    def ended_unstarted(self, job_id: int) -> str | None:
        """The exception that ended a job before any ``alloc`` (its eventlog, one
        ``job-info.lookup``): e.g. Fluxion's ``alloc denied due to type="unsatisfiable"``.
        None when it was allocated (it ran, however briefly), or when its eventlog is
        unreadable (logged)."""
        _check_id(job_id)
        try:
            answer = self._rpc("job-info.lookup", {"id": job_id, "keys": ["eventlog"], "flags": 0})
            events = [
                json.loads(line) for line in str(answer.get("eventlog", "")).splitlines() if line.strip()
            ]
            names = [str(e.get("name", "")) for e in events]
            exceptions = [e.get("context", {}) for e in events if e.get("name") == "exception"]
        except (RJMSError, ValueError, TypeError, AttributeError) as exc:
            log.warning("job %d: its eventlog cannot be read (%s)", job_id, exc)
            return None
        if "alloc" in names or "start" in names or not exceptions:
            return None
        first = exceptions[0] if isinstance(exceptions[0], dict) else {}
        return (
            f"exception type={first.get('type', '?')} severity={first.get('severity', '?')}: "
            f"{str(first.get('note', ''))[:500]}"
        )

    # -- acting ---------------------------------------------------------------------------
    def _urgency(self, job_id: int, urgency: int) -> tuple[ActionResult, int | None]:
        _check_id(job_id)
        try:
            answer = self._rpc("job-manager.urgency", {"id": job_id, "urgency": urgency})
        except RJMSError as exc:
            return ActionResult(ok=False, answer=str(exc)), None
        old = answer.get("old_urgency")
        return ActionResult(ok=True, answer=f"urgency {old} -> {urgency}"), old

    # -- priorities: the rush-priority jobtap plugin, or urgency ------------------------------
    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        return self.set_priorities([(job_id, site_factor)])[0]

    def set_priorities(self, pairs: Sequence[tuple[int, int]]) -> list[ActionResult]:
        """Set many jobs' priorities; one result per pair, in order.

        With the plugin, one RPC per ``max_batch`` jobs; with urgency, one RPC per job. A
        value given while rush holds the job is kept and applies on release (the plugin
        stores it; with urgency, the backend does).
        """
        checked = []
        for job_id, site_factor in pairs:
            _check_id(job_id)
            if isinstance(site_factor, bool) or not isinstance(site_factor, int):
                raise RJMSError(f"invalid priority {site_factor!r}", where="set_priority", fix="an integer")
            checked.append((job_id, site_factor))
        if not checked:
            return []
        if self.lever() == "plugin":
            return self._plugin_set(checked)
        return [self._urgency_set(job_id, value) for job_id, value in checked]

    def lever(self) -> str:
        """The priority lever in use: ``plugin`` or ``urgency`` (``auto`` asks the plugin once)."""
        if self._lever is None:
            present = self._probe_plugin()
            self._lever = "plugin" if present or self.priority_lever == "plugin" else "urgency"
        return self._lever

    def _probe_plugin(self) -> bool:
        """True when the plugin's service answers; learns its batch limit."""
        try:
            answer = self.handle.rpc(f"{PLUGIN_SERVICE}.get", {"ids": []}).get()
        except OSError as exc:
            if exc.errno == errno.ENOSYS:
                return False
            raise RJMSError(
                f"Flux RPC failed: {exc.strerror or exc}", where=f"{PLUGIN_SERVICE}.get", fix="flux ping"
            ) from exc
        batch = answer.get("max_batch") if isinstance(answer, dict) else None
        if isinstance(batch, int) and not isinstance(batch, bool) and batch > 0:
            self._plugin_batch = min(batch, PLUGIN_MAX_BATCH)
        if isinstance(answer, dict) and answer.get("combine") == "add":
            self._plugin_min = 0  # rush's term added to the site's priority may be nothing
        return True

    def _plugin_set(self, pairs: list[tuple[int, int]]) -> list[ActionResult]:
        results: list[ActionResult] = []
        for start in range(0, len(pairs), self._plugin_batch):
            chunk = pairs[start : start + self._plugin_batch]
            # rush values are 1 .. 3*2^29; 0 and PRIORITY_MAX are Flux's hold and expedite.
            low = self._plugin_min
            payload = [[job_id, min(max(value, low), PRIORITY_MAX - 1)] for job_id, value in chunk]
            try:
                answer = self.handle.rpc(f"{PLUGIN_SERVICE}.set", {"priorities": payload}).get()
            except OSError as exc:
                if exc.errno != errno.ENOSYS:
                    raise RJMSError(
                        f"Flux RPC failed: {exc.strerror or exc}",
                        where=f"{PLUGIN_SERVICE}.set",
                        fix="is the Flux broker up (flux ping)?",
                    ) from exc
                self._lever = None  # ask again next time: the plugin may be loaded by then
                missing = (
                    "the rush-priority jobtap plugin is not loaded (no job-manager.rush-priority service); "
                    "load it (flux jobtap load /path/rush-priority.so, or [job-manager] plugins in the "
                    "instance's configuration) or set rjms.options.priority_lever = 'urgency'"
                )
                return results + [ActionResult(ok=False, answer=missing)] * (len(pairs) - len(results))
            ignored = set(answer.get("ignored", [])) if isinstance(answer, dict) else set()
            for job_id, value in payload:
                if job_id in ignored:
                    results.append(ActionResult(ok=False, answer="unknown job or no longer pending"))
                else:
                    results.append(ActionResult(ok=True, answer=f"priority {value} (rush-priority)"))
        return results

    def plugin_priorities(self, job_ids: Sequence[int]) -> dict[int, int | None]:
        """The values the plugin holds for these jobs (None: none, the plugin's default applies)."""
        out: dict[int, int | None] = {}
        ids = list(job_ids)
        for start in range(0, len(ids), self._plugin_batch):
            answer = self._rpc(f"{PLUGIN_SERVICE}.get", {"ids": ids[start : start + self._plugin_batch]})
            out.update({int(job_id): value for job_id, value in answer.get("priorities", [])})
        return out

    def _urgency_set(self, job_id: int, site_factor: int) -> ActionResult:
        urgency = urgency_for(site_factor)
        if job_id in self._held_urgency:  # held by rush: applied on release, not now
            self._held_urgency[job_id] = urgency
            return ActionResult(ok=True, answer=f"held; urgency {urgency} applies on release")
        return self._urgency(job_id, urgency)[0]

    # -- holds, requeues, cancels, submissions ---------------------------------------------

    def hold(self, job_id: int) -> ActionResult:
        result, old = self._urgency(job_id, URGENCY_HOLD)
        if result.ok:
            self._held_urgency[job_id] = URGENCY_DEFAULT if old in (None, URGENCY_HOLD) else int(old)
        return result

    def release(self, job_id: int) -> ActionResult:
        urgency = self._held_urgency.get(job_id, URGENCY_DEFAULT)
        result = self._urgency(job_id, urgency)[0]
        if result.ok:
            self._held_urgency.pop(job_id, None)
        return result

    def cancel(self, job_id: int) -> ActionResult:
        _check_id(job_id)
        try:
            self._rpc("job-manager.raise", {"id": job_id, "severity": 0, "type": "cancel", "note": "rush"})
        except RJMSError as exc:
            return ActionResult(ok=False, answer=str(exc))
        return ActionResult(ok=True, answer="cancel raised")

    def submit(
        self,
        *,
        name: str,
        procs: int,
        time_limit: float,
        command: Sequence[str],
        comment: str = "",
        begin: float | None = None,
        partition: str = "",
        nodes: int | None = None,
    ) -> int:
        """A batch job (its command run once, on its first node) of ``procs`` cores; with
        ``nodes``, spread over that many nodes (brokers), as ``flux batch -N nodes -n procs``."""
        check_submit(procs, time_limit, command, begin)
        if nodes is not None and (
            isinstance(nodes, bool) or not isinstance(nodes, int) or not 0 < nodes <= procs
        ):
            raise RJMSError(
                f"invalid node count {nodes!r}", where="submit", fix=f"an integer 1..{procs} (procs)"
            )
        submission = JobSubmission(
            name, procs, time_limit, command, comment=comment, begin=begin, queue=partition, nodes=nodes
        )
        jobspec = build_jobspec(submission, batch=True)
        flux = import_flux()  # signing the request needs the real bindings
        try:
            return int(flux.job.submit(self.handle, json.dumps(jobspec), urgency=URGENCY_DEFAULT))
        except OSError as exc:
            raise RJMSError(f"flux submit failed: {exc.strerror or exc}", where="job-ingest.submit") from exc

    # -- replay: finished jobs -------------------------------------------------------------
    def accounting(self, job_ids: Sequence[int]) -> list[dict]:
        """Finished-job records from job-list (kept while the instance keeps inactive jobs):
        submit (``t_submit``), start (``t_run``), end (``t_cleanup``: the tasks ended),
        released (``t_inactive``), state (the result by name: COMPLETED, FAILED, CANCELED, TIMEOUT)
        and, for a job that ran, its allocation from its R: ``ranks`` (broker ranks) and ``nodes``
        (their host names, in rank order)."""
        records = []
        for job_id in job_ids:
            _check_id(job_id)
            try:
                j = self._job_record(int(job_id))
            except RJMSError:
                continue  # unknown (purged) or never ingested: no record, as sacct would say
            if not int(j.get("state", 0)) & STATE_INACTIVE:
                continue
            end = j.get("t_cleanup") or j.get("t_inactive")
            records.append(
                {
                    "job_id": int(job_id),
                    "submit": float(j["t_submit"]),
                    "start": float(j["t_run"]) if "t_run" in j else None,
                    "end": float(end) if end is not None and "t_run" in j else None,
                    # Resources back with the scheduler: at the latest when the job is inactive.
                    "released": float(j["t_inactive"]) if "t_inactive" in j and "t_run" in j else None,
                    "state": result_name(j.get("result")),
                    **(self._allocated(int(job_id)) if "t_run" in j else {}),
                }
            )
        return records

    def _allocated(self, job_id: int) -> dict[str, Any]:
        """A finished job's broker ranks and node names from its R (empty when it has none);
        read once per job (an inactive job's R does not change)."""
        if job_id in self._ended_allocations:
            return self._ended_allocations[job_id]
        found = self._read_allocation(job_id)
        if found:  # an unreadable R is asked again next time
            if len(self._ended_allocations) >= self.max_entries:
                self._ended_allocations.clear()  # bounded: a long campaign asks about new jobs
            self._ended_allocations[job_id] = found
        return found

    def _read_allocation(self, job_id: int) -> dict[str, Any]:
        try:
            r = self._rpc("job-info.lookup", {"id": job_id, "keys": ["R"], "flags": 0}).get("R") or {}
            r = json.loads(r) if isinstance(r, str) else r
            ranks = sorted(r_ranks(r))
            names = r_hosts(r, ranks)
        except (RJMSError, ValueError, TypeError, AttributeError, KeyError):
            log.warning("job %d: its R cannot be read; its nodes are not named", job_id)
            return {}
        return {"ranks": ranks, "nodes": [names[rank] for rank in ranks]} if ranks else {}

    # -- false-small kills: cancel, then resubmit as large (Flux has no requeue) -------------
    def _owner(self) -> int | None:
        """The instance owner's userid (rush's resubmissions carry it); None if unknown."""
        if not hasattr(self, "_owner_id"):
            try:
                self._owner_id: int | None = int(self.handle.attr_get("security.owner"))
            except (AttributeError, OSError, ValueError):
                self._owner_id = None
        return self._owner_id

    def _submit_time(self, tags: dict[str, str], j: dict[str, Any]) -> float:
        """Flux's submit time, or the original one of a job rush resubmitted (``rush.submit``).

        Trusted only on a job the instance owner submitted (rush's resubmissions), never later
        than the job's own submit: a user's ``--setattr=rush.submit=0`` changes nothing.
        """
        return trusted_submit_time(tags, float(j["t_submit"]), int(j.get("userid", -1)), self._owner())

    def _job_record(self, job_id: int) -> dict[str, Any]:
        """``job-list.list-id``: one job, live or inactive, with every attribute."""
        answer = self._rpc("job-list.list-id", {"id": job_id, "attrs": ["all"]})
        job = answer.get("job")
        if not isinstance(job, dict):
            raise RJMSError("job-list.list-id answered without a job", where=f"job {job_id}")
        return job

    def _original_jobspec(self, job_id: int) -> dict[str, Any]:
        """The jobspec as submitted, environment included (job-ingest drops it from ``jobspec``)."""
        from flux.job import job_kvs_lookup  # type: ignore[import-not-found]

        try:
            data = job_kvs_lookup(self.handle, job_id, keys=["jobspec"], original=True)
        except OSError as exc:
            raise RJMSError(f"cannot read its jobspec: {exc.strerror or exc}", where=f"job {job_id}") from exc
        spec = data.get("jobspec") if isinstance(data, dict) else None
        if not isinstance(spec, dict):
            raise RJMSError("its jobspec is not a JSON object", where=f"job {job_id}")
        return spec

    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        """Cancel the running job, then submit its jobspec again as large (see the module doc).

        ok: both done (the answer names the replacement). Not attempted: nothing reached
        Flux (the job could not be read, or already ended). Otherwise unclear: the daemon's
        next cycle confirms or completes it (:meth:`confirm_replacement`).
        """
        _check_id(job_id)
        try:
            old = self._job_record(job_id)
            spec = self._original_jobspec(job_id)
        except RJMSError as exc:
            return ActionResult(ok=False, answer=f"not cancelled: {exc}", attempted=False)
        if int(old.get("state", 0)) & STATE_INACTIVE:
            return ActionResult(ok=False, answer="not cancelled: the job already ended", attempted=False)
        try:
            self._rpc("job-manager.raise", {"id": job_id, "severity": 0, "type": "cancel", "note": KILL_NOTE})
        except RJMSError as exc:
            return ActionResult(ok=False, answer=f"cancel: {exc}")
        return self._resubmit(job_id, old, spec, tags, "cancelled")

    def _resubmit(
        self, job_id: int, old: dict[str, Any], spec: dict[str, Any], tags: dict[str, str], done: str
    ) -> ActionResult:
        system = spec.setdefault("attributes", {}).setdefault("system", {})
        before = system.get("rush") if isinstance(system.get("rush"), dict) else {}
        old_tags = {str(k): str(v) for k, v in before.items()}
        rush = {**old_tags, **{str(k): str(v) for k, v in tags.items()}}
        rush["submit"] = repr(self._submit_time(old_tags, old))
        rush["requeued_from"] = str(job_id)
        chain = [c for c in old_tags.get("requeue_chain", "").split(",") if c.isdigit()]
        rush["requeue_chain"] = ",".join([*chain, str(job_id)])
        system["rush"] = rush
        flux = import_flux()
        try:
            new_id = int(flux.job.submit(self.handle, json.dumps(spec), urgency=URGENCY_DEFAULT))
        except OSError as exc:
            return ActionResult(ok=False, answer=f"{done}; resubmit failed: {exc.strerror or exc}")
        kind = f" as {rush['class']}" if "class" in rush else ""
        return ActionResult(ok=True, answer=f"{done}; replacement {new_id} submitted{kind}")

    # -- speculative reservations --------------------------------------------------------------
    def set_time_limit(self, job_id: int, seconds: float) -> ActionResult:
        """A pending job's duration through ``job-manager.update`` (as ``flux update ID duration=``;
        the instance owner may set any job's)."""
        _check_id(job_id)
        duration = check_time_limit(seconds, "set_time_limit")
        try:
            self._rpc(
                "job-manager.update", {"id": job_id, "updates": {"attributes.system.duration": duration}}
            )
        except RJMSError as exc:
            return ActionResult(ok=False, answer=f"duration not updated: {exc}")
        self._tags.pop(job_id, None)  # the cached jobspec duration is stale
        return ActionResult(ok=True, answer=f"duration {duration:g} s")

    def requeue_with_limit(self, job_id: int, tags: dict[str, str], seconds: float) -> ActionResult:
        """A job that ended by its time limit: its original jobspec submitted again with the new
        duration, its rush tags updated and its original submit time (Flux has no requeue).
        The replacement is found next cycle by :meth:`find_replacement`."""
        _check_id(job_id)
        duration = check_time_limit(seconds, "requeue_with_limit")
        try:
            old = self._job_record(job_id)
            spec = self._original_jobspec(job_id)
        except RJMSError as exc:
            return ActionResult(ok=False, answer=f"not resubmitted: {exc}", attempted=False)
        if not int(old.get("state", 0)) & STATE_INACTIVE or old.get("exception_type") != "timeout":
            return ActionResult(ok=False, answer="not resubmitted: the job did not end by its time limit",
                                attempted=False)  # fmt: skip
        spec.setdefault("attributes", {}).setdefault("system", {})["duration"] = duration
        return self._resubmit(job_id, old, spec, tags, f"timed out; duration {duration:g} s")

    def find_replacement(self, job_id: int, state: ClusterState | None = None) -> int | None:
        """The job rush submitted in place of ``job_id`` (its ``requeued_from`` tag), live or ended.

        Live jobs come from ``state``; ended ones from ``job-list.list``, narrowed to jobs with
        the same name submitted since the old one started (at most REPLACEMENT_SEARCH_MAX).
        """
        owner = self._owner()

        def replaces(candidate: int, userid: object = None) -> bool:
            if candidate == job_id or self._jobspec_info(candidate)[0].get("requeued_from") != str(job_id):
                return False
            if owner is None:
                return True
            if userid is None:  # a live job's user may be a name: ask Flux for the userid
                userid = self._job_record(candidate).get("userid")
            return str(userid) == str(owner)  # rush's resubmissions carry the owner's userid

        old = self._job_record(job_id)
        for j in state.jobs if state is not None else ():
            if j.tags.get("requeued_from") == str(job_id) and replaces(j.job_id):
                return j.job_id
        since = float(old.get("t_run") or old.get("t_submit") or 0.0)
        listing = self._rpc(
            "job-list.list",
            {
                "max_entries": REPLACEMENT_SEARCH_MAX,
                "attrs": ["userid", "name", "t_submit"],
                "constraint": {"and": [{"name": [str(old.get("name", ""))]}, {"t_submit": [f">={since!r}"]}]},
            },
        )
        for j in listing.get("jobs", []):
            if replaces(int(j["id"]), j.get("userid")):
                return int(j["id"])
        return None

    def confirm_replacement(self, job_id: int, tags: dict[str, str], state: ClusterState) -> tuple[str, str]:
        """Settle a kill left open: (journal status, answer); never submits a second replacement.

        ``done``: a replacement exists (or is submitted now because rush's cancel went through
        and none exists); ``failed``: the job was not cancelled by rush (the core decides
        again); ``intent``: still unclear, asked again next cycle.
        """
        replacement = self.find_replacement(job_id, state)
        if replacement is not None:
            return "done", f"replaced by job {replacement}"
        old = self._job_record(job_id)
        cancelled = old.get("exception_type") == "cancel" and old.get("exception_note") == KILL_NOTE
        if not cancelled:
            if int(old.get("state", 0)) & STATE_INACTIVE:
                return "failed", "the job ended before rush cancelled it; nothing to resubmit"
            return "failed", "not cancelled (no rush cancel on the job); the core decides again on fresh data"
        result = self._resubmit(job_id, old, self._original_jobspec(job_id), tags, "cancelled earlier")
        return ("done" if result.ok else "intent"), result.answer


def _check_id(job_id: object) -> None:
    if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id <= 0:
        raise RJMSError(
            f"invalid job id {job_id!r}", where="flux backend", fix="Flux job ids are positive integers"
        )
