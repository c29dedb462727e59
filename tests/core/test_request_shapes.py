"""The pending requests' shapes as a kept column (issue 31 item 3, round 30, lever S in
docs/research.md): the node pass's distinct requests found from the rows' shape codes give the
infeasible reasons and the request arrays that reading every request gives (the walk, still the
path for rows without a code), over reads made in different passes, taken and joined, with a
full registry, and for hostile requests."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import rush.core.job_columns as job_columns
from rush.core.job_columns import NO_SHAPE, PendingColumns, pending_columns
from rush.core.node_view import node_pool, partition_index
from rush.core.nodes_snapshot import _requests
from rush.core.resources import Node, Request
from rush.core.snapshot import PendingJob

NODES = tuple(
    Node(
        f"n{k}",
        cores=32 if k < 12 else 64,
        gpus=4 if k % 5 == 0 else 0,
        partitions=("batch",) if k < 14 else ("batch", "gpu"),
        free_cores=None if k % 3 else 8,
    )
    for k in range(20)
)
PARTITIONS = ("", "batch", "gpu", "nosuch")
ONE = (1, True, 1.0)  # equal as keys: one shape


def _request(rng: np.random.Generator) -> Request | None:
    if rng.random() < 0.15:
        return None
    nodes = int(rng.choice([0, 0, 1, 2, 3, 25]))
    return Request(
        nodes=ONE[int(rng.integers(0, 3))] if nodes == 1 else nodes,
        cores_per_node=int(rng.choice([1, 4, 16, 32, 100])),
        gpus_per_node=int(rng.choice([0, 0, 1, 8])),
        exclusive=bool(rng.random() < 0.2),
        partition=str(rng.choice(PARTITIONS)),
    )


def _jobs(rng: np.random.Generator, n: int, first: int) -> list[PendingJob]:
    return [
        PendingJob(first + k, 100.0 + k, int(rng.integers(1, 200)), 3600.0, request=_request(rng))
        for k in range(n)
    ]


def _walked(columns: PendingColumns) -> PendingColumns:
    """The same rows without shape codes: the node pass reads every request (the walk)."""
    return dataclasses.replace(columns, request_shape=np.full(len(columns.job_id), NO_SHAPE, dtype=np.int64))


def _both(columns: PendingColumns):
    pool = node_pool(NODES, np.zeros((len(NODES), 2), dtype=np.int64), partition_index(NODES))
    partitions = partition_index(NODES)
    return _requests(columns, pool, partitions), _requests(_walked(columns), pool, partitions)


def _same(got, want) -> None:
    (infeasible, requests), (want_infeasible, want_requests) = got, want
    assert list(infeasible.items()) == list(want_infeasible.items())
    for a, b in zip(requests, want_requests, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("seed", range(10))
def test_shape_codes_give_what_reading_every_request_gives(seed):
    rng = np.random.default_rng(seed)
    reads = [pending_columns(_jobs(rng, int(rng.integers(1, 300)), 1000 * r)) for r in range(4)]
    assert all(c.request_shape.min() >= 0 for c in reads)
    for columns in reads:
        _same(*_both(columns))
    # Rows read in different passes, joined and reordered (as kept rows are gathered).
    joined = reads[0]
    for columns in reads[1:]:
        joined = PendingColumns.concatenate(joined, columns)
    order = rng.permutation(len(joined.job_id))
    _same(*_both(joined.take(order)))
    # Equal shapes (1, True, 1.0 node counts among them) share one code; other shapes do not.
    shapes = [None if r is None else job_columns.request_shape(r) for r in joined.request]
    codes = joined.request_shape.tolist()
    pairs = rng.integers(0, len(codes), (200, 2)).tolist()
    for a, b in pairs:
        assert (codes[a] == codes[b]) == (shapes[a] == shapes[b])


def test_a_full_registry_leaves_the_new_shapes_to_the_walk(monkeypatch):
    rng = np.random.default_rng(99)
    before = pending_columns(_jobs(rng, 200, 1))
    monkeypatch.setattr(job_columns, "MAX_SHAPES", len(job_columns._SHAPE_CODES))
    fresh = [
        PendingJob(5000 + k, 1.0, 4, 60.0, request=Request(nodes=1, cores_per_node=7, partition=f"p{k}"))
        for k in range(3)
    ]
    after = pending_columns([*_jobs(rng, 50, 3000), *fresh])
    assert after.request_shape[-3:].tolist() == [NO_SHAPE] * 3
    joined = PendingColumns.concatenate(before, after)
    _same(*_both(joined))


def test_requests_that_cannot_be_keys_are_walked_as_before():
    jobs = [
        PendingJob(1, 1.0, 4, 60.0, request=Request(nodes=1, cores_per_node=4)),
        PendingJob(2, 1.0, 4, 60.0, request=Request(nodes=1, cores_per_node=4, partition=["batch"])),
    ]
    columns = pending_columns(jobs)  # read without a failure
    assert columns.request_shape.tolist() == [NO_SHAPE, NO_SHAPE]
    pool = node_pool(NODES, np.zeros((len(NODES), 2), dtype=np.int64), partition_index(NODES))
    with pytest.raises(TypeError):  # as the walk has always refused it
        _requests(columns, pool, partition_index(NODES))
