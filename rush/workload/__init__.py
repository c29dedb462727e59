"""Workloads: the job model, SWF and Slurm accounting I/O, the trace catalogue, generators.

Names are imported on first use (PEP 562), so ``import rush.workload.model`` does not pay
for numba (SWF fast path) or requests (catalogue downloads).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "SWF_FIELDS": "model",
    "Trace": "model",
    "Workload": "model",
    "workload_from_trace": "model",
    "Machine": "machine",
    "NodeRequests": "machine",
    "read_swf": "swf",
    "write_swf": "swf",
    "SWFTrace": "swf",
    "read_sacct": "sacct",
    "resample_weekly": "resample",
    "user_weekly_slices": "resample",
    "lublin_generate": "lublin",
    "fetch": "catalogue",
    "lookup": "catalogue",
    "resolve_trace": "catalogue",
    "load_trace": "catalogue",
}
__all__ = [
    "Machine",
    "NodeRequests",
    "SWFTrace",
    "SWF_FIELDS",
    "Trace",
    "Workload",
    "fetch",
    "load_trace",
    "lookup",
    "lublin_generate",
    "read_sacct",
    "read_swf",
    "resample_weekly",
    "resolve_trace",
    "user_weekly_slices",
    "workload_from_trace",
    "write_swf",
]

if TYPE_CHECKING:
    from rush.workload.catalogue import fetch, load_trace, lookup, resolve_trace
    from rush.workload.lublin import lublin_generate
    from rush.workload.machine import Machine, NodeRequests
    from rush.workload.model import SWF_FIELDS, Trace, Workload, workload_from_trace
    from rush.workload.resample import resample_weekly, user_weekly_slices
    from rush.workload.sacct import read_sacct
    from rush.workload.swf import SWFTrace, read_swf, write_swf


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'rush.workload' has no attribute {name!r}")
    return getattr(import_module(f"rush.workload.{_EXPORTS[name]}"), name)
