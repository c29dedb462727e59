"""The node pass's grouping of pending requests as it was before the request codes
(rush.core.request_codes): each pass builds every job's shape tuple and numbers the shapes
itself. The reference the kept codes are compared with (tests/planner/test_request_codes.py)."""

from __future__ import annotations

import operator

import numpy as np

from rush.core.node_pool import NodePool, NodeRequests
from rush.core.node_view import MachineCounts, request_problem, requests_of
from rush.core.resources import Request


def fresh_requests(
    job_id: np.ndarray, procs: np.ndarray, request: tuple, pool: NodePool, partitions: dict[str, int]
) -> tuple[dict[int, str], NodeRequests]:
    """Why each infeasible job can never run here, and every job's request arrays (main's
    ``rush.core.nodes_snapshot._requests`` at e2f9245, over the three columns it reads)."""
    shape = operator.attrgetter("nodes", "cores_per_node", "gpus_per_node", "exclusive", "partition")
    code_of: dict[tuple | None, int] = {}
    code = np.fromiter(
        (code_of.setdefault(None if r is None else shape(r), len(code_of)) for r in request),
        dtype=np.int64,
        count=len(request),
    )
    anywhere = np.fromiter((s is None or s[0] == 0 for s in code_of), dtype=np.bool_, count=len(code_of))
    masked = np.where(anywhere[code], procs, 0)
    by_key = np.lexsort((masked, code))
    new = np.ones(len(by_key), dtype=np.bool_)
    new[1:] = (np.diff(code[by_key]) != 0) | (np.diff(masked[by_key]) != 0)
    first = by_key[new].tolist()
    inverse = np.empty(len(by_key), dtype=np.int64)
    inverse[by_key] = np.cumsum(new) - 1
    distinct = [request[j] for j in first]
    distinct_procs = procs[first].tolist()
    machine = MachineCounts(pool, partitions)
    problems = [
        request_problem(r if r is not None else Request(0, p), p, machine)
        for r, p in zip(distinct, distinct_procs, strict=True)
    ]
    bad = np.array([p is not None for p in problems], dtype=np.bool_)
    infeasible = {
        k: f"job {int(job_id[k])} {problems[inverse[k]]}" for k in np.flatnonzero(bad[inverse]).tolist()
    }
    rows = requests_of(distinct, np.array(distinct_procs, dtype=np.int64), partitions)
    return infeasible, NodeRequests(*(column[inverse] for column in rows))
