"""Flux's Rv1 pool, fast where the module uses it: the core's ``ranks`` constraint and
repeated feasibility checks.

The module allocates each of the core's starts on exactly its nodes by adding an RFC 31
``{"ranks": [...]}`` constraint to the job's request. flux-core's pool builds a candidate
for every up rank with free cores (two set differences each) and then decodes the
constraint's idset from text for every candidate: at 1 000 nodes 3.6 ms an allocation,
most of the module's time (benchmarks/bench_flux_nodes.py). Here:

- an allocation whose constraint names ranks (alone, or as an operand of a top-level
  ``and``) only looks at those ranks: flux-core's own ``alloc`` runs on the pool with its
  rank table narrowed to them for the call. That is exact: every rank outside the list
  fails the constraint, in the candidate list and in the feasibility check alike;
- each ranks list is decoded once and kept (a bounded cache);
- ``check_feasibility`` (every arriving job, against the pool's total capacity, which
  changes only when ranks are removed) is remembered per request shape;
- the module builds its ranks constraints with :func:`ranks_constraint`, which remembers
  the ranks it wrote, so they are never decoded from text at all;
- an allocation's R (``to_dict``) and summary (``dumps``, which flux-core's ``alloc`` also
  formats for a debug log line whatever the log level) encode their idsets in Python, as
  flux-core's C library does (each C call through cffi cost more than the rest of the
  allocation), and :func:`allocation_of` reads a job's nodes from the allocation's rank
  table, not from its R.

Every other constraint, and everything else, goes to flux-core unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from flux.hostlist import Hostlist  # type: ignore[import-not-found]
from flux.idset import IDset  # type: ignore[import-not-found]
from flux.resource import InfeasibleRequest  # type: ignore[import-not-found]
from flux.resource.ResourceCount import ResourceCount  # type: ignore[import-not-found]
from flux.resource.ResourcePool import ResourcePool  # type: ignore[import-not-found]
from flux.resource.Rv1Pool import Rv1Pool  # type: ignore[import-not-found]

from rush.core.resources import Node

# Ranks lists seen lately -> their ranks; cleared when it grows past this many entries.
CACHE_ENTRIES = 4096
_RANKS: dict[tuple[str, ...], frozenset[int]] = {}


def ranks_of(ranks: list[str]) -> frozenset[int]:
    """The ranks an RFC 31 ``ranks`` operand names (idset strings), decoded once."""
    key = tuple(ranks)
    ids = _RANKS.get(key)
    if ids is None:
        if len(_RANKS) >= CACHE_ENTRIES:
            _RANKS.clear()
        ids = _RANKS[key] = frozenset(i for text in key for i in IDset(text))
    return ids


def ranks_constraint(ranks: list[int]) -> dict:
    """``{"ranks": [idset]}`` for these ranks, the ranks remembered so that the pool finds
    them without decoding the text."""
    text = ",".join(map(str, ranks))
    key = (text,)
    if key not in _RANKS:
        if len(_RANKS) >= CACHE_ENTRIES:
            _RANKS.clear()
        _RANKS[key] = frozenset(ranks)
    return {"ranks": [text]}


# A hostname flux-core's Hostlist gives back as it is.
_PLAIN_HOST = re.compile(r"[A-Za-z0-9_.-]+")


def _id_ranges(ids: list[int]) -> str:
    """Sorted distinct ids as RFC 22 ranges (``0-3,5``), as flux-core's idset encoder writes them."""
    parts = []
    start = prev = ids[0]
    for i in ids[1:]:
        if i != prev + 1:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
            start = i
        prev = i
    parts.append(str(start) if start == prev else f"{start}-{prev}")
    return ",".join(parts)


def idset_text(ints) -> str:  # noqa: ANN001 - any iterable of ints
    """flux-core's ``Rv1Set._idset_str``: ``0-3,5``; empty for no ids."""
    ids = sorted(set(ints))
    return _id_ranges(ids) if ids else ""


def display_ids(ints) -> str:  # noqa: ANN001 - any iterable of ints
    """flux-core's ``Rv1Set._display_idset``: ``3``, or ``[0-3,5]`` for more than one id."""
    ids = sorted(set(ints))
    if not ids:
        return ""
    return _id_ranges(ids) if len(ids) == 1 else f"[{_id_ranges(ids)}]"


def _rank_groups(table: dict) -> list[tuple[tuple[frozenset, frozenset], list[int]]]:
    """Ranks grouped by their (cores, GPUs), groups ordered by their lowest rank (Rv1Set's)."""
    groups: dict[tuple[frozenset, frozenset], list[int]] = {}
    for rank, info in table.items():
        groups.setdefault((frozenset(info["cores"]), frozenset(info["gpus"])), []).append(rank)
    return sorted(groups.items(), key=lambda item: min(item[1]))


def _pure_ranks(constraint) -> list[str] | None:  # noqa: ANN001 - untrusted JSON
    """The operand of a constraint that is ``{"ranks": [idset, ...]}`` and nothing else."""
    if isinstance(constraint, dict) and len(constraint) == 1:
        ranks = constraint.get("ranks")
        if isinstance(ranks, list) and ranks and all(isinstance(text, str) for text in ranks):
            return ranks
    return None


def required_ranks(constraint) -> frozenset[int] | None:  # noqa: ANN001 - untrusted JSON
    """The ranks a constraint confines a job to (a ranks constraint, or one operand of a
    top-level ``and``), or None when it does not name ranks that way."""
    if isinstance(constraint, str):
        try:
            constraint = json.loads(constraint)
        except ValueError:
            return None
    ranks = _pure_ranks(constraint)
    if ranks is not None:
        return ranks_of(ranks)
    if isinstance(constraint, dict) and len(constraint) == 1 and isinstance(constraint.get("and"), list):
        for operand in constraint["and"]:
            ranks = _pure_ranks(operand)
            if ranks is not None:
                return ranks_of(ranks)
    return None


def confined_request(rr, ranks: Sequence[int]):  # noqa: ANN001, ANN201 - flux-core's ResourceRequest
    """``rr`` restricted to ``ranks`` (an RFC 31 ``ranks`` constraint added to its own), so the
    pool allocates on exactly those ranks. Slots placed one a rank (GPU slots:
    :func:`rush.rjms.flux.jobspec.request_from_jobspec`) become a node request of one slot per
    node, so Flux cannot pack two of them on one node."""
    confined = ranks_constraint(list(ranks))
    own = rr.constraint
    constraint = confined if own is None else {"and": [own, confined]}
    node_count, slot_count = rr.node_count, rr.slot_count
    count = len(ranks)
    if node_count is None and rr.gpu_per_slot > 0 and rr.nslots == count and rr.nslots_max == count:
        node_count, slot_count = ResourceCount(count, count), ResourceCount(1, 1)
    return type(rr)(
        node_count,
        slot_count,
        rr.slot_size,
        rr.gpu_per_slot,
        rr.duration,
        constraint,
        rr.exclusive,
        rr.jobspec,
    )


def _count_key(count) -> tuple | None:  # noqa: ANN001 - flux-core's ResourceCount
    if count is None:
        return ()
    if getattr(count, "_values", None) is not None:
        return None  # stepped counts: flux-core refuses them at once anyway
    return (count.min, count.max)


def _feasibility_key(request) -> tuple | None:  # noqa: ANN001 - flux-core's ResourceRequest
    """What feasibility depends on (not the duration, not the jobspec's other fields)."""
    nodes, slots = _count_key(request.node_count), _count_key(request.slot_count)
    if nodes is None or slots is None:
        return None
    try:
        constraint = json.dumps(request.constraint, sort_keys=True)
    except (TypeError, ValueError):
        return None
    return (nodes, slots, request.slot_size, request.gpu_per_slot, bool(request.exclusive), constraint)


class RankCachedPool(Rv1Pool):
    _feasible: dict[tuple, str | None]

    def _matches_constraint(self, rank: int, info: dict, constraint: dict) -> bool:
        ranks = _pure_ranks(constraint)
        if ranks is not None:
            return rank in ranks_of(ranks)
        return super()._matches_constraint(rank, info, constraint)

    def alloc(self, jobid: int, request) -> Rv1Pool:  # noqa: ANN001
        ranks = required_ranks(request.constraint)
        if ranks is None:
            return super().alloc(jobid, request)
        everything = self._ranks
        # Rank order kept (flux-core's candidates follow it before sorting by free cores).
        self._ranks = {rank: everything[rank] for rank in sorted(ranks) if rank in everything}
        try:
            return super().alloc(jobid, request)
        finally:
            self._ranks = everything

    def dumps(self) -> str:
        """flux-core's summary (``Rv1Set.dumps``): ``rank<ids>/core<ids>[,gpu<ids>]`` per group
        of ranks with the same cores and GPUs, groups by their lowest rank. Kept until the pool
        changes (its generation, its rank table): flux-core's ``alloc`` formats an allocation's
        summary for its debug line and the module asks for it again for the job's annotation."""
        key = (self.generation, id(self._ranks), len(self._ranks))
        kept = self.__dict__.get("_summary")
        if kept is not None and kept[0] == key:
            return kept[1]
        parts = []
        for (cores, gpus), ranks in _rank_groups(self._ranks):
            text = f"rank{display_ids(ranks)}/core{display_ids(cores)}"
            parts.append(f"{text},gpu{display_ids(gpus)}" if gpus else text)
        summary = " ".join(parts)
        self.__dict__["_summary"] = (key, summary)
        return summary

    def _build_dict(self) -> dict:
        """flux-core's R (``Rv1Set._build_dict``), the same dict."""
        r_lite = []
        for (cores, gpus), ranks in _rank_groups(self._ranks):
            children = {"core": idset_text(cores)}
            if gpus:
                children["gpu"] = idset_text(gpus)
            r_lite.append({"rank": idset_text(ranks), "children": children})
        execution: dict = {"R_lite": r_lite, "starttime": self._starttime, "expiration": self._expiration}
        if getattr(self, "_nslots", 0) > 0:
            execution["nslots"] = self._nslots
        if getattr(self, "_has_nodelist", False):
            hosts = [info["hostname"] for _, info in sorted(self._ranks.items())]
            one = len(hosts) == 1 and _PLAIN_HOST.fullmatch(hosts[0])
            execution["nodelist"] = [hosts[0] if one else str(Hostlist(",".join(hosts)))]
        if self._properties:
            execution["properties"] = {
                prop: idset_text(ranks) for prop, ranks in sorted(self._properties.items()) if ranks
            }
        result = {"version": 1, "execution": execution}
        if self.scheduling:
            result["scheduling"] = self.scheduling
        return result

    def check_feasibility(self, request) -> None:  # noqa: ANN001
        key = _feasibility_key(request)
        cache = self.__dict__.setdefault("_feasible", {})
        if key is not None and key in cache:
            why = cache[key]
            if why is not None:
                raise InfeasibleRequest(why)
            return
        try:
            super().check_feasibility(request)
        except InfeasibleRequest as exc:
            if key is not None and len(cache) < CACHE_ENTRIES:
                cache[key] = str(exc)
            raise
        if key is not None and len(cache) < CACHE_ENTRIES:
            cache[key] = None

    def remove_ranks(self, ranks) -> None:  # noqa: ANN001
        """The pool shrank: what was feasible may not be any more."""
        self.__dict__.pop("_feasible", None)
        super().remove_ranks(ranks)


class RankCachedResourcePool(ResourcePool):
    """The module's pool class (``Scheduler.pool_class``): an Rv1 pool as flux-core builds
    it, with :class:`RankCachedPool`'s allocation and checks."""

    def __init__(self, arg=None, version=1, log=None, **kwargs):
        if isinstance(arg, str):
            arg = json.loads(arg)
        if arg is None or isinstance(arg, dict):
            arg = RankCachedPool(arg, log=log, **kwargs)
        super().__init__(arg, version=version, log=log)


def allocation_of(
    alloc: ResourcePool, names: dict[int, str]
) -> tuple[tuple[tuple[str, int, int], ...], int] | None:
    """An allocation's (node name, cores, GPUs) per node, by rank, and its cores, from its
    rank table (what :func:`rush.rjms.flux.resource_set.allocation_from_r` and
    ``count_cores`` read from its R); None when it is not an Rv1 pool."""
    table = getattr(getattr(alloc, "impl", None), "_ranks", None)
    if not isinstance(table, dict):
        return None
    nodes = tuple(
        (names.get(rank, f"rank{rank}"), len(table[rank]["cores"]), len(table[rank]["gpus"]))
        for rank in sorted(table)
    )
    return nodes, sum(cores for _, cores, _ in nodes)


@dataclass(frozen=True)
class PoolNodes:
    """The pool as the core's snapshot needs it."""

    nodes: tuple[Node, ...]
    names: dict[int, str]  # rank -> node name
    total_cores: int
    busy_cores: int  # allocated, plus every core of a down node (as the R sets count them)


@dataclass
class _KeptNodes:
    """What :func:`pool_nodes` read from one pool last: its ranks and names, and each rank's
    Node with what it was built from."""

    ranks: list[int]
    names: dict[int, str]
    queues: dict[str, list[str]]
    properties: dict
    nodes: dict[int, tuple[tuple, Node]]


def pool_nodes(pool: ResourcePool, queues: dict[str, list[str]]) -> PoolNodes | None:
    """The nodes of an Rv1 pool read from its rank table, as
    :func:`rush.rjms.flux.resource_set.nodes_from_r` reads them from the pool's three R
    sets (all, allocated, down), without building and parsing those (at 1 000 nodes a
    tenth of a second per pass). Names: the hostnames when every rank has its own, else
    ``rank<N>``. None when the pool is not an Rv1 pool (the caller reads the R sets).

    The pool keeps what this read last: a rank's Node is built again only when its free
    cores or GPUs or its state changed (a pass after 256 starts on 1 000 nodes builds 256, not
    1 000), and the names only when the ranks, the queues or the properties did."""
    impl = getattr(pool, "impl", None)
    table = getattr(impl, "_ranks", None)
    if not isinstance(impl, Rv1Pool) or not isinstance(table, dict):
        return None
    properties = getattr(impl, "_properties", {}) or {}
    kept = getattr(impl, "__dict__", {}).get("_rush_nodes")
    ranks = sorted(table)
    if kept is None or kept.ranks != ranks or kept.queues != queues or kept.properties != properties:
        hosts = [table[rank]["hostname"] for rank in ranks]
        unique = all(isinstance(h, str) and h for h in hosts) and len(set(hosts)) == len(hosts)
        names = {rank: host if unique else f"rank{rank}" for rank, host in zip(ranks, hosts, strict=True)}
        # Copies: the pool changes its own dicts and sets in place.
        props = {p: set(r) for p, r in properties.items()}
        kept = _KeptNodes(ranks, names, {q: list(n) for q, n in queues.items()}, props, {})
        if hasattr(impl, "__dict__"):
            impl.__dict__["_rush_nodes"] = kept
    names, built = kept.names, kept.nodes
    total = busy = 0
    nodes = []
    for rank in ranks:
        info = table[rank]
        cores, gpus = info["cores"], info["gpus"]
        used_cores, used_gpus = info["allocated_cores"], info["allocated_gpus"]
        up = bool(info["up"])
        total += len(cores)
        busy += len(used_cores) + (0 if up else len(cores))
        free = (len(cores - used_cores), len(gpus - used_gpus)) if up else (0, 0)
        key = (len(cores), len(gpus), up, free)
        was = built.get(rank)
        if was is not None and was[0] == key:
            nodes.append(was[1])
            continue
        member = tuple(
            sorted(q for q, need in queues.items() if all(rank in properties.get(p, ()) for p in need))
        )
        node = Node(
            name=names[rank],
            cores=len(cores),
            gpus=len(gpus),
            state="up" if up else "down",
            partitions=member,
            free_cores=free[0],
            free_gpus=free[1],
        )
        built[rank] = (key, node)
        nodes.append(node)
    return PoolNodes(tuple(nodes), names, total, busy)
