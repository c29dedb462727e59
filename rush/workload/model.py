"""The job model shared by every trace source and by the simulator.

Two layers:

* :class:`Trace` keeps the 18 Standard Workload Format fields as numpy arrays, exactly as
  read (``-1`` = unknown), plus the header comments. SWF files, Slurm accounting dumps and
  the synthetic generators all produce a ``Trace``; the SWF writer consumes one.
* :class:`Workload` is what the scheduler sees after applying the trace semantics below.

Trace semantics (the contract, also in the README):

* q  = allocated processors (field 5), else requested processors (field 8);
* p  = runtime (field 4);
* p~ = requested time (field 9), else p;
* a job whose id appeared earlier in the trace is dropped (the first is kept), counted as
  ``duplicate_job_id``;
* jobs with p < 0, q <= 0 or q > machine size are dropped, counted by reason;
* no job left is an error (:class:`~rush.errors.TraceFormatError`), not an empty run;
* a job with p > p~ is killed at p~ (by the simulator);
* machine size = ``MaxProcs`` header, else the largest q; a caller may override it;
* the machine's nodes and each job's node request (``Workload.machine``,
  ``Workload.requests``) follow :mod:`rush.workload.machine`: whole nodes where the header's
  ``MaxNodes``/``MaxProcs`` and every job show node allocation, else cores only (q anywhere).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rush.errors import TraceFormatError
from rush.workload.machine import Machine, NodeRequests, describe_machine, node_requests

# The 18 SWF fields, in file order (Feitelson's Standard Workload Format, version 2.2).
SWF_FIELDS: tuple[str, ...] = (
    "job_id",
    "submit",
    "wait",
    "runtime",
    "alloc_procs",
    "avg_cpu",
    "used_mem",
    "req_procs",
    "req_time",
    "req_mem",
    "status",
    "user",
    "group",
    "app",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
# Fields stored as floats; the rest are integers.
SWF_FLOAT_FIELDS = frozenset({"avg_cpu", "used_mem", "req_mem"})


def _header_int(text: str, signed: bool = False) -> int | None:
    """An integer header value of at most 18 ASCII digits, else None.

    ``str.isdigit`` alone also accepts "²" (which ``int`` refuses) and 5 000-digit numbers
    (beyond ``int``'s digit limit and any int64 column).
    """
    digits = text[1:] if signed and text.startswith("-") else text
    if not (0 < len(digits) <= 18 and digits.isascii() and digits.isdigit()):
        return None
    return int(text)


@dataclass
class Trace:
    """Raw SWF columns (numpy arrays of equal length) plus header comments.

    ``labels`` maps an integer-coded column (``user``, ``group``, ``app``, ``queue``,
    ``partition``, ``status``) to the original strings when the source had names
    (Slurm accounting), e.g. ``labels["user"][3] == "alice"``.
    """

    columns: dict[str, np.ndarray]
    header: dict[str, str] = field(default_factory=dict)
    name: str = ""
    labels: dict[str, dict[int, str]] = field(default_factory=dict)
    # Lines skipped while reading, by reason (e.g. {"malformed": 3}).
    skipped: dict[str, int] = field(default_factory=dict)
    # The file it was read from, for error messages ("" for generated traces).
    source: str = ""
    # Node-level columns from sources that record them per job (sacct; rush.workload.machine
    # NODE_COLUMNS), aligned with the jobs; SWF derives them from its header instead.
    node_columns: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [f for f in SWF_FIELDS if f not in self.columns]
        if missing:
            raise ValueError(f"Trace is missing SWF columns: {missing}")
        lengths = {len(v) for v in self.columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"Trace columns have different lengths: {sorted(lengths)}")

    def __len__(self) -> int:
        return len(self.columns["job_id"])

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]

    @classmethod
    def from_columns(cls, n: int, **values: np.ndarray) -> Trace:
        """Build a trace of ``n`` jobs; fields not given are ``-1``."""
        cols: dict[str, np.ndarray] = {}
        for f in SWF_FIELDS:
            dtype = np.float64 if f in SWF_FLOAT_FIELDS else np.int64
            if f in values:
                cols[f] = np.asarray(values.pop(f), dtype=dtype)
            else:
                cols[f] = np.full(n, -1, dtype=dtype)
        if values:
            raise ValueError(f"not SWF fields: {sorted(values)}")
        return cls(columns=cols)

    def subset(self, mask_or_index: np.ndarray) -> Trace:
        """A new trace with the selected jobs (boolean mask or index array)."""
        return Trace(
            columns={k: v[mask_or_index] for k, v in self.columns.items()},
            header=dict(self.header),
            name=self.name,
            labels={k: dict(v) for k, v in self.labels.items()},
            skipped=dict(self.skipped),
            source=self.source,
            node_columns={k: v[mask_or_index] for k, v in self.node_columns.items()},
        )

    @property
    def max_procs(self) -> int | None:
        """``MaxProcs`` from the header, if it is a positive integer (at most 2**31 - 1)."""
        for key in ("MaxProcs", "MaxNodes"):
            value = _header_int(self.header.get(key, "").strip().split(" ")[0])
            if value is not None and 0 < value < 2**31:
                return value
        return None

    @property
    def unix_start_time(self) -> int | None:
        return _header_int(self.header.get("UnixStartTime", "").strip(), signed=True)


@dataclass
class Workload:
    """Jobs as the scheduler sees them, sorted by (submit, job_id).

    Times are seconds as in the source (SWF: since the log's start). ``requested_time``
    is p~ (the walltime: jobs are killed there); ``runtime`` is p, the actual runtime.
    """

    job_id: np.ndarray  # int64
    submit: np.ndarray  # float64
    runtime: np.ndarray  # float64, p
    procs: np.ndarray  # int64, q
    requested_time: np.ndarray  # float64, p~
    user: np.ndarray  # int64 (-1 unknown)
    machine_procs: int
    name: str = ""
    dropped: dict[str, int] = field(default_factory=dict)
    # Extra per-job attributes carried along (e.g. group, app, queue, partition, status).
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    # The machine's nodes and each job's node request (rush.workload.machine); None: cores only.
    machine: Machine | None = None
    requests: NodeRequests | None = None

    def __len__(self) -> int:
        return len(self.job_id)

    def subset(self, index: np.ndarray) -> Workload:
        return Workload(
            job_id=self.job_id[index],
            submit=self.submit[index],
            runtime=self.runtime[index],
            procs=self.procs[index],
            requested_time=self.requested_time[index],
            user=self.user[index],
            machine_procs=self.machine_procs,
            name=self.name,
            dropped=dict(self.dropped),
            extra={k: v[index] for k, v in self.extra.items()},
            machine=self.machine,
            requests=None if self.requests is None else self.requests.subset(index),
        )


def duplicate_job_ids(job_id: np.ndarray) -> np.ndarray | None:
    """Mask of the jobs whose id appeared earlier (file order), or None when ids are unique."""
    if len(job_id) < 2 or bool(np.all(job_id[1:] > job_id[:-1])):
        return None  # increasing ids, the usual case: one vectorised comparison, no sort
    _, first = np.unique(job_id, return_index=True)
    if len(first) == len(job_id):
        return None
    repeated = np.ones(len(job_id), dtype=bool)
    repeated[first] = False
    return repeated


def workload_from_trace(
    trace: Trace,
    machine_procs: int | None = None,
    *,
    cores_per_node: int | None = None,
    whole_node: bool | None = None,
) -> Workload:
    """Apply the trace semantics (module docstring) and return a sorted :class:`Workload`.

    ``cores_per_node``/``whole_node`` override how the machine's nodes are derived
    (:func:`rush.workload.machine.describe_machine`); a contradicted override is an error.
    """
    alloc = trace["alloc_procs"]
    req = trace["req_procs"]
    procs = np.where(alloc > 0, alloc, req).astype(np.int64)
    runtime = trace["runtime"].astype(np.float64)
    req_time = trace["req_time"].astype(np.float64)
    requested_time = np.where(req_time > 0, req_time, runtime)

    if machine_procs is None:
        machine_procs = trace.max_procs
    if machine_procs is None:
        positive = procs[procs > 0]
        machine_procs = int(positive.max()) if len(positive) else 0

    dropped: dict[str, int] = {}
    repeated = duplicate_job_ids(trace["job_id"])
    duplicate = np.zeros(len(trace), dtype=bool) if repeated is None else repeated
    bad_runtime = ~duplicate & (runtime < 0)
    bad_procs = ~duplicate & ~bad_runtime & (procs <= 0)
    too_wide = ~duplicate & ~bad_runtime & ~bad_procs & (procs > machine_procs)
    for reason, mask in (
        ("duplicate_job_id", duplicate),
        ("runtime<0", bad_runtime),
        ("procs<=0", bad_procs),
        ("procs>machine", too_wide),
    ):
        count = int(mask.sum())
        if count:
            dropped[reason] = count
    keep = ~(duplicate | bad_runtime | bad_procs | too_wide)
    if not keep.any():
        _no_jobs(trace, machine_procs, dropped)

    submit = trace["submit"].astype(np.float64)
    job_id = trace["job_id"].astype(np.int64)
    order = np.flatnonzero(keep)
    order = order[np.lexsort((job_id[order], submit[order]))]
    machine = describe_machine(
        trace, int(machine_procs), keep, cores_per_node=cores_per_node, whole_node=whole_node
    )
    requests = node_requests(trace, machine).subset(order)
    # p~ of 0 with p == 0 is legal (zero-length job); keep p~ >= p only through the kill rule.
    extra_names = ("group", "app", "queue", "partition", "status", "wait")
    return Workload(
        job_id=job_id[order],
        submit=submit[order],
        runtime=runtime[order],
        procs=procs[order],
        requested_time=requested_time[order],
        user=trace["user"][order].astype(np.int64),
        machine_procs=int(machine_procs),
        name=trace.name,
        dropped=dropped,
        extra={k: trace[k][order] for k in extra_names},
        machine=machine,
        requests=requests,
    )


def _no_jobs(trace: Trace, machine_procs: int, dropped: dict[str, int]) -> None:
    """Raise: a trace with no usable job would give an empty run with all-NaN metrics."""
    where = trace.source or trace.name or "trace"
    if len(trace) == 0:
        skipped = f" ({sum(trace.skipped.values())} lines skipped: {trace.skipped})" if trace.skipped else ""
        raise TraceFormatError(
            f"the trace has no jobs{skipped}",
            where=where,
            fix="check that it is the right file; SWF needs one line of 18 numbers per job",
        )
    reasons = ", ".join(f"{count} {reason}" for reason, count in dropped.items())
    fix = "check the trace and its MaxProcs header"
    if "procs>machine" in dropped:
        fix = f"the machine has {machine_procs} processors: give the real size with --procs N"
    raise TraceFormatError(
        f"none of the trace's {len(trace)} jobs is usable (dropped: {reasons})", where=where, fix=fix
    )
