"""Flux backend: read the queue and act through Flux's own RPCs (flux-core >= 0.49).

The ``flux`` Python bindings come with flux-core (not from PyPI); they are imported
lazily, so rush works without them and says what is missing when this backend is asked
for. Reads and actions are plain RPCs on a Flux handle (``handle.rpc(topic, payload).get()``):

* queue: ``job-list.list`` with ``attrs: ["all"]`` and a state constraint (pending, running);
* resources: ``sched.resource-status`` (R version 1: ``all``, ``allocated``, ``down``);
* rush tags: the jobspec attribute ``system.rush`` (``flux submit --setattr=rush.idempotent=1``),
  read once per job with ``job-info.lookup``;
* priority: ``job-manager.urgency``. Flux's urgency has 32 levels (0 hold, 16 default,
  31 expedite), so rush's rank-based priority is compressed monotonically into 1..30 (a
  higher rush priority never gets a lower urgency; equal urgencies keep Flux's submit order);
* hold/release: urgency 0, then back to the urgency the job had;
* cancel: ``job-manager.raise`` with type ``cancel``; submit: ``flux.job.submit`` of an
  RFC 25 jobspec built here.

Flux has no requeue of a running job: :meth:`FluxBackend.requeue` refuses (ok=False) and
says so, and the daemon journals the refusal. The tests use a fake handle (no Flux broker
runs here) that answers with Flux's documented payloads.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

from rush.errors import BackendUnavailableError, RJMSError
from rush.rjms.base import ActionResult, ClusterState, RJMSBackend, RJMSJob, register_backend

# flux/job.h: job states (a bit each) and the virtual "pending"/"running" masks.
STATE_DEPEND, STATE_PRIORITY, STATE_SCHED, STATE_RUN, STATE_CLEANUP, STATE_INACTIVE = 2, 4, 8, 16, 32, 64
STATE_PENDING = STATE_DEPEND | STATE_PRIORITY | STATE_SCHED
STATE_RUNNING = STATE_RUN | STATE_CLEANUP
URGENCY_HOLD, URGENCY_DEFAULT, URGENCY_EXPEDITE = 0, 16, 31


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


def count_cores(r: dict[str, Any] | None) -> int:
    """Cores in an R version 1 object: sum over R_lite of |ranks| x |cores|."""
    if not r:
        return 0
    total = 0
    for entry in r.get("execution", {}).get("R_lite", []):
        total += _idset_size(str(entry["rank"])) * _idset_size(str(entry.get("children", {}).get("core", "")))
    return total


def _idset_size(idset: str) -> int:
    """Size of an RFC 22 idset such as ``0-3,7`` (brackets allowed)."""
    size = 0
    for part in idset.strip("[]").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        size += int(high) - int(low) + 1 if high else 1
    return size


def build_jobspec(
    *,
    name: str,
    procs: int,
    time_limit: float,
    command: Sequence[str],
    comment: str = "",
    begin: float | None = None,
    queue: str = "",
    cwd: str | None = None,
) -> dict[str, Any]:
    """An RFC 25 (jobspec v1) request: ``procs`` tasks of one core each."""
    system: dict[str, Any] = {
        "duration": float(time_limit),
        "cwd": cwd or os.getcwd(),
        "environment": dict(os.environ),
        "job": {"name": name},
    }
    if comment:
        system["rush"] = {"comment": comment}
    if queue:
        system["queue"] = queue
    if begin is not None:
        system["dependencies"] = [{"scheme": "begin-time", "value": float(begin)}]
    return {
        "version": 1,
        "resources": [
            {"type": "slot", "count": int(procs), "label": "task", "with": [{"type": "core", "count": 1}]}
        ],
        "tasks": [{"command": list(command), "slot": "task", "count": {"per_slot": 1}}],
        "attributes": {"system": system},
    }


@register_backend("flux")
class FluxBackend(RJMSBackend):
    """Options: ``uri`` (a Flux URI; default: FLUX_URI of the environment), ``max_entries``.

    ``handle`` (tests and embedding only): an already open Flux handle.
    """

    def __init__(self, uri: str = "", max_entries: int = 10000, handle: Any = None) -> None:
        if handle is None:
            import_flux()  # say at once, not at the first read, that the bindings are missing
        self.uri = uri
        self.max_entries = int(max_entries)
        self._handle = handle
        self._tags: dict[int, tuple[dict[str, str], float | None]] = {}
        self._held_urgency: dict[int, int] = {}

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
        try:
            jobs = [self._job(j) for j in listing["jobs"]]
            total = count_cores(status.get("all"))
            free = total - count_cores(status.get("allocated")) - count_cores(status.get("down"))
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
        return ClusterState(
            taken_at=taken_at,
            total_procs=total,
            free_procs=max(free, 0),
            jobs=tuple(jobs),
            partitions=tuple(sorted({j.partition for j in jobs if j.partition})),
        )

    def _jobspec_info(self, job_id: int) -> tuple[dict[str, str], float | None]:
        """rush tags and requested duration from the job's jobspec (cached per job)."""
        if job_id not in self._tags:
            answer = self._rpc("job-info.lookup", {"id": job_id, "keys": ["jobspec"], "flags": 0})
            spec = answer.get("jobspec", {})
            spec = json.loads(spec) if isinstance(spec, str) else spec
            system = spec.get("attributes", {}).get("system", {})
            rush = system.get("rush", {})
            tags = {str(k): str(v) for k, v in rush.items()} if isinstance(rush, dict) else {}
            duration = system.get("duration")
            self._tags[job_id] = (tags, float(duration) if duration else None)
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
        duration = float(j.get("duration") or duration or 0)  # 0: no limit requested
        urgency = int(j.get("urgency", URGENCY_DEFAULT))
        return RJMSJob(
            job_id=job_id,
            state=state,
            submit=float(j["t_submit"]),
            procs=int(j.get("ncores") or j.get("ntasks") or 1),
            requested_time=duration if duration > 0 else float("inf"),
            start=float(j["t_run"]) if state == "RUNNING" and "t_run" in j else None,
            user=str(j.get("userid", "")),
            partition=str(j.get("queue", "")),
            name=str(j.get("name", "")),
            tags=tags,
            held=state == "PENDING" and urgency == URGENCY_HOLD,
            reason="held (urgency 0)" if urgency == URGENCY_HOLD else "",
            site_factor=urgency,
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

    def set_priority(self, job_id: int, site_factor: int) -> ActionResult:
        if isinstance(site_factor, bool) or not isinstance(site_factor, int):
            raise RJMSError(f"invalid priority {site_factor!r}", where="set_priority", fix="an integer")
        urgency = urgency_for(site_factor)
        if job_id in self._held_urgency:  # held by rush: applied on release, not now
            self._held_urgency[job_id] = urgency
            return ActionResult(ok=True, answer=f"held; urgency {urgency} applies on release")
        return self._urgency(job_id, urgency)[0]

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

    def requeue(self, job_id: int, tags: dict[str, str]) -> ActionResult:
        _check_id(job_id)
        return ActionResult(
            ok=False,
            answer="Flux cannot requeue a running job; rush leaves it running (no kill)",
            attempted=False,
        )

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
    ) -> int:
        if isinstance(procs, bool) or not isinstance(procs, int) or procs <= 0:
            raise RJMSError(f"invalid procs {procs!r}", where="submit", fix="a positive integer")
        if not 0 < float(time_limit) < float("inf") or not command:
            raise RJMSError("time_limit must be positive and command non-empty", where="submit")
        jobspec = build_jobspec(
            name=name,
            procs=procs,
            time_limit=time_limit,
            command=command,
            comment=comment,
            begin=begin,
            queue=partition,
        )
        flux = import_flux()  # signing the request needs the real bindings
        try:
            return int(flux.job.submit(self.handle, json.dumps(jobspec), urgency=URGENCY_DEFAULT))
        except OSError as exc:
            raise RJMSError(f"flux submit failed: {exc.strerror or exc}", where="job-ingest.submit") from exc


def _check_id(job_id: object) -> None:
    if isinstance(job_id, bool) or not isinstance(job_id, int) or job_id <= 0:
        raise RJMSError(
            f"invalid job id {job_id!r}", where="flux backend", fix="Flux job ids are positive integers"
        )
