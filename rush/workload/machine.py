"""The machine a trace ran on, and what each of its jobs asked of the nodes (issue 20 §1).

A trace gives a :class:`Machine` (its nodes, cores per node, whether it allocated whole nodes,
its partitions' names) and, aligned with its jobs, :class:`NodeRequests`: numpy arrays of
nodes, cores per node, GPUs per node, exclusivity and partition, which map one to one onto
:class:`rush.core.resources.Request`.

SWF (Parallel Workloads Archive headers ``MaxNodes`` and ``MaxProcs``; first number of each,
so ``338 (batch partition; 512 total)`` reads as 338):

* ``MaxProcs`` a multiple ``c > 1`` of ``MaxNodes`` and every usable job's processors
  (allocated, else requested; ``0 < q <=`` machine) a multiple of ``c``: the log allocated
  whole nodes. Each job asks for ``ceil(q / c)`` nodes of ``c`` cores, exclusive.
* Otherwise the jobs are cores-only (``nodes == 0``, ``cores_per_node == q``): one-core
  nodes (``MaxProcs == MaxNodes``), nodes of unequal sizes (``MaxProcs`` not a multiple of
  ``MaxNodes``: CEA-Curie, OSC-Clust, SDSC-DS), shared nodes (some job not a multiple of the
  node size), or no ``MaxNodes``. ``Machine.why`` says which. Cores-only requests are the
  processor counts the simulator has always used, so results on these traces do not change.
* Jobs wider than the machine are dropped by the trace semantics (``procs>machine``) before
  any node count is taken, as for procs-only traces; so no whole-node job asks for more than
  ``MaxNodes`` nodes.
* A header that contradicts itself (``MaxProcs`` < ``MaxNodes``) is read as cores-only; a
  caller that asks for nodes (``describe_machine(..., cores_per_node=, whole_node=True)``)
  gets a :class:`~rush.errors.TraceFormatError` at ``file:line`` of the header or of the
  first job that contradicts it, with the fix.

The partition is SWF field 16 (``-1`` unknown); its names come from the header's
``Partition: N name`` lines.

sacct (:mod:`rush.workload.sacct`): ``NNodes``/``AllocNodes`` (else the ``node=`` TRES), the
``gres/gpu`` count of ``AllocTRES`` (else ``ReqTRES``) spread over the nodes, ``Partition``,
and exclusivity from ``SubmitLine`` (``--exclusive``: Slurm accounting has no exclusivity
field). The cluster's nodes are not in accounting: the machine's nodes are 0 (unknown).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from rush.core.resources import Request
from rush.errors import TraceFormatError

if TYPE_CHECKING:
    from rush.workload.model import Trace

# The node-level columns a trace source may carry in ``Trace.node_columns`` (sacct does).
NODE_COLUMNS = ("nodes", "cores_per_node", "gpus_per_node", "exclusive", "partition")


@dataclass(frozen=True)
class Machine:
    """What a trace says of its machine: ``nodes`` of ``cores_per_node`` cores, ``procs`` in all.

    Cores-only traces are ``procs`` one-core nodes (so that node-level runs of them give
    today's results exactly); ``nodes == 0``: unknown (sacct: take them from the cluster).
    """

    nodes: int
    cores_per_node: int
    procs: int
    whole_node: bool
    # Partition number -> name (SWF header ``Partition:`` lines, sacct partition names).
    partitions: dict[int, str] = field(default_factory=dict)
    why: str = ""  # how it was derived, for the report and the docs
    header_nodes: int = 0  # the header's MaxNodes (0: none), as the log states it


@dataclass
class NodeRequests:
    """Per-job node requests, aligned with a trace's or workload's jobs (numpy arrays)."""

    nodes: np.ndarray  # int64; 0: cores only (the job's cores anywhere)
    cores_per_node: np.ndarray  # int64; with nodes == 0 the job's processor count
    gpus_per_node: np.ndarray  # int64
    exclusive: np.ndarray  # bool
    partition: np.ndarray  # int64; -1 unknown (Machine.partitions names the others)

    def __len__(self) -> int:
        return len(self.nodes)

    def subset(self, index: np.ndarray) -> NodeRequests:
        return NodeRequests(*(getattr(self, name)[index] for name in NODE_COLUMNS))

    def request(self, job: int, machine: Machine) -> Request:
        """Job ``job``'s :class:`~rush.core.resources.Request` (partition by name, "" unknown)."""
        part = int(self.partition[job])
        return Request(
            nodes=int(self.nodes[job]),
            cores_per_node=int(self.cores_per_node[job]),
            gpus_per_node=int(self.gpus_per_node[job]),
            exclusive=bool(self.exclusive[job]),
            partition=machine.partitions.get(part, str(part) if part >= 0 else ""),
        )


def header_number(text: str) -> int | None:
    """The first number of a header value (``184  ( 6,  171,   7)`` -> 184), if a positive int32."""
    token = text.strip().split(" ")[0] if text.strip() else ""
    if not (0 < len(token) <= 10 and token.isascii() and token.isdigit()):
        return None
    value = int(token)
    return value if 0 < value < 2**31 else None


def partition_names(header: dict[str, str]) -> dict[int, str]:
    """``Partition:  2  pdebug`` lines -> {2: "pdebug"} (a number without a name keeps the number)."""
    names: dict[int, str] = {}
    for line in header.get("Partition", "").split("\n"):
        number, _, name = line.strip().partition(" ")
        if number.isascii() and number.isdigit() and len(number) <= 9:
            names[int(number)] = name.strip() or number
    return names


def trace_procs(trace: Trace) -> np.ndarray:
    """q: allocated processors, else requested (the trace semantics of rush.workload.model)."""
    alloc, req = trace["alloc_procs"], trace["req_procs"]
    return np.where(alloc > 0, alloc, req).astype(np.int64)


def _header_where(trace: Trace, key: str) -> str:
    lines = getattr(trace, "header_lines", {})
    where = trace.source or trace.name or "trace"
    return f"{where}:{lines[key]}" if key in lines else f"{where} (header {key})"


def _cores_only(procs: int, header_nodes: int, partitions: dict[int, str], why: str) -> Machine:
    """``procs`` one-core nodes: every job's cores anywhere, as the procs-only simulator does."""
    return Machine(procs, 1, procs, False, partitions, why, header_nodes)


def describe_machine(
    trace: Trace,
    machine_procs: int,
    usable: np.ndarray,
    *,
    cores_per_node: int | None = None,
    whole_node: bool | None = None,
) -> Machine:
    """The machine of ``trace`` (module docstring). ``usable`` masks the jobs the semantics keep.

    ``cores_per_node`` and ``whole_node`` override the derivation; an override the header or
    the jobs contradict is a :class:`TraceFormatError` at ``file:line``.
    """
    partitions = partition_names(trace.header)
    if trace.node_columns:  # sacct: requests per job, no node inventory
        partitions = partitions or dict(trace.labels.get("queue", {}))
        why = "accounting (sacct): nodes per job, the machine's nodes unknown"
        return Machine(0, 1, machine_procs, False, partitions, why)
    max_nodes = header_number(trace.header.get("MaxNodes", ""))
    max_procs = header_number(trace.header.get("MaxProcs", ""))
    forced = cores_per_node is not None or bool(whole_node)
    if max_nodes is None:
        if forced:
            raise TraceFormatError(
                "node-level jobs need the machine's node count, and the header has no MaxNodes",
                where=_header_where(trace, "MaxNodes"),
                fix="add '; MaxNodes: N' (and '; MaxProcs: N x cores') to the header, or read it as cores",
            )
        return _cores_only(machine_procs, 0, partitions, "no MaxNodes: cores only")
    procs_known = max_procs if max_procs is not None else max_nodes
    if procs_known < max_nodes or procs_known % max_nodes:
        if forced:
            raise TraceFormatError(
                f"MaxProcs {procs_known} is not a whole multiple of MaxNodes {max_nodes}",
                where=_header_where(trace, "MaxProcs"),
                fix="give MaxProcs = MaxNodes x cores per node, or read the trace as cores (nodes of unequal size)",
            )
        kind = "fewer processors than nodes" if procs_known < max_nodes else "nodes of unequal size"
        return _cores_only(
            machine_procs,
            max_nodes,
            partitions,
            f"MaxProcs {procs_known} / MaxNodes {max_nodes}: {kind}, cores only",
        )
    cores = procs_known // max_nodes
    if cores_per_node is not None and cores_per_node != cores:
        raise TraceFormatError(
            f"{cores_per_node} cores per node, but MaxProcs {procs_known} / MaxNodes {max_nodes} = {cores}",
            where=_header_where(trace, "MaxProcs"),
            fix=f"use {cores} cores per node, or fix the header's MaxNodes/MaxProcs",
        )
    nodes = machine_procs // cores  # MaxNodes, or what a --procs override makes of it
    if machine_procs % cores:
        if forced:
            raise TraceFormatError(
                f"the machine's {machine_procs} processors are not whole nodes of {cores} cores",
                where="--procs",
                fix=f"give a multiple of {cores}, or read the trace as cores",
            )
        return _cores_only(
            machine_procs,
            max_nodes,
            partitions,
            f"{machine_procs} processors are not whole {cores}-core nodes",
        )
    procs = trace_procs(trace)[usable]
    odd = procs % cores != 0
    if cores == 1 or whole_node is False or (odd.any() and not whole_node):
        why = (
            "one core per node"
            if cores == 1
            else "whole nodes not asked for"
            if whole_node is False
            else f"{int(odd.sum())} of {len(procs)} jobs are not whole {cores}-core nodes: shared nodes, cores only"
        )
        return _cores_only(machine_procs, nodes, partitions, why)
    if odd.any():  # whole_node forced and a job contradicts it
        row = int(np.flatnonzero(usable)[np.flatnonzero(odd)[0]])
        raise TraceFormatError(
            f"job {int(trace['job_id'][row])} has {int(procs[odd][0])} processors, not whole nodes of {cores} cores",
            where=_job_where(trace, row),
            fix="read the trace as cores (whole_node=False), or drop or fix the job",
        )
    why = f"every job is whole {cores}-core nodes: exclusive nodes"
    return Machine(nodes, cores, machine_procs, True, partitions, why, max_nodes)


def _job_where(trace: Trace, row: int) -> str:
    """``file:line`` of job ``row`` of an SWF trace (an error path: re-reads the file)."""
    where = trace.source or trace.name or "trace"
    if not trace.source or not hasattr(trace, "malformed_lines"):  # not as read: rows are not lines
        return f"{where}: job id {int(trace['job_id'][row])}"
    from rush.workload.swf import job_line_number

    return f"{where}:{job_line_number(trace, row)}"


def node_requests(trace: Trace, machine: Machine) -> NodeRequests:
    """Per-job requests aligned with ``trace`` (module docstring)."""
    n = len(trace)
    cols = trace.node_columns
    if cols:
        return NodeRequests(*(np.asarray(cols[name]) for name in NODE_COLUMNS))
    procs = trace_procs(trace)
    partition = np.asarray(trace["partition"], dtype=np.int64)
    if machine.whole_node:
        cores = machine.cores_per_node
        return NodeRequests(
            nodes=np.maximum(-(-procs // cores), 0),
            cores_per_node=np.full(n, cores, dtype=np.int64),
            gpus_per_node=np.zeros(n, dtype=np.int64),
            exclusive=np.ones(n, dtype=np.bool_),
            partition=partition,
        )
    return NodeRequests(
        nodes=np.zeros(n, dtype=np.int64),
        cores_per_node=procs,
        gpus_per_node=np.zeros(n, dtype=np.int64),
        exclusive=np.zeros(n, dtype=np.bool_),
        partition=partition,
    )
