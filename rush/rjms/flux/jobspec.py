"""RFC 25 jobspecs (version 1): rush's tags in them, the core's request read from them, the
jobspec rush submits, and trusted submit times."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rush.core.resources import Request
from rush.rjms.flux.idset import MAX_IDS

MAX_RESOURCE_DEPTH = 100  # as flux-core's own parser (Rv1Pool.py)


def jobspec_tags(jobspec: Any) -> dict[str, str]:
    """rush's per-job inputs: the jobspec attributes under ``system.rush`` (``flux submit
    --setattr=rush.K=V``), as strings, at most 64 keys of 64 and values of 256 characters."""
    attributes = jobspec.get("attributes", {}) if isinstance(jobspec, dict) else {}
    system = attributes.get("system", {}) if isinstance(attributes, dict) else {}
    rush = system.get("rush", {}) if isinstance(system, dict) else {}
    if not isinstance(rush, dict):
        return {}
    return {str(k)[:64]: str(v)[:256] for k, v in list(rush.items())[:64]}


def trusted_submit_time(tags: dict[str, str], t_submit: float, userid: int, owner: int | None) -> float:
    """The submit time rush orders a job by: Flux's, or the original one of a job rush
    resubmitted (:func:`submit_time`), trusted only on a job the instance owner submitted with
    rush's requeue tags: a user's ``--setattr=rush.submit=0`` changes nothing."""
    if "submit" not in tags or "requeued_from" not in tags or owner is None or int(userid) != owner:
        return t_submit
    return submit_time(tags, t_submit)


def submit_time(tags: dict[str, str], t_submit: float) -> float:
    """A job rush resubmitted (a false-small kill) keeps its original submit time for ordering:
    its ``submit`` tag when it is a number no later than the job's own submit, else ``t_submit``."""
    try:
        original = float(tags.get("submit", ""))
    except ValueError:
        return t_submit
    return original if math.isfinite(original) and 0 < original <= t_submit else t_submit


def _count(vertex: dict[str, Any]) -> int:
    """A jobspec vertex's count: an integer or the minimum of an RFC 14 range."""
    count = vertex.get("count", 1)
    if isinstance(count, dict):
        count = count.get("min", 1)
    if isinstance(count, str):
        count = int(count.split("-")[0].split(",")[0].split(":")[0])
    if isinstance(count, bool) or not isinstance(count, int) or not 0 < count <= MAX_IDS:
        raise ValueError(f"resource count {vertex.get('count')!r}: give an integer 1..{MAX_IDS}")
    return count


def request_from_jobspec(
    jobspec: Any,
    fluxion: bool = False,
    sizes: Sequence[tuple[int, int]] = (),
    queue_sizes: Mapping[str, Sequence[tuple[int, int]]] | None = None,
) -> Request:
    """A Flux jobspec's resources as the core's :class:`Request` (docs/reference/resources.md,
    section Flux). Walks the resource graph as flux-core's ``ResourceRequest.from_jobspec``:

    * a node level (``-N``): ``nodes`` = its count, per node its slots x (cores, GPUs);
      ``exclusive`` from the node (or slot) vertex;
    * slots only, exclusive: one whole node per slot;
    * slots only of one core and no GPU (``-n``): that many cores anywhere (exact);
    * one slot (``-n1 -c4``, ``-n1 -g1``): one node with its cores and GPUs (exact);
    * several slots of more cores, no GPU (``-n4 -c2``): their cores anywhere (the core may
      split a slot over two nodes; the module then lets Flux place the slots on those nodes);
    * several slots with GPUs (``-n2 -g1``): one node per slot (Flux may also pack two slots
      on one node; every placement of the core's is one Flux accepts);
    * levels between node and slot that Fluxion accepts (``socket``): their counts multiply the
      slots per node.

    ``fluxion``: read as Fluxion (flux-sched) matches, where it differs from flux-core's pool
    (checked live, ``tests/flux/test_jobspecs_fluxion.py``):

    * nodes inside a slot (``slot[s] > node[n] > core[c]``): s x n whole nodes (Fluxion lists
      only c cores of each in the job's R, but starts nothing else on them; flux-core's pool:
      s x c cores on each of s x n nodes, not whole);
    * whole nodes inside a slot, nothing below them (``slot[s] > node[n]``): s x n whole nodes
      (flux-core's pool cannot read it: no slot size);
    * an ``exclusive`` slot without a node level: the slot's cores, not a whole node per slot
      (a slot is exclusive in Fluxion anyway);
    * more slots with GPUs and no node level than nodes that can hold one (``sizes``: the
      instance's nodes' (cores, GPUs)): Fluxion packs several on a node (``slot[3] > (core[1],
      gpu[1])`` on two nodes of 2 GPUs: two slots on one, one on the other), so those nodes,
      each with room for the slots shared out evenly (rounded up); one node per slot reads more
      nodes than there are, which the core leaves out as never fitting. ``queue_sizes``: the
      sizes of each queue's nodes (a Flux queue's ``requires``): a job of a listed queue is
      read with its queue's nodes only, as Fluxion matches it (on a multi-queue instance the
      instance's nodes may hold a slot where the queue's cannot, or the reverse).

    The queue (``attributes.system.queue``) is the partition. ValueError on a malformed one.
    """
    if not isinstance(jobspec, dict) or not isinstance(jobspec.get("resources"), list):
        raise ValueError("jobspec has no resources list")
    found = {"nodes": 0, "slots": 0, "cores": 0, "gpus": 0, "exclusive": False, "factor": 1}
    in_slot = {"node": False}  # Fluxion: a node level inside a slot (its counts are per node)

    def walk(vertices: list[Any], factor: int, depth: int) -> None:
        if depth > MAX_RESOURCE_DEPTH:
            raise ValueError(f"resources nested deeper than {MAX_RESOURCE_DEPTH}")
        for vertex in vertices:
            if not isinstance(vertex, dict):
                raise ValueError("a resource vertex is not an object")
            kind, count = vertex.get("type"), _count(vertex)
            children = vertex.get("with", [])
            if not isinstance(children, list):
                raise ValueError("'with' is not a list")
            if kind == "node":
                found["nodes"], found["factor"] = count * factor, factor
                found["exclusive"] = found["exclusive"] or bool(vertex.get("exclusive"))
                if fluxion and found["slots"]:  # Fluxion takes each node inside a slot whole
                    in_slot["node"], found["slots"], found["exclusive"] = True, 1, True
                walk(children, factor, depth + 1)
                continue
            if kind == "slot":
                # Levels between the node and the slot (Fluxion's sockets) multiply the slots.
                found["slots"] = count * (factor // int(found["factor"]))
                found["exclusive"] = found["exclusive"] or (bool(vertex.get("exclusive")) and not fluxion)
            elif kind in ("core", "gpu"):
                # Inside a slot's node: per node, times the levels between the node and here.
                found[kind + "s"] = count * (factor // int(found["factor"]) if in_slot["node"] else 1)
            walk(children, factor * count, depth + 1)

    walk(jobspec["resources"], 1, 0)
    slots, cores, gpus = int(found["slots"]), int(found["cores"]), int(found["gpus"])
    if in_slot["node"] and cores <= 0:
        cores = 1  # whole nodes (exclusive): the core counts each node whole
    if slots <= 0 or cores <= 0:
        raise ValueError("jobspec has no slot with cores")
    system = (
        jobspec.get("attributes", {}).get("system", {}) if isinstance(jobspec.get("attributes"), dict) else {}
    )
    queue = system.get("queue", "") if isinstance(system, dict) else ""
    partition = str(queue)[:256] if isinstance(queue, str) else ""
    nodes, exclusive = int(found["nodes"]), bool(found["exclusive"])
    if nodes:
        return Request(nodes, slots * cores, slots * gpus, exclusive, partition)
    if exclusive:
        return Request(slots, cores, gpus, True, partition)
    if slots == 1 or gpus:
        if queue_sizes is not None and partition in queue_sizes:
            sizes = queue_sizes[partition]
        hosts = sum(1 for c, g in sizes if c >= cores and g >= gpus)
        if fluxion and gpus and 0 < hosts < slots:  # Fluxion packs the slots on fewer nodes
            per_node = math.ceil(slots / hosts)
            return Request(hosts, per_node * cores, per_node * gpus, False, partition)
        return Request(slots, cores, gpus, False, partition)
    return Request(0, slots * cores, 0, False, partition)


def comment_tags(comment: str) -> dict[str, str]:
    """rush's tags in a submit comment, as Slurm's job_submit plugin reads them:
    ``rush:app=halo,wtype=network`` (``,`` or ``;`` between items) -> {"app": "halo", "wtype":
    "network"}; a bare key is "1"; another tool's comment gives none."""
    if not comment.startswith("rush:"):
        return {}
    tags = {}
    for item in re.split("[,;]", comment[5:]):
        key, _, value = item.partition("=")
        if key.strip():
            tags[key.strip()[:64]] = value.strip()[:256] or "1"
    return tags


# The shell runs a batch job's command once, on the allocation's first node, as sbatch runs
# its script: one task per node (the shell's per-resource option), and only task 0 runs it.
BATCH_GUARD = 'if [ "${FLUX_TASK_RANK:-0}" = 0 ]; then exec "$@"; fi'


@dataclass(frozen=True)
class JobSubmission:
    """What rush submits to Flux (replay jobs, probes, campaign runs)."""

    name: str
    procs: int
    time_limit: float
    command: Sequence[str]
    comment: str = ""
    begin: float | None = None
    queue: str = ""
    cwd: str | None = None
    nodes: int | None = None  # spread over this many nodes (brokers); None: cores anywhere


def build_jobspec(job: JobSubmission, batch: bool = False) -> dict[str, Any]:
    """An RFC 25 (jobspec v1) request: ``procs`` tasks of one core each; with ``nodes``, on that
    many nodes, ``ceil(procs / nodes)`` one-core slots on each (``flux submit -N nodes``).

    ``batch``: ``procs`` cores held, the command run once (on the first node, as a Slurm batch
    script; it launches its own ranks, e.g. with mpirun), its output discarded. ``comment``'s
    rush tags (:func:`comment_tags`) become the job's ``system.rush`` attributes, beside
    ``comment`` itself."""
    name, procs, time_limit, command = job.name, job.procs, job.time_limit, job.command
    comment, begin, queue, cwd = job.comment, job.begin, job.queue, job.cwd
    system: dict[str, Any] = {
        "duration": float(time_limit),
        "cwd": cwd or os.getcwd(),
        "environment": dict(os.environ),
        "job": {"name": name},
    }
    if comment:
        system["rush"] = {**comment_tags(comment), "comment": comment}
    if queue:
        system["queue"] = queue
    if begin is not None:
        system["dependencies"] = [{"scheme": "begin-time", "value": float(begin)}]
    task: dict[str, Any] = {"command": list(command), "slot": "task", "count": {"per_slot": 1}}
    if batch:
        task["command"] = ["sh", "-c", BATCH_GUARD, "rush-batch", *command]
        system["shell"] = {
            "options": {
                "per-resource": {"type": "node", "count": 1},
                "output": {"stdout": {"type": "file", "path": "/dev/null"}},
                # The other nodes' tasks exit at once: without this the shell's exit-timeout
                # (30 s) would kill a multi-node batch job 30 s after its start.
                "exit-timeout": "none",
            }
        }
    resources: list[dict[str, Any]] = [
        {"type": "slot", "count": int(procs), "label": "task", "with": [{"type": "core", "count": 1}]}
    ]
    if job.nodes is not None:
        if not 0 < job.nodes <= procs:
            raise ValueError(f"{job.nodes} nodes for {procs} processes: give 1..{procs} nodes")
        resources[0]["count"] = math.ceil(procs / job.nodes)
        resources = [{"type": "node", "count": int(job.nodes), "with": resources}]
    return {
        "version": 1,
        "resources": resources,
        "tasks": [task],
        "attributes": {"system": system},
    }
