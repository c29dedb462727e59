"""A snapshot's jobs as columns, read in one pass over the job objects.

A live queue holds up to 100 000 pending jobs; reading each attribute with its own Python
loop cost more than the scheduling pass itself. Here each column is one ``numpy.fromiter``
over ``operator.attrgetter`` (in C), read once per pass and reused; each column's field
declares its type and what stands for a None, and one reader reads both kinds. Rows
can be taken or reordered with :meth:`PendingColumns.take` without touching the objects.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Sequence
from itertools import repeat
from typing import Any, NamedTuple, TypeVar

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
    if np.isnan(out).any():
        # Which NaNs were None: one C-level walk (all of them, for a column of estimates left to
        # the requests).
        none = np.fromiter(map(operator.is_, values, repeat(None)), dtype=np.bool_, count=len(values))
        out[none] = default[none] if isinstance(default, np.ndarray) else default
    return out


def _read(dtype: type, none: str | float | None = None) -> Any:
    """A column's field: read from each job's attribute of the field's name as ``dtype``;
    ``none``: what stands for a None (another column's name, or a value); ``object``: the
    values as they are, in a tuple."""
    return dataclasses.field(metadata={"dtype": dtype, "none": none})


@dataclasses.dataclass(frozen=True)
class _JobColumns:
    """The columns pending and running jobs both have."""

    job_id: np.ndarray = _read(np.int64)
    procs: np.ndarray = _read(np.int64)
    requested_time: np.ndarray = _read(np.float64)
    # The policy's runtime estimate; the request where the job has none.
    estimate: np.ndarray = _read(np.float64, none="requested_time")
    runtime_class: np.ndarray = _read(np.int64)
    idempotent: np.ndarray = _read(np.bool_)
    requeues: np.ndarray = _read(np.int64)


@dataclasses.dataclass(frozen=True)
class PendingColumns(_JobColumns):
    submit: np.ndarray = _read(np.float64)
    variable: np.ndarray = _read(np.bool_)
    skips: np.ndarray = _read(np.int64)
    reserved_at: np.ndarray = _read(np.float64)
    rjms_priority: np.ndarray = _read(np.float64)
    # Unknown (None): rush.core.names.NEUTRAL_FAIRSHARE.
    fairshare: np.ndarray = _read(np.float64, none=NEUTRAL_FAIRSHARE)
    request: tuple = _read(object)

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
class RunningColumns(_JobColumns):
    start: np.ndarray = _read(np.float64)

    def take(self, rows: np.ndarray) -> RunningColumns:
        return RunningColumns(**{f.name: getattr(self, f.name)[rows] for f in dataclasses.fields(self)})


class SnapshotColumns(NamedTuple):
    """A snapshot's pending and running jobs' columns, row for row in its ``pending`` and
    ``running`` order (:attr:`rush.core.snapshot.Snapshot.columns`)."""

    pending: PendingColumns
    running: RunningColumns


Columns = TypeVar("Columns", bound=_JobColumns)


def _columns(kind: type[Columns], jobs: Sequence) -> Columns:
    """``kind``'s columns of ``jobs``, each read as its field declares."""
    read: dict = {}
    for f in dataclasses.fields(kind):
        dtype, none = f.metadata["dtype"], f.metadata["none"]
        if dtype is object:
            read[f.name] = _values(jobs, f.name)
        elif none is None:
            read[f.name] = _column(jobs, f.name, dtype)
        else:
            read[f.name] = _or_default(_values(jobs, f.name), read[none] if isinstance(none, str) else none)
    return kind(**read)


def snapshot_columns(pending: Sequence, running: Sequence) -> SnapshotColumns:
    """The columns of a snapshot's ``pending`` and ``running`` jobs, read from the objects."""
    return SnapshotColumns(pending_columns(pending), running_columns(running))


def pending_columns(jobs: Sequence) -> PendingColumns:
    """The columns of ``jobs`` (:class:`rush.core.snapshot.PendingJob`), in their order."""
    return _columns(PendingColumns, jobs)


def running_columns(jobs: Sequence) -> RunningColumns:
    """The columns of ``jobs`` (:class:`rush.core.snapshot.RunningJob`), in their order."""
    return _columns(RunningColumns, jobs)
