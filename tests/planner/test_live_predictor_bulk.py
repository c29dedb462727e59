"""The live runtime predictor's answers made in bulk (issue 31, F4 in docs/research.md): its
estimates, kept quantiles and the builder's rows and journal outputs equal the per-job rules
(kept here as the reference), and a model's answers of the wrong shape leave nothing kept."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rush.core.runtime_predictions import predicted_runtimes
from rush.core.snapshot import RuntimeQuantiles
from rush.planner.runtime_prediction import SOURCE_REQUEST, LiveRuntimePredictor
from rush.planner.snapshot_builder import SnapshotBuilder
from rush.rjms.base import ClusterState, RJMSJob

LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)
BAD = (math.nan, math.inf, -math.inf, -5.0, 0.0, 1e300)


class Answers:
    """A quantile model whose answers are drawn once per call from a seed (bad values included),
    optionally with one quantile row too few."""

    retrain_every = None

    def __init__(self, seed: int, short: bool = False) -> None:
        self.rng = np.random.default_rng(seed)
        self.short = short

    def observe(self, done) -> None:
        pass

    def predict(self, jobs) -> np.ndarray:
        return self.predict_with_quantiles(jobs)[0]

    def predict_with_quantiles(self, jobs):
        n = len(jobs.job_id)
        request = np.asarray(jobs.requested_time, dtype=np.float64)
        mean = request * self.rng.uniform(0.05, 1.5, n)
        bad = self.rng.random(n) < 0.2
        mean[bad] = self.rng.choice(BAD, int(bad.sum()))
        q = np.sort(request[:, None] * self.rng.uniform(0.01, 1.2, (n, len(LEVELS))), axis=1)
        spoilt = self.rng.random(q.shape) < 0.03
        q[spoilt] = self.rng.choice(BAD, int(spoilt.sum()))
        return mean, LEVELS, q[:-1] if self.short else q


def _jobs(rng: np.random.Generator, n: int, first: int = 1) -> list[RJMSJob]:
    out = []
    for k in range(first, first + n):
        running = rng.random() < 0.2
        out.append(
            RJMSJob(
                k,
                "RUNNING" if running else "PENDING",
                1000.0 + k,
                int(rng.integers(1, 64)),
                float(rng.choice([60.0, 3600.0, 86400.0, math.inf])),
                start=2000.0 if running else None,
                user=f"u{int(rng.integers(0, 5))}",
            )
        )
    return out


def _reference_estimates(live: LiveRuntimePredictor, jobs: list[RJMSJob]) -> dict[int, tuple[float, str]]:
    """The per-job rule: the guarded prediction, and its source by whether it is below the request."""
    out = {}
    for j in jobs:
        raw = np.array([live.raw.get(j.job_id, math.nan)])
        limit = np.array([j.requested_time], dtype=np.float64)
        v = float(predicted_runtimes(raw, limit)[0])
        out[j.job_id] = (v, live.name if v < j.requested_time else SOURCE_REQUEST)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_bulk_answers_equal_the_per_job_rules(seed):
    rng = np.random.default_rng(seed)
    live = LiveRuntimePredictor("quantiles", Answers(seed), None, own=frozenset())
    jobs = _jobs(rng, 300)
    # The reference: each job's quantiles as the per-job loop kept them, cycle after cycle.
    kept: dict[int, RuntimeQuantiles] = {}
    for cycle in range(3):
        before = {k: q for k, q in live.quantiles.items()}
        live.changed.update(live.user_of.values())  # every user finished a job: all asked again
        model = live.predictor
        state = model.rng.bit_generator.state
        assert live.predict_new(jobs) == len(jobs)
        model.rng.bit_generator.state = state  # the same answers again, for the reference
        columns_q = model.predict_with_quantiles(
            type("C", (), {"job_id": np.array([j.job_id for j in jobs]), "requested_time": _limits(jobs)})
        )[2]
        for j, row in zip(jobs, columns_q, strict=True):
            if j.state != "PENDING" and j.job_id in before:
                continue
            kept[j.job_id] = RuntimeQuantiles(LEVELS, tuple(row.tolist()))
        assert _shown(live.quantiles) == _shown(kept)  # NaN quantiles included
        assert list(live.quantiles) == list(kept)
        for j in jobs:  # a running job keeps the very object it started with
            if j.state != "PENDING" and j.job_id in before:
                assert live.quantiles[j.job_id] is before[j.job_id]
        got = live.estimates(jobs)
        want = _reference_estimates(live, jobs)
        assert list(got) == list(want)
        for k, (v, source) in want.items():
            assert got[k][1] == source and (got[k][0] == v or (math.isnan(v) and math.isnan(got[k][0])))
        assert _shown(live.model_quantiles(jobs)) == _shown(
            {j.job_id: kept[j.job_id] for j in jobs if j.job_id in kept}
        )
        jobs = jobs[cycle::2] + _jobs(rng, 50, first=1000 * (cycle + 1))


def _shown(quantiles: dict[int, RuntimeQuantiles]) -> dict[int, str]:
    return {k: repr(q) for k, q in quantiles.items()}


def _limits(jobs: list[RJMSJob]) -> np.ndarray:
    from rush.planner.snapshot_builder import UNLIMITED_SECONDS

    return np.array([min(j.requested_time, UNLIMITED_SECONDS) for j in jobs], dtype=np.float64)


def test_quantiles_of_the_wrong_shape_keep_nothing_and_are_asked_again():
    rng = np.random.default_rng(7)
    jobs = _jobs(rng, 40)
    live = LiveRuntimePredictor("quantiles", Answers(7, short=True), None, own=frozenset())
    with pytest.raises(ValueError, match="quantiles of shape"):
        live.predict_new(jobs)
    # Nothing kept: no job reads as predicted, none has rows that belong to another job.
    assert live.raw == {} and live.quantiles == {} and live.user_of == {}
    live.predictor.short = False
    assert live.predict_new(jobs) == len(jobs)
    assert set(live.quantiles) == {j.job_id for j in jobs}


@pytest.mark.parametrize("seed", range(4))
def test_builder_rows_and_outputs_of_predicted_jobs_equal_the_general_path(seed):
    """A job with nothing of its own but the predictor's answers takes the shared path; its twin
    with an unrelated tag takes the general one: same core job fields and the same journal
    outputs, keys in the same order."""
    rng = np.random.default_rng(seed)
    live = LiveRuntimePredictor("quantiles", Answers(seed), None, own=frozenset())
    plain = [j for j in _jobs(rng, 200) if j.state == "PENDING"]
    twins = [
        RJMSJob(j.job_id + 10_000, j.state, j.submit, j.procs, j.requested_time, user=j.user, tags={"x": "y"})
        for j in plain
    ]
    builder = SnapshotBuilder(runtime=live)
    state = ClusterState(5000.0, 1024, 512, tuple(plain + twins))
    # The twins' answers set equal to their originals' (same raw value and quantiles).
    live.predict_new(list(state.jobs))
    for j in plain:
        live.raw[j.job_id + 10_000] = live.raw[j.job_id]
        live.quantiles[j.job_id + 10_000] = live.quantiles[j.job_id]
    built = builder.build(state, {})
    pending = {p.job_id: p for p in built.snapshot.pending}
    for j in plain:
        a, b = pending[j.job_id], pending[j.job_id + 10_000]
        assert (a.estimate, a.runtime_class, a.idempotent, a.skips, a.requeues, a.reserved_at) == (
            b.estimate,
            b.runtime_class,
            b.idempotent,
            b.skips,
            b.requeues,
            b.reserved_at,
        )
        assert a.variable is b.variable is False
        assert a.runtime_quantiles is b.runtime_quantiles is live.quantiles[j.job_id]
        oa, ob = built.outputs[j.job_id], built.outputs[j.job_id + 10_000]
        assert oa == ob and list(oa) == list(ob)
        assert oa["predicted_runtime"] == a.estimate
        assert oa["runtime_source"] in ("quantiles", SOURCE_REQUEST)
    # The columns the core reads agree with the made jobs.
    columns = built.snapshot.pending.columns
    ids = columns.job_id.tolist()
    for k, job_id in enumerate(ids):
        assert columns.runtime_quantiles[k] is pending[job_id].runtime_quantiles
        want = pending[job_id].estimate
        assert bool(columns.own_estimate[k]) is (want is not None)
        assert columns.estimate[k] == (want if want is not None else pending[job_id].requested_time)
