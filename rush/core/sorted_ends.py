"""Sorting a pass's own starts' estimated ends in place, for EASY's shadow time.

A heap sort: no allocation, so the passes that call it are compiled without numba's runtime
(no reference counts, issue 31). The order among equal ends is free: the shadow time
(:func:`rush.core.easy.shadow_time`, :func:`rush.core.easy_nodes.node_shadow_time`) counts
every allocation that ends at the shadow time before it returns.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, _nrt=False)  # no reference counts: see rush.core.node_pool
def sort_ends(ends: np.ndarray, rows: np.ndarray, n: int) -> None:
    """Sort ``ends[:n]`` ascending in place, ``rows[:n]`` with them."""
    for first in range(n // 2 - 1, -1, -1):
        _sift_down(ends, rows, first, n)
    for last in range(n - 1, 0, -1):
        ends[0], ends[last] = ends[last], ends[0]
        rows[0], rows[last] = rows[last], rows[0]
        _sift_down(ends, rows, 0, last)


@njit(cache=True, _nrt=False, inline="always")
def _sift_down(ends: np.ndarray, rows: np.ndarray, k: int, n: int) -> None:
    while True:
        child = 2 * k + 1
        if child >= n:
            return
        if child + 1 < n and ends[child + 1] > ends[child]:
            child += 1
        if ends[k] >= ends[child]:
            return
        ends[k], ends[child] = ends[child], ends[k]
        rows[k], rows[child] = rows[child], rows[k]
        k = child
