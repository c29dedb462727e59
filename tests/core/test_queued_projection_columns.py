"""Rule L2 from its per-job inputs kept as pending columns equals the rule as it read the quantiles.

The pending columns carry what rule L2 needs of each queued job that does not depend on the pass
(:func:`rush.core.remaining_runtime.queued_projection_columns`: the quantiles' code, their upper
runtime, rule D2's shift, their set of levels), computed when the rows are read; a pass reads
those (:func:`queued_projection_from_columns`) and no quantile object. Checked against
``l2_reference`` (``tests/planner/l2_reference.py``), the rule as each pass computed it from the quantile objects before
(main at 1535d3b: per set of levels, D2 per set of levels, refusals in the order it checked
them), over random queues with every kind of quantiles (none, usable of two models, bad
levels, one too few, NaN, infinite, negative, no limit, D2 shifts), with the columns:

* read fresh from the jobs;
* kept by job between cycles (:class:`rush.planner.snapshot_columns.KeptRows`, as the planner
  keeps them): jobs leave, arrive, and change their quantiles, the rows are reused;
* taken in another order and concatenated (the pass's reorder and its requeued jobs);

and, end to end, ``schedule()``'s start estimates and notes over the builder's kept rows across
two cycles equal those over a tuple of the same core jobs read afresh.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.job_columns import PendingColumns, PendingRows, pending_columns
from rush.core.remaining_runtime import (
    queued_projection_from_columns,
    queued_projection_runtimes_of,
)
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RuntimeQuantiles, Snapshot
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.planner.snapshot_columns import KeptRows
from rush.rjms.base import ClusterState, RJMSJob
from tests.planner.l2_reference import l2_reference
from tests.planner.set_answers import SetRuntimes

NOW = 1_700_000_000.0
LEVELS = ((0.1, 0.25, 0.5, 0.75, 0.9), (0.25, 0.5, 0.75))


def _quantiles(rng: np.random.Generator, request: float) -> RuntimeQuantiles | None:
    """None, usable quantiles of one of two models (some with a D2 shift), or a refused kind."""
    kind = int(rng.integers(0, 12))
    levels = LEVELS[int(rng.integers(0, 2))]
    top = 3_600.0 if not 0 < request < math.inf else request
    seconds = np.sort(rng.uniform(0.5, 1.5 * top, len(levels)))
    shift = float(rng.choice([0.0, 0.0, 0.7, -0.4, math.nan])) if rng.random() < 0.3 else 0.0
    if kind < 3:
        return None
    if kind == 6:
        seconds[int(rng.integers(0, len(levels)))] = math.nan
    elif kind == 7:
        seconds[0] = -5.0
    elif kind == 8:
        return RuntimeQuantiles((0.5, 0.25, 0.9), (1.0, 2.0, 3.0))  # levels not increasing
    elif kind == 9:
        return RuntimeQuantiles(levels, tuple(seconds[:-1].tolist()))  # one quantile short
    elif kind == 10:
        seconds[-1] = math.inf
    return RuntimeQuantiles(levels, tuple(rng.permutation(seconds).tolist()), shift)


def _job(rng: np.random.Generator, job_id: int) -> PendingJob:
    request = float(rng.choice([600.0, 3_600.0, 7_200.0, math.inf, 0.0]))
    return PendingJob(
        job_id,
        NOW - float(rng.integers(1, 20_000)),
        int(rng.integers(1, 9)),
        request,
        runtime_quantiles=_quantiles(rng, request),
    )


def _queue(rng: np.random.Generator, n: int, first: int = 1) -> list[PendingJob]:
    ids = rng.permutation(np.arange(first, first + 4 * n))[:n].tolist()
    return [_job(rng, int(job_id)) for job_id in ids]


def _l2_of(columns: PendingColumns, est: np.ndarray):
    return queued_projection_from_columns(
        (columns.quantile_code, columns.queued_upper, columns.projection_shift, columns.quantile_key),
        columns.requested_time,
        columns.job_id,
        est,
    )


def _assert_same(got, want) -> None:
    (values, refused), (want_values, want_refused) = got, want
    if want_values is None:
        assert values is None
    else:
        assert values is not None and np.array_equal(values, want_values, equal_nan=True)
    assert list(refused.items()) == list(want_refused.items())  # the same, in the same order


@pytest.mark.parametrize("seed", range(10))
def test_l2_from_fresh_columns_equals_the_rule_on_the_objects(seed: int) -> None:
    rng = np.random.default_rng(seed)
    jobs = _queue(rng, int(rng.integers(1, 400)))
    est = rng.uniform(0.0, 5_000.0, len(jobs))
    columns = pending_columns(jobs)
    want = l2_reference(jobs, est)
    _assert_same(_l2_of(columns, est), want)
    _assert_same(
        queued_projection_runtimes_of(columns.runtime_quantiles, columns.requested_time, columns.job_id, est),
        want,
    )


@pytest.mark.parametrize("seed", range(10))
def test_l2_from_rows_kept_between_cycles_equals_the_rule_on_the_objects(seed: int) -> None:
    rng = np.random.default_rng(50 + seed)
    kept: KeptRows[PendingColumns] = KeptRows(pending_columns)
    jobs = _queue(rng, int(rng.integers(20, 300)))
    for cycle in range(4):
        columns = kept.update(jobs)
        est = rng.uniform(0.0, 5_000.0, len(jobs))
        _assert_same(_l2_of(columns, est), l2_reference(jobs, est))
        # The pass's reorder and a requeued job's rows added at the end.
        order = rng.permutation(len(jobs))
        extra = _queue(rng, 3, first=100_000 + 10 * cycle)
        taken = PendingColumns.concatenate(columns.take(order), pending_columns(extra))
        listed = [jobs[k] for k in order.tolist()] + extra
        est = rng.uniform(0.0, 5_000.0, len(listed))
        _assert_same(_l2_of(taken, est), l2_reference(listed, est))
        # Next cycle: some jobs leave, some get new quantiles (a new prediction), some arrive.
        stay = [j for j in jobs if rng.random() < 0.8]
        changed = [_job(rng, j.job_id) if rng.random() < 0.2 else j for j in stay]
        jobs = changed + _queue(rng, int(rng.integers(0, 30)), first=10_000 * (cycle + 1))


def _state(rng: np.random.Generator, pending: int) -> ClusterState:
    jobs = [
        RJMSJob(900 + k, "RUNNING", NOW - 500.0, 4, 3_600.0, start=NOW - float(rng.integers(10, 3_000)))
        for k in range(int(rng.integers(1, 4)))
    ]
    for job_id in rng.permutation(np.arange(1, 3 * pending))[:pending].tolist():
        procs = int(rng.choice([1, 2, 4, 8]))
        request = float(rng.choice([600.0, 3_600.0, 7_200.0]))
        jobs.append(RJMSJob(int(job_id), "PENDING", NOW - float(rng.integers(1, 20_000)), procs, request))
    return ClusterState(NOW, 16, 16 - 4 * (len(jobs) - pending), tuple(jobs))


@pytest.mark.parametrize("seed", range(6))
def test_schedule_estimates_from_kept_rows_equal_those_from_jobs_read_afresh(seed: int) -> None:
    """Two cycles of the builder (the second with a job gone, new quantiles for some, arrivals):
    the pass over its kept rows estimates and notes as over a tuple of the same core jobs."""
    rng = np.random.default_rng(200 + seed)
    state = _state(rng, int(rng.integers(20, 120)))
    runtimes = SetRuntimes({}, {j.job_id: _quantiles(rng, j.requested_time) for j in state.jobs})
    runtimes.quantiles = {k: q for k, q in runtimes.quantiles.items() if q is not None}
    builder = SnapshotBuilder(runtime=runtimes)
    config = CoreConfig(backfill="easy")
    for cycle in range(2):
        snapshot = builder.build(state, {}).snapshot
        assert isinstance(snapshot.pending, PendingRows)
        from_rows = schedule(snapshot, config)
        plain = Snapshot(
            snapshot.now, snapshot.total_procs, snapshot.free_procs, tuple(snapshot.pending), snapshot.running
        )
        from_jobs = schedule(plain, config)
        assert from_rows.estimated_start == from_jobs.estimated_start
        assert from_rows.estimate_basis == from_jobs.estimate_basis
        assert list(from_rows.estimate_notes.items()) == list(from_jobs.estimate_notes.items())
        assert from_rows.decisions == from_jobs.decisions
        if cycle == 0:  # the next read: a job gone, new quantiles for some, arrivals
            pending = [j for j in state.jobs if j.state == "PENDING"][1:]
            for j in pending:
                if rng.random() < 0.3:
                    q = _quantiles(rng, j.requested_time)
                    runtimes.quantiles.pop(j.job_id, None)
                    if q is not None:
                        runtimes.quantiles[j.job_id] = q
            arrivals = [
                RJMSJob(50_000 + k, "PENDING", NOW, int(rng.integers(1, 9)), 3_600.0) for k in range(5)
            ]
            runtimes.quantiles.update(
                {j.job_id: q for j in arrivals if (q := _quantiles(rng, j.requested_time)) is not None}
            )
            running = [j for j in state.jobs if j.state != "PENDING"]
            state = ClusterState(NOW + 1.0, 16, state.free_procs, (*running, *pending, *arrivals))


@pytest.mark.parametrize("name", ["quantile_code", "queued_upper", "runtime_quantiles", "requested_time"])
def test_a_derived_column_or_its_source_cannot_be_set_alone(name: str) -> None:
    """Setting one would leave rule L2's columns out of step with the quantiles: refused."""
    jobs = _queue(np.random.default_rng(7), 5)
    rows = PendingRows(pending_columns(jobs), jobs.__getitem__)
    with pytest.raises(ValueError, match=f"column '{name}' is derived or derived from"):
        rows.with_column(name, np.zeros(len(jobs)))
