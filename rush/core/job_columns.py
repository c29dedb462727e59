"""A snapshot's jobs as columns, read in one pass over the job objects.

A live queue holds up to 100 000 pending jobs; reading each attribute with its own Python
loop cost more than the scheduling pass itself. Here each column is one ``numpy.fromiter``
over ``operator.attrgetter`` (in C), read once per pass and reused. Rows
can be taken or reordered with :meth:`PendingColumns.take` without touching the objects.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence

import numpy as np

from rush.core.names import NEUTRAL_FAIRSHARE


def _column(jobs: Sequence, name: str, dtype) -> np.ndarray:
    # attrgetter over map stays in C and makes no per-job tuple (which would wake the
    # garbage collector over a heap of 100 000 jobs).
    return np.fromiter(map(operator.attrgetter(name), jobs), dtype=dtype, count=len(jobs))


def _values(jobs: Sequence, name: str) -> tuple:
    return tuple(map(operator.attrgetter(name), jobs))


def _or_default(values: tuple, default: np.ndarray | float) -> np.ndarray:
    """``values`` as floats, a None replaced by ``default`` (a NaN given as such stays NaN, for
    the snapshot check to refuse)."""
    out = np.array(values, dtype=np.float64).reshape(len(values))
    nan = np.flatnonzero(np.isnan(out))
    if len(nan):
        none = nan[np.fromiter((values[i] is None for i in nan.tolist()), dtype=np.bool_, count=len(nan))]
        out[none] = default[none] if isinstance(default, np.ndarray) else default
    return out


@dataclasses.dataclass(frozen=True)
class PendingColumns:
    job_id: np.ndarray
    submit: np.ndarray
    procs: np.ndarray
    requested_time: np.ndarray
    # The policy's runtime estimate; the request where the job has none.
    estimate: np.ndarray
    runtime_class: np.ndarray
    idempotent: np.ndarray
    variable: np.ndarray
    skips: np.ndarray
    requeues: np.ndarray
    reserved_at: np.ndarray
    rjms_priority: np.ndarray
    # Unknown (None): rush.core.names.NEUTRAL_FAIRSHARE.
    fairshare: np.ndarray
    request: tuple

    def take(self, rows: np.ndarray) -> PendingColumns:
        """These columns' ``rows``, in that order."""
        picked = operator.itemgetter(*rows.tolist())(self.request) if len(rows) else ()
        request = picked if len(rows) != 1 else (picked,)
        arrays = {
            f.name: getattr(self, f.name)[rows] for f in dataclasses.fields(self) if f.name != "request"
        }
        return PendingColumns(**arrays, request=request)

    @staticmethod
    def concatenate(first: PendingColumns, second: PendingColumns) -> PendingColumns:
        arrays = {
            f.name: np.concatenate([getattr(first, f.name), getattr(second, f.name)])
            for f in dataclasses.fields(first)
            if f.name != "request"
        }
        return PendingColumns(**arrays, request=first.request + second.request)


@dataclasses.dataclass(frozen=True)
class RunningColumns:
    job_id: np.ndarray
    start: np.ndarray
    procs: np.ndarray
    requested_time: np.ndarray
    estimate: np.ndarray
    runtime_class: np.ndarray
    idempotent: np.ndarray
    requeues: np.ndarray

    def take(self, rows: np.ndarray) -> RunningColumns:
        return RunningColumns(**{f.name: getattr(self, f.name)[rows] for f in dataclasses.fields(self)})


def pending_columns(jobs: Sequence) -> PendingColumns:
    """The columns of ``jobs`` (:class:`rush.core.snapshot.PendingJob`), in their order."""
    requested_time = _column(jobs, "requested_time", np.float64)
    return PendingColumns(
        _column(jobs, "job_id", np.int64),
        _column(jobs, "submit", np.float64),
        _column(jobs, "procs", np.int64),
        requested_time,
        _or_default(_values(jobs, "estimate"), requested_time),
        _column(jobs, "runtime_class", np.int64),
        _column(jobs, "idempotent", np.bool_),
        _column(jobs, "variable", np.bool_),
        _column(jobs, "skips", np.int64),
        _column(jobs, "requeues", np.int64),
        _column(jobs, "reserved_at", np.float64),
        _column(jobs, "rjms_priority", np.float64),
        _or_default(_values(jobs, "fairshare"), NEUTRAL_FAIRSHARE),
        _values(jobs, "request"),
    )


def running_columns(jobs: Sequence) -> RunningColumns:
    """The columns of ``jobs`` (:class:`rush.core.snapshot.RunningJob`), in their order."""
    requested_time = _column(jobs, "requested_time", np.float64)
    return RunningColumns(
        _column(jobs, "job_id", np.int64),
        _column(jobs, "start", np.float64),
        _column(jobs, "procs", np.int64),
        requested_time,
        _or_default(_values(jobs, "estimate"), requested_time),
        _column(jobs, "runtime_class", np.int64),
        _column(jobs, "idempotent", np.bool_),
        _column(jobs, "requeues", np.int64),
    )
