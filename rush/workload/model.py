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
* jobs with p < 0, q <= 0 or q > machine size are dropped, counted by reason;
* a job with p > p~ is killed at p~ (by the simulator);
* machine size = ``MaxProcs`` header, else the largest q; a caller may override it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

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
        )

    @property
    def max_procs(self) -> int | None:
        """``MaxProcs`` from the header, if it is a positive integer."""
        for key in ("MaxProcs", "MaxNodes"):
            raw = self.header.get(key, "").strip().split(" ")[0]
            if raw.isdigit() and int(raw) > 0:
                return int(raw)
        return None

    @property
    def unix_start_time(self) -> int | None:
        raw = self.header.get("UnixStartTime", "").strip()
        return int(raw) if raw.lstrip("-").isdigit() else None


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
        )


def workload_from_trace(trace: Trace, machine_procs: int | None = None) -> Workload:
    """Apply the trace semantics (module docstring) and return a sorted :class:`Workload`."""
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
    bad_runtime = runtime < 0
    bad_procs = ~bad_runtime & (procs <= 0)
    too_wide = ~bad_runtime & ~bad_procs & (procs > machine_procs)
    for reason, mask in (
        ("runtime<0", bad_runtime),
        ("procs<=0", bad_procs),
        ("procs>machine", too_wide),
    ):
        count = int(mask.sum())
        if count:
            dropped[reason] = count
    keep = ~(bad_runtime | bad_procs | too_wide)

    submit = trace["submit"].astype(np.float64)
    job_id = trace["job_id"].astype(np.int64)
    order = np.flatnonzero(keep)
    order = order[np.lexsort((job_id[order], submit[order]))]
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
    )
