"""The snapshot builder's entries made in bulk (issue 31 item 3, G3 in docs/research.md): jobs
first seen with nothing of their own but, perhaps, the runtime predictor's answers get their
entries without the per-job loop. Against the same builder with the bulk path off (every job
through the loop, main's path), cycle after cycle over mixed queues (blank, predicted-only,
estimate-only, quantiles-only, tagged, journaled and model-classed jobs; arrivals, departures,
changed records and answers; the Flux module's kept objects and a daemon's fresh equal ones):
the same entries (inputs, rows, outputs), the same pending columns, the same journal outputs
in the same order with their keys in the same order, the same kept and predicted jobs and
the same rows written again."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import rush.planner.snapshot_builder as snapshot_builder
from rush.core.snapshot import RuntimeQuantiles
from rush.planner.journal import JobRecord
from rush.planner.snapshot_builder import RuleClassPredictor, SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob
from tests.planner.set_answers import SetRuntimes

NOW = 1_700_000_000.0
LEVELS = (0.1, 0.5, 0.9)


def _job(rng: np.random.Generator, job_id: int) -> RJMSJob:
    tags = {}
    if rng.random() < 0.15:
        tags = {str(rng.choice(["idempotent", "class", "x"])): str(rng.choice(["1", "small", "y"]))}
    return RJMSJob(
        job_id,
        "PENDING",
        NOW - float(rng.integers(1, 50_000)),
        int(rng.integers(1, 64)),
        float(rng.integers(60, 86_400)),
        user=f"u{int(rng.integers(0, 5))}",
        tags=tags,
        priority=float(rng.integers(0, 100)),
    )


def _answers(rng: np.random.Generator, jobs: list[RJMSJob], kind: str, runtime: SetRuntimes) -> None:
    """Set (or change) some jobs' estimates and quantiles: ``kind`` "both" gives every job both
    (the live predictor), "some" a random mix (estimate only, quantiles only, neither)."""
    for j in jobs:
        if j.job_id in runtime.estimate and rng.random() < 0.8:
            continue  # most answers stay from one cycle to the next
        estimate = kind == "both" or rng.random() < 0.6
        quantiles = kind == "both" or rng.random() < 0.6
        runtime.estimate.pop(j.job_id, None)
        runtime.quantiles.pop(j.job_id, None)
        if estimate:
            runtime.estimate[j.job_id] = float(j.requested_time * rng.uniform(0.1, 1.0))
        if quantiles:
            seconds = np.sort(rng.uniform(1.0, j.requested_time, len(LEVELS)))
            if rng.random() < 0.05:
                seconds[0] = math.nan  # refused by the core, as any answer could be
            runtime.quantiles[j.job_id] = RuntimeQuantiles(LEVELS, tuple(seconds.tolist()))


def _entry_parts(builder: SnapshotBuilder) -> dict[int, tuple]:
    return {k: (e[0], e[1], e[2], e[3]) for k, e in builder._pending_cache.items()}


def _same_entries(got: dict[int, tuple], want: dict[int, tuple]) -> None:
    assert list(got) == list(want)
    for job_id, (job, varies, row, outputs) in want.items():
        g = got[job_id]
        assert g[0] is job, job_id
        assert repr(g[1]) == repr(varies) and repr(g[2]) == repr(row), job_id  # (NaN quantiles)
        assert g[3] == outputs and list(g[3]) == list(outputs), job_id
        assert [type(v) for v in g[3].values()] == [type(v) for v in outputs.values()], job_id


def _same_columns(got, want) -> None:
    for field in dataclasses.fields(want):
        a, b = getattr(got, field.name), getattr(want, field.name)
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype, field.name
            np.testing.assert_array_equal(a, b, err_msg=field.name)
        else:
            assert repr(tuple(a)) == repr(tuple(b)), field.name


@pytest.mark.parametrize("seed", range(8))
def test_entries_in_bulk_equal_the_per_job_loop(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    kind = ("both", "some")[seed % 2]
    fresh = seed % 4 >= 2  # a daemon's fresh read: new objects, equal to the kept ones
    classifier = seed % 8 >= 4  # a class model: jobs it classifies are not plain
    runtime = SetRuntimes()
    bulk = SnapshotBuilder(runtime=runtime, classifier=RuleClassPredictor(600.0) if classifier else None)
    loop = SnapshotBuilder(runtime=runtime, classifier=RuleClassPredictor(600.0) if classifier else None)
    jobs = [_job(rng, k) for k in range(1, 401)]
    records: dict[int, JobRecord] = {}
    taken = []
    plain_new = snapshot_builder._plain_new

    def counted(*args):
        found = plain_new(*args)
        taken.append(int(found.sum()))
        return found

    monkeypatch.setattr(snapshot_builder, "_plain_new", counted)
    for cycle in range(5):
        _answers(rng, jobs, kind, runtime)
        listed = [dataclasses.replace(j) for j in jobs] if fresh else jobs
        state = ClusterState(NOW + cycle, 512, 512, tuple(listed))
        built = bulk.build(state, records)
        with monkeypatch.context() as off:  # every job through the loop: main's path
            off.setattr(snapshot_builder, "_plain_new", lambda jobs, *_: np.zeros(len(jobs), dtype=np.bool_))
            want = loop.build(state, records)
        _same_entries(_entry_parts(bulk), _entry_parts(loop))
        assert list(built.outputs) == list(want.outputs)
        for job_id, outputs in want.outputs.items():
            assert built.outputs[job_id] == outputs and list(built.outputs[job_id]) == list(outputs)
        assert built.kept_jobs == want.kept_jobs and list(built.predicted) == list(want.predicted)
        assert built.predicted == want.predicted
        assert bulk.rows_read == loop.rows_read
        _same_columns(built.snapshot.pending.columns, want.snapshot.pending.columns)
        for got_job, want_job in zip(built.snapshot.pending, want.snapshot.pending, strict=True):
            assert repr(got_job) == repr(want_job)
        # Between cycles: departures, arrivals, journal records for some jobs (no longer plain).
        jobs = [j for j in jobs if rng.random() < 0.9] + [
            _job(rng, 1_000 * (cycle + 1) + k) for k in range(30)
        ]
        for job_id in rng.choice([j.job_id for j in jobs], size=10, replace=False).tolist():
            records[job_id] = JobRecord(job_id, skips=int(rng.integers(0, 3)))
    if classifier:  # every new job gets a class of this pass's model: none is plain
        assert sum(taken) == 0
    else:  # the bulk path made most first entries, and arrivals
        assert taken[0] > 100 and sum(taken[1:]) > 0


def test_a_first_cycle_of_predicted_jobs_takes_the_bulk_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every untagged job with no record and the predictor's answers is made in bulk: the loop
    (each job's ``records.get``) runs for none of them, only for the tagged one."""
    rng = np.random.default_rng(3)
    jobs = [dataclasses.replace(_job(rng, k), tags={}) for k in range(1, 101)]
    jobs.append(dataclasses.replace(_job(rng, 101), tags={"x": "y"}))
    runtime = SetRuntimes()
    _answers(rng, jobs, "both", runtime)

    class Counted(dict):
        asked: list[int] = []

        def get(self, key, default=None):
            self.asked.append(key)
            return super().get(key, default)

    records = Counted({999: JobRecord(999)})
    built = SnapshotBuilder(runtime=runtime).build(ClusterState(NOW, 512, 512, tuple(jobs)), records)
    assert len(built.outputs) == 101 and all("predicted_runtime" in o for o in built.outputs.values())
    assert Counted.asked.count(101) == 2  # the tagged job: once by the bulk test, once by the loop
    assert all(Counted.asked.count(k) == 1 for k in range(1, 101))  # the others: the bulk test only
