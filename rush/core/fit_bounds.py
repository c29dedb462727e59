"""Where a fit search may begin: lower bounds from the fits already found (the start
projection, :mod:`rush.core.start_estimates`).

Booking only takes processors away, so the earliest time at which ``k`` processors stay free
for ``d`` never moves earlier as jobs are booked, and it is no earlier than that of a job that
asks for no more processors and no longer: if (k, d) fits at t, so does any (k' <= k, d' <= d).
A fit already found for a smaller-or-equal request is therefore a lower bound for the next
request, and its search may start there instead of at the profile's beginning: without this the
search walks past every short gap in the booked profile, which makes the projection O(n²).

The bounds are kept by size class and duration class in a two-dimensional Fenwick tree of
maxima (prefix maximum over "no larger, no longer" classes in O(log² classes)). Classes are the
exact processor counts and durations of the queue when there are few of them; otherwise they
are quantile ranges, and only strictly smaller classes bound a request (a job in the same range
may ask for more). Column 0 holds, per size class, the first time with that many processors free
at all, which bounds every duration.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

MAX_SIZE_CLASSES = 1024
MAX_DURATION_CLASSES = 1024


class FitBounds(NamedTuple):
    """The tree, and for each job of the queue its classes (rows: size, columns: duration)."""

    tree: np.ndarray  # float64[size classes, 1 + duration classes]: Fenwick tree of maxima
    row: np.ndarray  # int64[jobs]: the job's size class (where its fit is recorded)
    row_bound: np.ndarray  # int64[jobs]: the last size class that bounds it (-1: none)
    column: np.ndarray  # int64[jobs]: the job's duration class, from 1 (where its fit goes)
    column_bound: np.ndarray  # int64[jobs]: the last duration column that bounds it (0: none)


@njit(cache=True)
def _classes(values: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray]:
    """Each value's class and the last class that bounds it: exact ranks when there are at
    most ``most`` distinct values (a class bounds itself), otherwise quantile ranges (only the
    classes below)."""
    distinct = np.unique(values)
    if len(distinct) <= most:
        rank = np.searchsorted(distinct, values)
        return rank, rank.copy()
    edges = np.empty(most - 1, dtype=values.dtype)
    for c in range(most - 1):
        edges[c] = distinct[(c + 1) * len(distinct) // most]
    rank = np.searchsorted(edges, values, side="right")
    return rank, rank - 1


@njit(cache=True)
def new_bounds(procs: np.ndarray, duration: np.ndarray, start: float) -> FitBounds:
    """Bounds for jobs of ``procs`` processors and ``duration`` seconds (one row each, in any
    order), every one ``start`` at first."""
    row, row_bound = _classes(procs, MAX_SIZE_CLASSES)
    column, column_bound = _classes(duration, MAX_DURATION_CLASSES)
    rows = int(row.max()) + 1 if len(row) else 1
    columns = int(column.max()) + 2 if len(column) else 2
    tree = np.full((rows, columns), start)
    return FitBounds(tree, row, row_bound, column + 1, column_bound + 1)


@njit(cache=True)
def _prefix_max(tree: np.ndarray, row: int, column: int, floor: float) -> float:
    best = floor
    r = row
    while r >= 0:
        c = column
        while c >= 0:
            if tree[r, c] > best:
                best = tree[r, c]
            c = (c & (c + 1)) - 1
        r = (r & (r + 1)) - 1
    return best


@njit(cache=True)
def _raise(tree: np.ndarray, row: int, column: int, t: float) -> None:
    r = row
    while r < tree.shape[0]:
        c = column
        while c < tree.shape[1]:
            if tree[r, c] < t:
                tree[r, c] = t
            c = c | (c + 1)
        r = r | (r + 1)


@njit(cache=True)
def first_free_bound(bounds: FitBounds, k: int, floor: float) -> float:
    """The latest first-free time of a size class bounding job ``k``'s (or ``floor``)."""
    return _prefix_max(bounds.tree, bounds.row_bound[k], 0, floor)


@njit(cache=True)
def fit_bound(bounds: FitBounds, k: int, floor: float) -> float:
    """The latest fit (or first-free time) of the classes bounding job ``k``'s (or ``floor``)."""
    return _prefix_max(bounds.tree, bounds.row_bound[k], bounds.column_bound[k], floor)


@njit(cache=True)
def record_fit(bounds: FitBounds, k: int, fit: float) -> None:
    _raise(bounds.tree, bounds.row[k], bounds.column[k], fit)


@njit(cache=True)
def record_first_free(bounds: FitBounds, k: int, first_free: float) -> None:
    _raise(bounds.tree, bounds.row[k], 0, first_free)
