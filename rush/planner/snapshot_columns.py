"""The pass's job columns, kept between cycles: a cycle rewrites only the rows that changed.

A live queue of 10 000 pending jobs changes by a few jobs per cycle (arrivals, ends, starts, a
new estimate), yet reading every job object into the core's columns
(:mod:`rush.core.job_columns`) cost more than the compiled pass. The planner keeps one row per
job here, keyed by job id, and gives the core the columns in the snapshot's order
(:attr:`rush.core.snapshot.Snapshot.columns`):

* a job whose object is the very one of the last cycle keeps its row (whoever gives the jobs
  gives the same object back when nothing about the job changed, so identity is the test for
  "unchanged");
* a new job (arrival, or a pending job that started: it arrives among the running) gets a
  row, a changed one has its row rewritten, both read by the core's own reader;
* a job no longer listed (ended, started, cancelled) frees its row for the next arrival.

The snapshot builder (:mod:`rush.planner.snapshot_builder`) keeps its pending rows with a
:class:`KeptRows` of its own, over its per-job entries (the RJMS job and what the builder made of
it) instead of core jobs, and writes them straight from the read; :class:`KeptColumns` then
takes those columns as they are (:class:`~rush.core.job_columns.PendingRows`) and keeps only the
running jobs' rows.

What a cycle costs beyond the changed rows is a few C-level walks over the job list (ids,
identity tests) and one gather per column. The columns equal those the core reads from the
objects (``tests/planner/test_snapshot_columns.py``: random event sequences, and the decisions).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Sequence
from itertools import repeat
from typing import Generic, TypeVar

import numpy as np

from rush.core.job_columns import (
    PendingColumns,
    PendingRows,
    RunningColumns,
    SnapshotColumns,
    pending_columns,
    running_columns,
)

Columns = TypeVar("Columns", PendingColumns, RunningColumns)
_job_id = operator.attrgetter("job_id")


def _job_ids(jobs: Sequence) -> list[int]:
    return list(map(_job_id, jobs))


class KeptRows(Generic[Columns]):
    """One kind of job's rows (pending or running), kept between cycles."""

    def __init__(
        self, read: Callable[[Sequence], Columns], ids: Callable[[Sequence], list[int]] | None = None
    ) -> None:
        self._read = read
        # The job ids of a list of the objects read (default: their ``job_id``).
        self._ids = ids or _job_ids
        self._kind = type(read([]))
        self._row: dict[int, int] = {}  # job id -> row
        # Row -> the job object it was read from; the last slot stays None, for the rows of
        # new jobs (-1) to compare against.
        self._obj: list = [None]
        self._free: list[int] = []
        self._stamp = np.zeros(0, dtype=np.int64)  # the cycle that last listed the row's job
        self._cycle = 0
        self._arrays: dict[str, np.ndarray] = {}
        self._objects: dict[str, list] = {}  # object-valued fields (requests), row by row
        self.rewritten = 0  # rows read from objects by the last update (arrivals and changes)

    def __len__(self) -> int:
        return len(self._row)

    def update(self, jobs: Sequence) -> Columns:
        """The columns of ``jobs``, in their order; rows of jobs not listed are freed."""
        self._cycle += 1
        n = len(jobs)
        ids = self._ids(jobs)
        rows = np.fromiter(map(self._row.get, ids, repeat(-1)), dtype=np.int64, count=n)
        same = np.fromiter(map(operator.is_, jobs, map(self._obj.__getitem__, rows.tolist())), bool, n)
        known = rows[rows >= 0]
        self._stamp[known] = self._cycle
        self._forget(np.flatnonzero((self._stamp != self._cycle) & (self._stamp > 0)))
        changed = np.flatnonzero(~same)
        self.rewritten = len(changed)
        if len(changed):
            rows[changed] = self._write(changed, rows, jobs, ids)
        return self._gather(rows)

    def _forget(self, gone: np.ndarray) -> None:
        rows = gone.tolist()
        for row, job_id in zip(rows, self._ids([self._obj[row] for row in rows]), strict=True):
            if self._row.get(job_id) == row:  # (a job id listed twice: the core refuses the pass)
                del self._row[job_id]
            self._obj[row] = None
            for values in self._objects.values():
                values[row] = None
        self._stamp[gone] = 0
        self._free.extend(gone.tolist())

    def _write(self, changed: np.ndarray, rows: np.ndarray, jobs: Sequence, ids: list[int]) -> np.ndarray:
        """Read the changed and new jobs into rows (new jobs take free rows, then new ones at the
        end): their rows."""
        which = changed.tolist()
        picked = jobs if len(which) == len(jobs) else [jobs[i] for i in which]  # all: a first cycle
        fresh = self._read(picked)
        target = rows[changed]
        new = np.flatnonzero(target < 0)
        if len(new):
            reused = [self._free.pop() for _ in range(min(len(new), len(self._free)))]
            target[new] = np.concatenate(
                [np.array(reused, dtype=np.int64), self._grow(len(new) - len(reused))]
            )
        where = target.tolist()
        self._row.update(zip(map(ids.__getitem__, which), where, strict=True))
        # Rows in one run (a first cycle, a burst of arrivals at the end): written as slices.
        run = slice(where[0], where[-1] + 1) if where and np.all(np.diff(target) == 1) else None
        if run is not None:
            self._obj[run] = picked
        else:
            for row, job in zip(where, picked, strict=True):
                self._obj[row] = job
        self._stamp[target] = self._cycle
        for field in dataclasses.fields(fresh):
            value = getattr(fresh, field.name)
            if isinstance(value, np.ndarray):
                if field.name not in self._arrays:
                    self._arrays[field.name] = np.zeros(len(self._stamp), dtype=value.dtype)
                self._arrays[field.name][target] = value
            else:
                kept = self._objects.setdefault(field.name, [None] * len(self._stamp))
                if run is not None:
                    kept[run] = value
                else:
                    for row, item in zip(where, value, strict=True):
                        kept[row] = item
        return target

    def _grow(self, count: int) -> np.ndarray:
        """``count`` new rows at the end (the arrays double when full)."""
        first = len(self._obj) - 1
        if first + count > len(self._stamp):
            size = max(16, 2 * len(self._stamp), first + count)
            self._stamp = np.concatenate([self._stamp, np.zeros(size - len(self._stamp), dtype=np.int64)])
            for name, array in self._arrays.items():
                self._arrays[name] = np.concatenate([array, np.zeros(size - len(array), dtype=array.dtype)])
            for values in self._objects.values():
                values.extend([None] * (size - len(values)))
        self._obj[-1:] = [None] * (count + 1)  # the last slot stays the None new jobs compare with
        return np.arange(first, first + count, dtype=np.int64)

    def _gather(self, rows: np.ndarray) -> Columns:
        if not self._arrays:  # nothing read yet (an empty queue): the reader's own empty columns
            return self._read([])
        taken: dict[str, object] = {name: array[rows] for name, array in self._arrays.items()}
        for name, values in self._objects.items():
            picked = operator.itemgetter(*rows.tolist())(values) if len(rows) else ()
            taken[name] = picked if len(rows) != 1 else (picked,)
        return self._kind(**taken)


class KeptColumns:
    """The snapshot's pending and running jobs' columns, kept between the planner's cycles."""

    def __init__(self) -> None:
        self.pending: KeptRows[PendingColumns] = KeptRows(pending_columns)
        self.running: KeptRows[RunningColumns] = KeptRows(running_columns)

    def update(self, pending: Sequence, running: Sequence) -> SnapshotColumns:
        """The columns of this cycle's jobs (:attr:`rush.core.snapshot.Snapshot.columns`); pending
        jobs given as columns (:class:`~rush.core.job_columns.PendingRows`: the snapshot
        builder keeps their rows itself) are taken as they are."""
        if isinstance(pending, PendingRows):
            return SnapshotColumns(pending.columns, self.running.update(running))
        return SnapshotColumns(self.pending.update(pending), self.running.update(running))
