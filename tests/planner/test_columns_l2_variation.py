"""Rule L2 and the placement-time variation check read the pass's pending columns, not core jobs.

* L2's projected runtimes and refusals from the columns (:func:`queued_projection_runtimes_of`)
  equal, value for value and in the same order of refusals, those of the rule as it read each
  core job (``l2_reference`` (``tests/planner/l2_reference.py``): the per-job rule before the columns), over random queues
  with every kind of quantiles (none, usable, levels of several models, bad levels, too few,
  NaN, negative, no limit);
* the running jobs' medians given their elapsed time (:func:`running_median_runtimes`, checked
  and computed per set of levels) equal, value for value and in the running jobs' order of
  refusals, :func:`median_runtime_given_elapsed` asked job by job;
* ``schedule()`` over the builder's :class:`PendingRows` decides and estimates as over a tuple of
  the same core jobs, with quantiles on every pending job, and makes a core job only for the few
  decisions it words;
* the variation check at the tentative placement
  (:func:`rush.planner.variation_placement.predict_at_placement`) flags the same jobs, journals
  the same outputs and leads to the same decisions from the columns as from the jobs, again
  making only the core jobs the pass names.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import pytest

from rush.core.config import CoreConfig
from rush.core.job_columns import PendingRows, pending_columns
from rush.core.policies import parse_policy
from rush.core.remaining_runtime import (
    REFUSED_NOT_FINITE,
    median_runtime_given_elapsed,
    queued_projection_runtimes,
    queued_projection_runtimes_of,
    running_median_runtimes,
)
from rush.core.resources import Node, Request
from rush.core.schedule import schedule
from rush.core.snapshot import PendingJob, RunningJob, RuntimeQuantiles
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.planner.variation_placement import predict_at_placement
from rush.rjms.base import ClusterState, RJMSJob
from tests.planner.l2_reference import l2_reference
from tests.planner.set_answers import SetRuntimes

NOW = 1_700_000_000.0
LEVELS = ((0.1, 0.25, 0.5, 0.75, 0.9), (0.25, 0.5, 0.75))


def _quantiles(rng: np.random.Generator, request: float) -> RuntimeQuantiles | None:
    """None, usable quantiles of one of two models, or one of each kind the rule refuses."""
    kind = rng.integers(0, 10)
    levels = LEVELS[int(rng.integers(0, 2))]
    seconds = np.sort(rng.uniform(10.0, 1.5 * request, len(levels)))
    if kind < 3:
        return None
    if kind == 6:
        seconds[int(rng.integers(0, len(levels)))] = math.nan
    elif kind == 7:
        seconds[0] = -5.0
    elif kind == 8:
        return RuntimeQuantiles((0.5, 0.25, 0.75), tuple(np.sort(seconds[:3]).tolist()))  # not increasing
    elif kind == 9:
        return RuntimeQuantiles(levels, tuple(seconds[:-1].tolist()))  # one quantile short
    return RuntimeQuantiles(levels, tuple(rng.permutation(seconds).tolist()))  # any order


def _pending(rng: np.random.Generator, n: int) -> tuple[PendingJob, ...]:
    jobs = []
    for job_id in rng.permutation(np.arange(1, 4 * n))[:n].tolist():
        request = float(rng.choice([600.0, 3_600.0, 7_200.0, math.inf, 0.0]))
        jobs.append(
            PendingJob(
                int(job_id),
                NOW - float(rng.integers(1, 20_000)),
                int(rng.integers(1, 9)),
                request,
                runtime_quantiles=_quantiles(rng, 3_600.0 if not 0 < request < math.inf else request),
            )
        )
    return tuple(jobs)


@pytest.mark.parametrize("seed", range(8))
def test_l2_from_the_columns_equals_l2_from_the_jobs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    jobs = _pending(rng, int(rng.integers(1, 400)))
    est = rng.uniform(0.0, 5_000.0, len(jobs))
    columns = pending_columns(jobs)
    want, want_refused = l2_reference(jobs, est)
    for got, refused in (
        queued_projection_runtimes_of(columns.runtime_quantiles, columns.requested_time, columns.job_id, est),
        queued_projection_runtimes(jobs, est),
    ):
        if want is None:
            assert got is None
        else:
            assert np.array_equal(got, want, equal_nan=True)
        assert list(refused.items()) == list(want_refused.items())  # the same, in the same order
        assert all(type(job_id) is int for job_id in refused)


@pytest.mark.parametrize("seed", range(8))
def test_running_medians_per_set_of_levels_equal_the_rule_job_by_job(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    running = tuple(
        RunningJob(
            p.job_id,
            NOW - float(rng.choice([0.0, 5.0, 600.0, 5_000.0, 50_000.0])),
            p.procs,
            p.requested_time,
            runtime_quantiles=p.runtime_quantiles,
        )
        for p in _pending(rng, int(rng.integers(1, 300)))
    )
    got, refused = running_median_runtimes(running, NOW)
    if all(r.runtime_quantiles is None for r in running):
        assert got is None and refused == {}
        return
    want, want_refused = np.full(len(running), np.nan), {}
    for k, r in enumerate(running):
        if r.runtime_quantiles is not None:
            q = r.runtime_quantiles
            want[k], why = median_runtime_given_elapsed(q.levels, q.seconds, r.requested_time, NOW - r.start)
            if why:
                want_refused[r.job_id] = why
    assert np.array_equal(got, want, equal_nan=True)
    assert list(refused.items()) == list(want_refused.items())  # the same, in the running order


class PlacementFlags:
    """A variation predictor reading job-node windows, with set answers: a job placed on a node
    of leaf 0 varies (and, over all nodes, every third job)."""

    name = "set"
    uses_job_nodes = True
    threshold = 0.5

    def __init__(self, leaf_of: dict[str, int]) -> None:
        self.leaf_of = leaf_of
        self.asked: dict[int, tuple[str, ...]] = {}

    def predict(self, jobs: Sequence[RJMSJob], now: float) -> list[bool]:
        return [j.job_id % 3 == 0 for j in jobs]

    def job_outputs(self, job_id: int) -> dict:
        nodes = self.asked.get(job_id)
        return (
            {"variation_p": 0.9 if job_id % 3 == 0 else 0.1}
            if nodes is None
            else {"variation_nodes": ",".join(nodes)}
        )

    def predict_on(self, jobs: Sequence[RJMSJob], now: float, nodes: Sequence[tuple[str, ...]]) -> list[bool]:
        for j, where in zip(jobs, nodes, strict=True):
            self.asked[j.job_id] = tuple(where)
        return [any(self.leaf_of[n] == 0 for n in where) for where in nodes]


def _cluster(rng: np.random.Generator, pending: int) -> ClusterState:
    """8 nodes of 8 cores on two leaves, a few running jobs, ``pending`` node requests."""
    nodes = tuple(Node(f"n{i}", 8, leaf=i // 4, partitions=("batch",)) for i in range(8))
    jobs = [
        RJMSJob(
            1_000 + k,
            "RUNNING",
            NOW - 500.0,
            8,
            3_600.0,
            start=NOW - 400.0,
            user="u1",
            request=Request(1, 8, partition="batch"),
            allocation=((f"n{k}", 8, 0),),
        )  # fmt: skip
        for k in range(int(rng.integers(0, 4)))
    ]
    for job_id in rng.permutation(np.arange(1, 3 * pending))[:pending].tolist():
        width = int(rng.integers(1, 3))
        cores = int(rng.choice([2, 4, 8]))
        jobs.append(
            RJMSJob(
                int(job_id),
                "PENDING",
                NOW - float(rng.integers(1, 20_000)),
                width * cores,
                float(rng.choice([600.0, 3_600.0])),
                user=f"u{int(rng.integers(0, 4))}",
                request=Request(width, cores, partition="batch"),
            )  # fmt: skip
        )
    free = 64 - 8 * sum(j.state == "RUNNING" for j in jobs)
    return ClusterState(NOW, 64, free, tuple(jobs), nodes=nodes)


def _answers(rng: np.random.Generator, state: ClusterState) -> SetRuntimes:
    estimate = {j.job_id: float(rng.integers(60, 600)) for j in state.jobs if rng.random() < 0.5}
    quantiles = {
        j.job_id: RuntimeQuantiles(LEVELS[0], (30.0, 60.0, 120.0, 240.0 * (1 + j.job_id % 3), 500.0))
        if j.job_id % 11
        else RuntimeQuantiles(LEVELS[0], (30.0, math.nan, 120.0, 240.0, 500.0))  # refused, noted
        for j in state.jobs
    }
    return SetRuntimes(estimate, quantiles)


def _decided(d) -> tuple:
    return (
        [(x.job_id, x.action, x.reason, x.value, x.nodes) for x in d.decisions],
        d.order,
        d.priority,
        d.estimated_start,
        d.estimate_basis,
        d.waits_behind,
        d.estimate_notes,
    )


CONFIG = CoreConfig(policy=parse_policy("FCFS"), threshold=None, backfill="easy")


@pytest.mark.parametrize("seed", range(6))
def test_schedule_reads_l2_from_the_columns_and_decides_as_over_the_jobs(seed: int) -> None:
    rng = np.random.default_rng(seed)
    state = _cluster(rng, int(rng.integers(20, 80)))
    answers = _answers(rng, state)
    rows = SnapshotBuilder(runtime=answers).build(state, {}).snapshot
    assert isinstance(rows.pending, PendingRows)
    jobs = SnapshotBuilder(runtime=answers).build(state, {}).snapshot
    jobs = dataclasses.replace(jobs, pending=tuple(jobs.pending))
    from_rows = schedule(rows, CONFIG, explain_priorities=False)
    made = rows.pending.made()
    assert _decided(from_rows) == _decided(schedule(jobs, CONFIG, explain_priorities=False))
    assert any(w == REFUSED_NOT_FINITE for w in from_rows.estimate_notes.values())
    named = {d.job_id for d in from_rows.decisions}
    assert made <= len(named) < len(rows.pending)  # only the jobs the decisions name were made


@pytest.mark.parametrize("seed", range(6))
def test_the_variation_check_from_the_columns_equals_the_check_from_the_jobs(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    state = _cluster(rng, int(rng.integers(20, 60)))
    answers = _answers(rng, state)
    leaf_of = {n.name: n.leaf for n in state.nodes}
    got = []
    for as_rows in (True, False):
        predictor = PlacementFlags(leaf_of)
        built = SnapshotBuilder(runtime=answers, variation=predictor).build(state, {})
        if not as_rows:
            built.snapshot = dataclasses.replace(built.snapshot, pending=tuple(built.snapshot.pending))
        built = predict_at_placement(built, predictor, CONFIG, state)
        pending = built.snapshot.pending
        if as_rows:  # the flags a column of the rows, no core job made for them
            assert isinstance(pending, PendingRows)
            made = pending.made()
        decided = schedule(built.snapshot, CONFIG, explain_priorities=False)
        if as_rows:
            assert made <= len(predictor.asked) < len(pending)  # only the jobs the check asked about
            assert np.array_equal(pending.columns.variable, [p.variable for p in pending])
        flags = {p.job_id: p.variable for p in pending}
        outputs = {p.job_id: built.outputs[p.job_id] for p in pending}
        got.append((flags, outputs, _decided(decided), dict(predictor.asked)))
    assert got[0] == got[1]
    flags, outputs, _, asked = got[0]
    assert asked and any(flags[j] for j in asked)  # some placement flagged, on leaf 0
    assert not any(flags[j] for j in flags if j not in asked)  # the all-node flags replaced
    assert all("variation_p" not in outputs[j] for j in flags if j not in asked)
