"""The live start estimates with rush's quantile model (policy.runtime_prediction =
"runtime-quantiles"): the planner carries each running job's predicted quantiles, as of its
start, in the snapshot, and the core ends the job at its median runtime given its elapsed time
(rush.core.remaining_runtime), the offline study's rule, in the journal, rush explain and
Prometheus alike; each pending job carries its latest quantiles, and the jobs behind it wait
for max(its calibrated mean, its upper quartile) (rule L2). A model whose quantiles are unusable falls back to the request with a
journaled reason; a model that cannot load leaves the limits (tests/daemon/test_runtime_prediction.py)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from rush.core.remaining_runtime import (
    QUEUE_PROJECTION_LEVEL,
    REFUSED_NOT_FINITE,
    conditional_quantile_runtime,
    median_runtime_given_elapsed,
    quantile_knots,
)
from rush.daemon.service import Daemon
from rush.models.runtime_quantiles_pipeline import save_quantile_model
from rush.planner.config import parse_config
from rush.rjms.base import ClusterState, RJMSJob
from tests.models.fixtures import saved_quantile_model, synthetic_workload
from tests.queue_backend import Queue

HOUR = 3600.0


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return saved_quantile_model(tmp_path_factory.mktemp("model"), synthetic_workload(500))[1]


def job(job_id: int, state: str, submit: float, start: float | None = None) -> RJMSJob:
    return RJMSJob(
        job_id=job_id, state=state, submit=submit, start=start, procs=8, requested_time=HOUR, user="alice"
    )


def daemon(tmp_path, model_path) -> tuple[Daemon, Queue]:
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "j.sqlite")},
            "policy": {"runtime_prediction": "runtime-quantiles"},
            "models": {"runtime_quantiles": str(model_path)},
            "rjms": {"backend": "slurm"},
        }
    )
    queue = Queue()
    return Daemon(config, backend=queue, dry_run=True), queue


def cycle(d: Daemon, q: Queue, now: float, *jobs: RJMSJob):
    q.state = ClusterState(now, 8, 0, tuple(jobs))  # job 3 holds the whole machine
    report = d.run_cycle()
    assert report.ok, report.error
    return d.last[1], d.last[2]


def test_a_running_job_ends_at_its_median_given_its_elapsed_time(tmp_path, model_path):
    d, q = daemon(tmp_path, model_path)
    assert d.runtime is not None
    cycle(d, q, 1990.0, job(3, "PENDING", 1900.0))  # predicted while pending
    seen = d.runtime.quantiles[3]
    for now in (2100.0, 2050.0 + 1500.0):
        built, decided = cycle(d, q, now, job(3, "RUNNING", 1900.0, 2050.0), job(4, "PENDING", 2060.0))
        carried = built.snapshot.running[0].runtime_quantiles
        assert carried == seen  # the quantiles as of its start, not predicted again
        assert len(carried.levels) == len(carried.seconds) >= 3
        expected, why = median_runtime_given_elapsed(carried.levels, carried.seconds, HOUR, now - 2050.0)
        assert why == "" and now < 2050.0 + expected <= 2050.0 + HOUR
        assert decided.estimated_start[4] == pytest.approx(2050.0 + expected)
        assert not decided.estimate_notes
        # The journal (rush explain, Flux's t_estimate through the same planner) and Prometheus
        # carry that estimate.
        assert d.journal.queue()[4].estimated_start == pytest.approx(2050.0 + expected)
        longest = d.metrics.estimated_wait.labels(quantile="1")._value.get()
        assert longest == pytest.approx(2050.0 + expected - now)
    d.journal.db.close()
    out = subprocess.run(
        [sys.executable, "-m", "rush", "explain", "4", "--journal", str(tmp_path / "j.sqlite")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "waits behind job 3" in out.stdout


class NaNQuantiles:
    """A model that gives NaN for everything (what a broken model file could)."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def predict_with_quantiles(self, jobs):
        point, levels, quantiles = self.inner.predict_with_quantiles(jobs)
        return np.full_like(point, math.nan), levels, np.full_like(quantiles, math.nan)


def test_nan_quantiles_fall_back_to_the_request_with_a_journaled_reason(tmp_path, model_path):
    d, q = daemon(tmp_path, model_path)
    d.runtime.predictor = NaNQuantiles(d.runtime.predictor)
    for now in (2100.0, 2200.0):
        built, decided = cycle(d, q, now, job(3, "RUNNING", 1900.0, 2050.0), job(4, "PENDING", 2060.0))
        assert built.snapshot.running[0].runtime_quantiles is not None
        assert built.snapshot.pending[0].runtime_quantiles is not None
        # The running job's and the pending job's (rule L2) quantiles are both refused.
        assert decided.estimate_notes == {3: REFUSED_NOT_FINITE, 4: REFUSED_NOT_FINITE}
        assert decided.estimated_start[4] == 2050.0 + HOUR  # the request, never NaN
        assert all(math.isfinite(v) and v >= now for v in decided.estimated_start.values())
    events = sorted(e["message"] for e in d.journal.events("estimate"))  # once per job
    assert len(events) == 2 and all(REFUSED_NOT_FINITE in e for e in events)
    assert "job 3" in events[0] and "job 4" in events[1]


def test_other_predictors_carry_no_quantiles(tmp_path):
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "j.sqlite")},
            "policy": {"runtime_prediction": "easy++"},
            "rjms": {"backend": "slurm"},
        }
    )
    q = Queue()
    d = Daemon(config, backend=q, dry_run=True)
    built, decided = cycle(d, q, 2100.0, job(3, "RUNNING", 1900.0, 2050.0), job(4, "PENDING", 2060.0))
    assert built.snapshot.running[0].runtime_quantiles is None
    assert decided.estimated_start[4] == 2050.0 + HOUR and not decided.estimate_notes


def _upper_quartile(q, request: float) -> float:
    """Q(0.75) of a job's predicted distribution as the core reads it (rule L2)."""
    capped = np.minimum(np.sort(np.asarray(q.seconds)), request)
    xs, ps = quantile_knots(np.log1p(capped)[None, :], np.asarray(q.levels), np.log1p([request]))
    return float(conditional_quantile_runtime(xs[0], ps, 0.0, QUEUE_PROJECTION_LEVEL))


def _gap_behind(tmp_path, path) -> tuple[float, float, float]:
    """The estimated start of the second pending job minus the first's (the first job's runtime,
    as the estimate assumes it: one job fits the machine at a time), the first's raw prediction
    and the upper quartile of its predicted distribution."""
    d, q = daemon(tmp_path, path)
    built, decided = cycle(
        d, q, 2100.0, job(3, "RUNNING", 1900.0, 2050.0), job(4, "PENDING", 2060.0), job(5, "PENDING", 2070.0)
    )
    d.journal.db.close()
    carried = {p.job_id: p.runtime_quantiles for p in built.snapshot.pending}
    assert carried[4] == d.runtime.quantiles[4]  # its latest prediction's quantiles
    return (
        decided.estimated_start[5] - decided.estimated_start[4],
        d.runtime.raw[4],
        _upper_quartile(carried[4], HOUR),
    )


def test_a_queued_job_is_projected_for_max_of_its_mean_and_upper_quartile(tmp_path, model_path):
    """Rule L2 live: the job behind a queued one waits for max(its calibrated mean, Q(0.75))."""
    gap, raw, upper = _gap_behind(tmp_path, model_path)
    assert raw < upper < HOUR  # the synthetic model's quartile is above its mean: L2 shows
    assert gap == pytest.approx(max(raw, upper))


def test_a_pending_jobs_estimate_uses_the_models_calibrated_mean(tmp_path, model_path):
    """The model's mean bands (H8) reach the live estimate: a model whose bands double every
    mean doubles the pending job's estimate (capped by the request), and the projection reads
    max(that, its upper quartile) (rule L2)."""
    from rush.models.runtime_mean_bands import MeanBands
    from rush.models.runtime_quantiles_pipeline import load_quantile_model

    model, card = load_quantile_model(model_path)
    plain = tmp_path / "plain.joblib"
    model.named_steps["regressor"].mean_bands_ = None
    save_quantile_model(model, card | {"mean_bands": None}, plain)
    doubled = tmp_path / "doubled.joblib"
    bands = MeanBands(tuple(range(40)), (2.0,) * 40)
    model.named_steps["regressor"].mean_bands_ = bands
    save_quantile_model(model, card | {"mean_bands": bands.to_card()}, doubled)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    gap_plain, raw_plain, upper_plain = _gap_behind(tmp_path / "a", plain)
    gap_doubled, raw_doubled, upper_doubled = _gap_behind(tmp_path / "b", doubled)
    assert 1.0 <= raw_plain < HOUR and gap_plain == pytest.approx(max(raw_plain, upper_plain))
    assert raw_doubled == pytest.approx(min(2.0 * raw_plain, HOUR))
    assert upper_doubled == pytest.approx(upper_plain)  # the bands change the mean only
    assert gap_doubled == pytest.approx(max(raw_doubled, upper_doubled)) and gap_doubled >= gap_plain
