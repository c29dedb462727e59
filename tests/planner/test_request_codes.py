"""The pending requests' codes, read with the rows and kept with them between cycles
(rush.core.request_codes, PendingColumns.request_code), against the node pass's grouping as it
was before them (each pass numbering the shapes itself: tests/planner/request_codes_reference.py):
over random cycles of arrivals, departures and changed requests, with request fields of mixed
but equal types (1, 1.0, True) and out-of-range values whose words print them, unknown
partitions and no request, the same infeasible jobs and words (in the same order) and the same
request arrays; also with the code table emptied between cycles (equal shapes under two codes),
and the core's decisions from the kept rows equal its decisions from the jobs read afresh."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from rush.core import CoreConfig, PendingJob, Snapshot
from rush.core.job_columns import pending_columns
from rush.core.node_view import node_pool, partition_index
from rush.core.nodes_snapshot import _requests
from rush.core.request_codes import UNCODED, forget_codes, request_codes
from rush.core.resources import Node, Request
from rush.core.schedule import schedule
from rush.planner.snapshot_columns import KeptColumns, KeptRows
from tests.planner.live_cycles import assert_same_decisions
from tests.planner.request_codes_reference import fresh_requests

NODES = (
    *(Node(f"c{i}", 8, partitions=("batch",)) for i in range(6)),
    *(Node(f"g{i}", 8, gpus=2, partitions=("gpu", "batch")) for i in range(3)),
)
# Values equal across types, and some out of range (their words print the value as given).
NODE_COUNTS = (0, 1, 2, 1.0, True, False, 0.0, -1, 20, 2**70)
CORES = (1, 4, 1.0, True, 0, 0.0, False, 9, -3)
GPUS = (0, 1, 0.0, False, True, -1, 3)
PARTITIONS = ("", "batch", "gpu", "nowhere")


def random_request(rng: np.random.Generator) -> Request | None:
    if rng.random() < 0.2:
        return None
    return Request(
        NODE_COUNTS[rng.integers(len(NODE_COUNTS))],
        CORES[rng.integers(len(CORES))],
        GPUS[rng.integers(len(GPUS))],
        bool(rng.integers(2)) if rng.random() < 0.5 else int(rng.integers(2)),
        PARTITIONS[rng.integers(len(PARTITIONS))],
    )


def new_job(rng: np.random.Generator, job_id: int) -> PendingJob:
    return PendingJob(
        job_id, float(rng.integers(0, 1_000)), int(rng.integers(1, 40)), 600.0, request=random_request(rng)
    )


def cycles(seed: int, count: int):
    """The pending jobs of ``count`` cycles: arrivals, departures, changed requests and
    processor counts, another order now and then; unchanged jobs keep their objects."""
    rng = np.random.default_rng(seed)
    jobs = [new_job(rng, k) for k in range(1, int(rng.integers(20, 120)))]
    next_id = len(jobs) + 1
    for _ in range(count):
        jobs = [j for j in jobs if rng.random() > 0.1]
        for k in range(len(jobs)):
            if rng.random() < 0.1:
                jobs[k] = replace(jobs[k], request=random_request(rng))
            elif rng.random() < 0.05:
                jobs[k] = replace(jobs[k], procs=int(rng.integers(1, 40)))
        for _ in range(int(rng.integers(0, 15))):
            jobs.append(new_job(rng, next_id))
            next_id += 1
        if rng.random() < 0.3:
            jobs = [jobs[k] for k in rng.permutation(len(jobs))]
        yield tuple(jobs)


def machine():
    partitions = partition_index(NODES)
    return node_pool(NODES, np.zeros((len(NODES), 2), dtype=np.int64), partitions), partitions


@pytest.mark.parametrize("forget", [False, True], ids=["kept-table", "table-emptied"])
@pytest.mark.parametrize("seed", range(25))
def test_kept_codes_group_requests_as_the_fresh_pass(seed: int, forget: bool) -> None:
    rows = KeptRows(pending_columns)
    pool, partitions = machine()
    for jobs in cycles(seed, 10):
        if forget:
            forget_codes()
        kept = rows.update(jobs)
        fresh = pending_columns(jobs)
        want_infeasible, want = fresh_requests(fresh.job_id, fresh.procs, fresh.request, pool, partitions)
        for columns in (kept, fresh):
            infeasible, got = _requests(columns, pool, partitions)
            assert list(infeasible.items()) == list(want_infeasible.items())
            for name in want._fields:
                a, b = getattr(got, name), getattr(want, name)
                assert a.dtype == b.dtype, name
                np.testing.assert_array_equal(a, b, err_msg=name)
        assert want_infeasible  # (the generator makes infeasible requests every cycle)


@pytest.mark.parametrize("seed", range(8))
def test_decisions_from_kept_rows_equal_decisions_from_the_jobs(seed: int) -> None:
    kept = KeptColumns()
    config = CoreConfig(backfill="easy" if seed % 2 else "conservative")
    for k, jobs in enumerate(cycles(100 + seed, 6)):
        if k % 2:
            forget_codes()
        snapshot = Snapshot(5_000.0, 72, 72, jobs, (), nodes=NODES)
        columns = kept.update(snapshot.pending, snapshot.running)
        assert_same_decisions(
            schedule(replace(snapshot, columns=columns), config), schedule(snapshot, config)
        )


def test_equal_codes_are_equal_shapes_and_the_sign_is_cores_anywhere() -> None:
    forget_codes()
    requests = (None, Request(0, 4), Request(2, 4), Request(2.0, 4.0), Request(2, 4, partition="gpu"), None)
    first = request_codes(requests)
    assert first.tolist()[0] == first.tolist()[5] < 0 and first[1] < 0 < first[2]
    assert first[2] == first[3] != first[4]
    assert request_codes(requests).tolist() == first.tolist()  # kept while the table is
    forget_codes()
    again = request_codes(requests)
    assert again[2] != first[2] and again[2] not in first.tolist()  # never given twice


def test_a_request_that_cannot_be_coded_fails_the_pass_as_before() -> None:
    jobs = (PendingJob(1, 0.0, 4, 60.0, request=Request(1, 4, partition=["batch"])),)  # type: ignore[arg-type]
    columns = pending_columns(jobs)
    assert columns.request_code.tolist() == [UNCODED]
    pool, partitions = machine()
    with pytest.raises(TypeError, match="unhashable"):
        fresh_requests(columns.job_id, columns.procs, columns.request, pool, partitions)
    with pytest.raises(TypeError, match="unhashable"):
        _requests(columns, pool, partitions)
