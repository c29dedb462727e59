"""R version 1 (RFC 20), Flux's resource sets: the instance's nodes, a job's allocation, core counts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rush.core.resources import Node
from rush.rjms.flux.hostlist import expand_hostlist
from rush.rjms.flux.idset import idset_ids, idset_size


def count_cores(r: dict[str, Any] | None) -> int:
    """Cores in an R version 1 object: sum over R_lite of |ranks| x |cores|."""
    if not r:
        return 0
    total = 0
    for entry in r.get("execution", {}).get("R_lite", []):
        total += idset_size(str(entry["rank"])) * idset_size(str(entry.get("children", {}).get("core", "")))
    return total


def r_ranks(r: dict[str, Any] | None) -> dict[int, tuple[list[int], list[int]]]:
    """An R version 1 object's ranks: rank -> (core ids, GPU ids)."""
    out: dict[int, tuple[list[int], list[int]]] = {}
    for entry in (r or {}).get("execution", {}).get("R_lite", []):
        children = entry.get("children", {})
        cores = idset_ids(str(children.get("core", "")))
        gpus = idset_ids(str(children.get("gpu", "")))
        for rank in idset_ids(str(entry["rank"])):
            have = out.setdefault(rank, ([], []))
            have[0].extend(cores)
            have[1].extend(gpus)
    return out


def r_hosts(r: dict[str, Any] | None, ranks: Sequence[int]) -> dict[int, str]:
    """Node names by rank: R's ``nodelist`` hostnames when each rank has its own, else
    ``rank<N>`` (an R made by ``flux R encode`` without hosts repeats the local hostname)."""
    names: list[str] = []
    for entry in (r or {}).get("execution", {}).get("nodelist", []) or []:
        names.extend(expand_hostlist(str(entry)))
    ordered = sorted(ranks)
    if len(names) >= len(ordered) and len(set(names)) == len(names):
        by_index = dict(enumerate(names))
        every = sorted(idset_ids(",".join(str(e["rank"]) for e in r.get("execution", {}).get("R_lite", []))))
        position = {rank: i for i, rank in enumerate(every)}
        return {rank: by_index.get(position.get(rank, -1), f"rank{rank}") for rank in ordered}
    return {rank: f"rank{rank}" for rank in ordered}


def queue_requirements(config: Any) -> dict[str, list[str]]:
    """Flux queues (rush's partitions) and the node properties each requires, from the
    instance's configuration (``config.get``: ``[queues.NAME] requires = [...]``); {} without
    queues or on an answer of another shape."""
    queues = config.get("queues", {}) if isinstance(config, dict) else {}
    out = {}
    for name, queue in (queues if isinstance(queues, dict) else {}).items():
        requires = queue.get("requires", []) if isinstance(queue, dict) else []
        out[str(name)] = [str(p) for p in requires] if isinstance(requires, list) else []
    return out


def nodes_from_r(
    everything: dict[str, Any] | None,
    allocated: dict[str, Any] | None,
    down: dict[str, Any] | None,
    drained: Sequence[int] = (),
    queues: dict[str, list[str]] | None = None,
) -> tuple[Node, ...]:
    """The instance's nodes (one per broker rank) from the scheduler's R sets: cores and GPUs
    from ``all``, free ones from ``allocated``, state from ``down`` (``drained`` ranks read
    ``drained``, other down ranks ``down``; either offers nothing). ``queues``: queue name ->
    the node properties it requires; a node belongs to every queue whose properties it has."""
    ranks = r_ranks(everything)
    busy = r_ranks(allocated)
    off = set(r_ranks(down))
    names = r_hosts(everything, list(ranks))
    properties: dict[str, set[int]] = {}
    for name, idset in ((everything or {}).get("execution", {}).get("properties", {}) or {}).items():
        properties[str(name)] = set(idset_ids(str(idset)))
    drained_set = set(drained)
    nodes = []
    for rank in sorted(ranks):
        cores, gpus = ranks[rank]
        used = busy.get(rank, ([], []))
        state = "drained" if rank in drained_set else "down" if rank in off else "up"
        member = tuple(
            sorted(
                q for q, need in (queues or {}).items() if all(rank in properties.get(p, ()) for p in need)
            )
        )
        nodes.append(
            Node(
                name=names[rank],
                cores=len(cores),
                gpus=len(gpus),
                state=state,
                partitions=member,
                free_cores=0 if state != "up" else len(set(cores) - set(used[0])),
                free_gpus=0 if state != "up" else len(set(gpus) - set(used[1])),
            )
        )
    return tuple(nodes)


def allocation_from_r(r: dict[str, Any] | None, names: dict[int, str]) -> tuple[tuple[str, int, int], ...]:
    """A running job's R as (node name, cores, GPUs) per node (``names``: rank -> node name)."""
    return tuple(
        (names.get(rank, f"rank{rank}"), len(cores), len(gpus))
        for rank, (cores, gpus) in sorted(r_ranks(r).items())
    )
