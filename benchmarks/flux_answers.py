"""Flux's answers to the Flux backend's read (:meth:`rush.rjms.flux.FluxBackend.read_state`),
written from a node-level snapshot in the shapes flux-core 0.88 gives them (recorded from a
``flux start --test-size=2`` instance with sched-simple, 2026-11-30; round 28, r31flux):

* ``job-list.list`` (``attrs: ["all"]``, pending and running): pending jobs first, by priority
  (higher first) then submit, state 8 (SCHED) with ``t_depend``/``t_priority``/``t_sched``,
  ``nnodes`` for a node-level request and ``annotations.sched.t_estimate`` on the first
  jobs; then running jobs (state 16, latest ``t_run`` first) with ``ranks``, ``nodelist``,
  ``expiration`` and ``annotations.sched.resource_summary``;
* ``sched.resource-status``: R version 1 ``all`` (ranks grouped by their children,
  ``nodelist`` as one hostlist, ``properties.gpu``), ``allocated`` (each busy rank's cores and
  GPUs) and an empty ``down``;
* ``job-info.lookup``: ``{"id": .., "jobspec": "<JSON text>"}`` and ``{"id": .., "R": "<JSON
  text>"}``, the text inside the answer as job-info gives it;
* ``module.list`` (sched-simple provides ``sched``), ``config.get`` (queues ``batch``, every
  node, and ``gpu``, requiring property ``gpu``), ``resource.status`` (nothing drained).

:class:`ReplayHandle` answers the backend's ``handle.rpc(topic, payload).get()`` from these
texts, decoding each JSON text at ``get()`` as flux's ``RPC.get`` does, so a read pays the
decode a live read pays. A processor-count job (no partition in the snapshot) is in queue
``batch`` (an instance with queues gives a job without one its default queue).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from rush.core import PendingJob, RunningJob, Snapshot
from rush.core.resources import Request

STATE_SCHED = 8
STATE_RUN = 16
ESTIMATED = 50  # pending jobs with sched-simple's t_estimate annotation (the first by priority)
OWNER = 0  # the instance owner's userid (security.owner)


def idset(ids: list[int]) -> str:
    """An RFC 22 idset: ranges of consecutive ids (``0-3,7``)."""
    out, ids = [], sorted(ids)
    k = 0
    while k < len(ids):
        end = k
        while end + 1 < len(ids) and ids[end + 1] == ids[end] + 1:
            end += 1
        out.append(str(ids[k]) if end == k else f"{ids[k]}-{ids[end]}")
        k = end + 1
    return ",".join(out)


def queue_of(request: Request | None) -> str:
    return (request.partition if request is not None else "") or "batch"


def jobspec_text(request: Request | None, procs: int, duration: float) -> str:
    """The jobspec job-info gives for a job of ``request`` (``flux submit -N n -c c
    [--exclusive] [-g g]``), or ``procs`` one-core slots (``-n procs``) for a processor count."""
    if request is None or request.nodes == 0:
        resources = [
            {"type": "slot", "count": procs, "with": [{"type": "core", "count": 1}], "label": "task"}
        ]
    else:
        inner = [{"type": "core", "count": request.cores_per_node}]
        if request.gpus_per_node:
            inner.append({"type": "gpu", "count": request.gpus_per_node})
        slot = {"type": "slot", "count": 1, "with": inner, "label": "task"}
        node: dict[str, Any] = {"type": "node", "count": request.nodes, "with": [slot]}
        if request.exclusive:
            node["exclusive"] = True
        resources = [node]
    spec = {
        "resources": resources,
        "tasks": [{"command": ["sleep", "300"], "slot": "task", "count": {"per_slot": 1}}],
        "attributes": {"system": {"duration": duration, "queue": queue_of(request)}},
        "version": 1,
    }
    return json.dumps(spec, separators=(",", ":"))


class Cores:
    """Which core ids each running job holds on each node, kept from cycle to cycle (a job's R
    does not change while it runs); new starts take the lowest free ids."""

    def __init__(self) -> None:
        self.held: dict[int, list[tuple[int, list[int], list[int]]]] = {}  # job -> (rank, cores, gpus)
        self.used: dict[int, set[int]] = defaultdict(set)
        self.used_gpus: dict[int, set[int]] = defaultdict(set)

    def update(self, running: tuple[RunningJob, ...]) -> None:
        live = {r.job_id for r in running}
        for job_id in [j for j in self.held if j not in live]:
            for rank, cores, gpus in self.held.pop(job_id):
                self.used[rank].difference_update(cores)
                self.used_gpus[rank].difference_update(gpus)
        for r in sorted(running, key=lambda r: r.job_id):
            if r.job_id in self.held:
                continue
            mine = []
            for s in r.allocation:
                cores = [c for c in range(4096) if c not in self.used[s.node]][: s.cores]
                gpus = [g for g in range(64) if g not in self.used_gpus[s.node]][: s.gpus]
                self.used[s.node].update(cores)
                self.used_gpus[s.node].update(gpus)
                mine.append((s.node, cores, gpus))
            self.held[r.job_id] = mine


def r_text(where: list[tuple[int, list[int], list[int]]], names: list[str], start: float, end: float) -> str:
    """A running job's R (job-info's ``R`` key) as text."""
    lite = []
    for rank, cores, gpus in where:
        children = {"core": idset(cores)}
        if gpus:
            children["gpu"] = idset(gpus)
        lite.append({"rank": str(rank), "children": children})
    r = {
        "version": 1,
        "execution": {
            "R_lite": lite,
            "starttime": start,
            "expiration": end,
            "nslots": len(where),
            "nodelist": [",".join(names[rank] for rank, _, _ in where)],
        },
    }
    return json.dumps(r)


def resource_status(snapshot: Snapshot, cores: Cores) -> str:
    """``sched.resource-status``: all, allocated and down, R version 1."""
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for rank, node in enumerate(snapshot.nodes):
        groups[(node.cores, node.gpus)].append(rank)
    lite = []
    for (ncores, ngpus), ranks in sorted(groups.items()):
        children = {"core": idset(list(range(ncores)))}
        if ngpus:
            children["gpu"] = idset(list(range(ngpus)))
        lite.append({"rank": idset(ranks), "children": children})
    width = len(snapshot.nodes[0].name) - 1
    everything = {
        "version": 1,
        "execution": {
            "R_lite": lite,
            "starttime": 0.0,
            "expiration": 0.0,
            "nodelist": [f"n[{0:0{width}d}-{len(snapshot.nodes) - 1:0{width}d}]"],
            "properties": {"gpu": idset([i for i, n in enumerate(snapshot.nodes) if n.gpus])},
        },
    }
    busy = []
    for rank in sorted(r for r, used in cores.used.items() if used):
        children = {"core": idset(sorted(cores.used[rank]))}
        if cores.used_gpus[rank]:
            children["gpu"] = idset(sorted(cores.used_gpus[rank]))
        busy.append({"rank": str(rank), "children": children})
    allocated = {"version": 1, "execution": {"R_lite": busy, "starttime": 0.0, "expiration": 0.0}}
    down = {"version": 1, "execution": {"R_lite": [], "starttime": 0.0, "expiration": 0.0}}
    return json.dumps({"all": everything, "allocated": allocated, "down": down})


def pending_record(p: PendingJob, urgency: int, priority: int, estimate: float | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": p.job_id,
        "userid": p.user,
        "urgency": urgency,
        "priority": priority,
        "t_submit": p.submit,
        "t_depend": p.submit + 0.011,
        "t_priority": p.submit + 0.022,
        "t_sched": p.submit + 0.023,
        "state": STATE_SCHED,
        "name": f"job{p.job_id}",
        "queue": queue_of(p.request),
        "ntasks": p.request.nodes if p.request is not None and p.request.nodes else p.procs,
        "ncores": p.procs,
        "duration": p.requested_time,
    }
    if p.request is not None and p.request.nodes:
        record["nnodes"] = p.request.nodes
    if estimate is not None:
        record["annotations"] = {"sched": {"t_estimate": estimate}}
    return record


def running_record(
    r: RunningJob, where: list[tuple[int, list[int], list[int]]], names: list[str], priority: int
) -> dict[str, Any]:
    ranks = [rank for rank, _, _ in where]
    summary = ",".join(f"rank{rank}/core[{idset(cores)}]" for rank, cores, _ in where)
    return {
        "id": r.job_id,
        "userid": OWNER,
        "urgency": 16,
        "priority": priority,
        "t_submit": r.start - 60.0,
        "t_depend": r.start - 59.9,
        "t_priority": r.start - 59.8,
        "t_sched": r.start - 59.8,
        "t_run": r.start,
        "state": STATE_RUN,
        "name": f"job{r.job_id}",
        "queue": queue_of(r.request),
        "ntasks": len(ranks),
        "ncores": r.procs,
        "duration": r.requested_time,
        "nnodes": len(ranks),
        "ranks": idset(ranks),
        "nodelist": ",".join(names[rank] for rank in ranks),
        "expiration": r.start + r.requested_time,
        "annotations": {"sched": {"resource_summary": summary}},
    }


class FluxAnswers:
    """One instance's answers, cycle by cycle: :meth:`update` writes a cycle's from its
    snapshot (and the urgencies and priorities of its jobs); :meth:`texts` gives them."""

    def __init__(self) -> None:
        self.cores = Cores()
        # Every cycle's job-info answers (one per job: neither changes), so any cycle replays.
        self.specs: dict[int, str] = {}  # job id -> job-info's jobspec answer (text)
        self.rs: dict[int, str] = {}  # running job id -> job-info's R answer (text)

    def update(
        self, snapshot: Snapshot, urgency: dict[int, int], priority: dict[int, int], stamp: float
    ) -> dict[str, str]:
        """The cycle's texts by topic (``job-info.lookup`` answers are kept by job id)."""
        names = [node.name for node in snapshot.nodes]
        self.cores.update(snapshot.running)
        for job in (*snapshot.pending, *snapshot.running):
            if job.job_id not in self.specs:
                text = jobspec_text(job.request, job.procs, job.requested_time)
                self.specs[job.job_id] = json.dumps({"id": job.job_id, "jobspec": text})
        for r in snapshot.running:
            if r.job_id not in self.rs:
                where = self.cores.held[r.job_id]
                text = r_text(where, names, r.start, r.start + r.requested_time)
                self.rs[r.job_id] = json.dumps({"id": r.job_id, "R": text})

        def prio(job_id: int) -> int:
            return priority.get(job_id, urgency.get(job_id, 16))

        pending = sorted(snapshot.pending, key=lambda p: (-prio(p.job_id), p.submit, p.job_id))
        records = [
            pending_record(
                p, urgency.get(p.job_id, 16), prio(p.job_id), stamp + 60.0 * k if k < ESTIMATED else None
            )
            for k, p in enumerate(pending)
        ]
        running = sorted(snapshot.running, key=lambda r: (-r.start, r.job_id))
        records += [running_record(r, self.cores.held[r.job_id], names, prio(r.job_id)) for r in running]
        mods = [
            {"name": "sched-simple", "services": ["sched"]},
            {"name": "job-list", "services": ["job-list"]},
            {"name": "job-info", "services": ["job-info"]},
        ]
        return {
            "job-list.list": json.dumps({"jobs": records}),
            "sched.resource-status": resource_status(snapshot, self.cores),
            "module.list": json.dumps({"mods": mods}),
            "config.get": json.dumps({"queues": {"batch": {}, "gpu": {"requires": ["gpu"]}}}),
            "resource.status": json.dumps({"drain": {}, "online": idset(list(range(len(names))))}),
        }


class Future:
    def __init__(self, text: str) -> None:
        self.text = text

    def get(self) -> Any:
        return json.loads(self.text)  # as flux.rpc.RPC.get: the answer's JSON decoded here


class ReplayHandle:
    """A Flux handle answering from one cycle's texts (:meth:`FluxAnswers.update`) and the
    job-info answers kept by job id; any other topic: ENOSYS, as a broker without it."""

    def __init__(self, answers: FluxAnswers) -> None:
        self.answers = answers
        self.texts: dict[str, str] = {}

    def attr_get(self, name: str) -> str:
        if name == "security.owner":
            return str(OWNER)
        raise OSError(2, "No such file or directory")

    def rpc(self, topic: str, payload: dict[str, Any]) -> Future:
        if topic == "job-info.lookup":
            kept = self.answers.rs if payload["keys"] == ["R"] else self.answers.specs
            if payload["id"] in kept:
                return Future(kept[payload["id"]])
            raise OSError(2, "No such file or directory")
        if topic in self.texts:
            return Future(self.texts[topic])
        raise OSError(38, "Function not implemented")
