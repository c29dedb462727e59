"""Small trained runtime-class models for tests: a synthetic trace, a real pipeline, a card."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

from rush.models.model_card import RuntimeClassCard
from rush.models.persistence import save_model
from rush.models.runtime_features import Clock
from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_features import QuantileJobs, offline_features
from rush.models.runtime_quantiles_walkforward import WEEK
from rush.models.walkforward import TrainedModel, fit_on_history
from rush.workload.model import Workload, workload_from_trace
from tests.workload.helpers import MIRROR

UNIX_START = 1_700_000_000  # 2023-11-14 22:13:20 UTC
HEADER = {"UnixStartTime": str(UNIX_START), "TimeZoneString": "Europe/Stockholm"}


def synthetic_workload(n: int = 600, seed: int = 3) -> Workload:
    """Two job shapes (short narrow, long wide) by five users over about three weeks."""
    rng = np.random.default_rng(seed)
    small = rng.random(n) < 0.5
    submit = np.sort(rng.uniform(0, 21 * 86400, n)).round()
    runtime = np.where(small, rng.uniform(10, 300, n), rng.uniform(5000, 40000, n)).round()
    requested = np.where(small, 600.0, 86400.0)
    return Workload(
        job_id=np.arange(1, n + 1),
        submit=submit,
        runtime=runtime,
        procs=np.where(small, 1, 64).astype(np.int64),
        requested_time=requested,
        user=(np.arange(n) % 5 + 1).astype(np.int64),
        machine_procs=128,
        name="synthetic",
        extra={"wait": np.zeros(n)},
    )


# A quantile model small enough for a test to fit in well under a second.
SMALL_QUANTILE_MODEL = {"max_iter": 15, "min_samples_leaf": 5}


def synthetic_quantile_matrix(n: int = 600) -> tuple[np.ndarray, np.ndarray]:
    """The quantile predictor's offline features of ``synthetic_workload(n)`` (every job finished,
    submitted from 1.7e9 on the default clock) and the jobs' runtimes."""
    w = synthetic_workload(n)
    jobs = QuantileJobs(
        w.user,
        w.procs,
        w.requested_time,
        w.submit + 1.7e9,
        runtime=w.runtime,
        end=w.submit + 1.7e9 + w.runtime,
    )
    return offline_features(jobs, Clock()), w.runtime


def fitted_quantile_model(n: int = 600, **params) -> tuple[RuntimeQuantileRegressor, np.ndarray, np.ndarray]:
    """A small quantile model (divider 600 s) fitted on ``synthetic_quantile_matrix(n)``."""
    X, runtime = synthetic_quantile_matrix(n)
    model = RuntimeQuantileRegressor(**SMALL_QUANTILE_MODEL, divider=600.0, **params).fit(X, runtime)
    return model, X, runtime


def saved_quantile_model(directory: Path, w: Workload) -> tuple[RuntimeQuantileRegressor, Path]:
    """A small quantile model fitted on ``w``'s history and saved with its card in ``directory``."""
    from rush.models.runtime_quantiles_pipeline import fit_quantiles_on_history, save_quantile_model

    model, metadata = fit_quantiles_on_history(w, HEADER, RuntimeQuantileRegressor(max_iter=10))
    path = Path(directory) / "quantiles.joblib"
    save_quantile_model(model, metadata, path)
    return model, path


def trained(n: int = 600, header: dict | None = None, **kwargs) -> TrainedModel:
    return fit_on_history(
        synthetic_workload(n), HEADER if header is None else header, n_estimators=5, **kwargs
    )


def save_trained(path: Path, model: TrainedModel | None = None) -> tuple[TrainedModel, dict]:
    model = model or trained()
    return model, save_model(model.model, path, model.metadata, card=RuntimeClassCard)


@cache
def kth_trace():
    path = MIRROR / "KTH-SP2-1996-2.1-cln.swf.gz"
    if not path.exists():
        pytest.skip(f"trace {path} not available: set RUSH_TRACE_MIRROR to the traces directory")
    from rush.workload.swf import read_swf

    return read_swf(path)


def kth(n: int = 4000) -> tuple[Workload, dict]:
    """The first ``n`` jobs of KTH-SP2 (about 7 weeks for 4000) and the trace header."""
    trace = kth_trace()
    w = workload_from_trace(trace)
    return w.subset(np.arange(n)), dict(trace.header)


def small_forest() -> RandomForestClassifier:
    return RandomForestClassifier(n_estimators=8, max_depth=8, random_state=0)


@dataclass
class ProtocolJobs:
    """The protocol's RuntimeJobs columns (rtcore's dataclass has the same names)."""

    job_id: np.ndarray
    user: np.ndarray
    submit: np.ndarray
    procs: np.ndarray
    requested_time: np.ndarray
    runtime: np.ndarray
    end: np.ndarray

    def take(self, rows) -> ProtocolJobs:
        return ProtocolJobs(*(getattr(self, f)[rows] for f in self.__dataclass_fields__))


def drive_quantile_predictor(predictor, n: int = 700) -> tuple[np.ndarray, ProtocolJobs]:
    """The protocol's walk-forward: observe what ended before each submission, refit at
    week boundaries, predict each submission."""
    w = synthetic_workload(n)
    jobs = ProtocolJobs(
        np.arange(n), w.user, w.submit, w.procs, w.requested_time, w.runtime, w.submit + w.runtime
    )
    order = np.argsort(jobs.end, kind="stable")
    finished = jobs.take(order)
    out = np.empty(n)
    observed, epoch = 0, 0
    for j in range(n):
        seen = int(np.searchsorted(finished.end, jobs.submit[j], side="left"))
        if seen > observed:
            predictor.observe(finished.take(slice(observed, seen)))
            observed = seen
        week = int((jobs.submit[j] - jobs.submit[0]) // WEEK)
        if week > epoch:
            predictor.fit(finished.take(slice(0, observed)))
            epoch = week
        pending = jobs.take(slice(j, j + 1))
        pending.runtime = pending.end = np.full(1, np.nan)
        out[j] = predictor.predict(pending)[0]
    return out, jobs
