"""Pending requests as integer codes, computed when a job's row is read and kept with the row.

The node pass groups the pending jobs by their request's shape (nodes, cores and GPUs per node,
exclusive, partition) to check and convert each distinct request once
(:func:`rush.core.nodes_snapshot.on_nodes`). Building that shape tuple and looking it up for
each of 10 000 jobs every pass cost more than the rest of the node view; a code read with the
row (:attr:`rush.core.job_columns.PendingColumns.request_code`) is kept while the row is, so a
pass reads one integer column instead.

A code stands for one shape: one process-wide table gives each new shape the next number of a
counter that never goes back, so no code is ever given to two shapes (equal codes: equal
shapes). The table is emptied when it holds too many shapes; a shape read again afterwards gets
a new code, so rows read before and after can hold two codes for one shape, which the pass
merges again (it groups by shape, the codes only save it the per-job lookups). The code is
negative where the request asks for cores anywhere (no request, or no node count): there the
job's processor count is part of what the pass checks. A request whose shape cannot be read or
looked up (not a request, a field that cannot be a key) is coded 0, :data:`UNCODED`: the pass
then groups that pass's requests itself, as it did before codes, and fails where it failed.
"""

from __future__ import annotations

import operator
import threading
from itertools import compress, repeat

import numpy as np

# The request fields the pass reads (rush.core.resources.Request), as one tuple.
request_shape = operator.attrgetter("nodes", "cores_per_node", "gpus_per_node", "exclusive", "partition")

# Shapes the table holds before it is emptied (a site's queue has a few hundred).
MAX_SHAPES = 65_536
# The code of "no request" (cores anywhere: negative).
NO_REQUEST = -1
# The code of every request of a read where one's shape could not be read or looked up.
UNCODED = 0

_codes: dict[tuple | None, int] = {None: NO_REQUEST}
_next = [2]  # the next code's magnitude (never given twice)
_lock = threading.Lock()  # (two threads reading rows must not give one number to two shapes)


def shape_of(request) -> tuple | None:
    """The request's shape as the pass compares requests (None: no request)."""
    return None if request is None else request_shape(request)


def request_codes(requests: tuple) -> np.ndarray:
    """Each request's code (equal codes: equal shapes; negative: cores anywhere)."""
    n = len(requests)
    if not n:
        return np.zeros(0, dtype=np.int64)
    try:
        return np.array(_looked_up(requests), dtype=np.int64)
    except Exception:  # (hostile input: the pass's own grouping meets it, and fails as it did)
        return np.full(n, UNCODED, dtype=np.int64)


def _looked_up(requests: tuple) -> list[int]:
    if any(map(operator.is_, requests, repeat(None))):
        shapes = list(map(shape_of, requests))
    else:  # (the usual queue: one C-level walk)
        shapes = list(map(request_shape, requests))
    with _lock:
        if len(_codes) > MAX_SHAPES:
            _codes.clear()
            _codes[None] = NO_REQUEST
        got = list(map(_codes.get, shapes))
        if None in got:  # new shapes: numbered once each, then looked up again
            for shape in dict.fromkeys(compress(shapes, map(operator.is_, got, repeat(None)))):
                magnitude = _next[0]
                _next[0] += 1
                _codes[shape] = -magnitude if shape[0] == 0 else magnitude
            got = list(map(_codes.__getitem__, shapes))
    return got


def forget_codes() -> None:
    """Empty the table (as when it grows past :data:`MAX_SHAPES`): rows read afterwards get new
    codes for the shapes already seen."""
    with _lock:
        _codes.clear()
        _codes[None] = NO_REQUEST
