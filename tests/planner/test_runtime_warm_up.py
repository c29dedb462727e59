"""The live runtime predictor is warmed when the planner loads it (before a replay's first
submit, a daemon's first cycle, a Flux module's first pass), on a copy: the made-up job it
predicts leaves no trace in what the real predictor says about real jobs."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from rush.planner.runtime_prediction import load_runtime_predictor
from rush.rjms.base import RJMSJob
from tests.models.fixtures import UNIX_START, saved_quantile_model, synthetic_workload


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    w = synthetic_workload(500)
    _, path = saved_quantile_model(tmp_path_factory.mktemp("quantiles"), w)
    return path, UNIX_START + float(w.submit[-1]) + 86400


def _predict(live, now: float) -> tuple[dict, dict]:
    # Two jobs of the warm-up's own shape (1 processor, 1 h) and one other, as a site submits them.
    jobs = [
        RJMSJob(1, "PENDING", now, 1, 3600.0, user="rush-warm-up"),
        RJMSJob(2, "PENDING", now + 5, 1, 3600.0, user="rush-warm-up"),
        RJMSJob(3, "PENDING", now + 9, 4, 600.0, user="someone"),
    ]
    assert live.predict_new(jobs) == 3
    return dict(live.raw), {k: q.seconds for k, q in live.quantiles.items()}


@pytest.mark.parametrize("name", ["runtime-quantiles", "easy++"])
def test_warming_up_changes_no_prediction(model_file, name):
    path, now = model_file
    cold = load_runtime_predictor(name, path, sqlite3.connect(":memory:"))
    warm = load_runtime_predictor(name, path, sqlite3.connect(":memory:"))
    warm.warm_up(now - 60)  # the made-up job is submitted just before the real ones
    assert warm.raw == {} and warm.quantiles == {}
    raw_cold, q_cold = _predict(cold, now)
    raw_warm, q_warm = _predict(warm, now)
    assert raw_warm == raw_cold and q_warm == q_cold
    if name == "runtime-quantiles":
        assert len(q_warm) == 3 and all(np.all(np.isfinite(v)) for v in q_warm.values())


def _daemon(tmp_path, model_path):
    from rush.daemon.service import Daemon
    from rush.planner.config import parse_config
    from tests.queue_backend import Queue

    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "j.sqlite")},
            "policy": {"runtime_prediction": "runtime-quantiles"},
            "models": {"runtime_quantiles": str(model_path)},
            "rjms": {"backend": "slurm"},
        }
    )
    return Daemon(config, backend=Queue(), dry_run=True)


def test_the_planner_warms_its_predictor_when_it_loads_it(model_file, tmp_path, monkeypatch):
    from rush.planner.runtime_prediction import LiveRuntimePredictor

    warmed: list[str] = []
    real = LiveRuntimePredictor.warm_up
    monkeypatch.setattr(
        LiveRuntimePredictor, "warm_up", lambda self, now: (warmed.append(self.name), real(self, now))
    )
    d = _daemon(tmp_path, model_file[0])
    assert d.runtime is not None and warmed == ["runtime-quantiles"]


def test_a_model_that_cannot_predict_one_job_is_journaled_and_not_used(model_file, tmp_path, monkeypatch):
    """Refused at load, where the administrator reads it, rather than failing every pass."""
    from rush.models.runtime_quantiles_predictor import RuntimeQuantilePredictor

    def broken(self, jobs):
        raise ValueError("the model's features do not fit")

    monkeypatch.setattr(RuntimeQuantilePredictor, "predict_with_quantiles", broken)
    d = _daemon(tmp_path, model_file[0])
    assert d.runtime is None
    events = [e for e in d.journal.events() if e["kind"] == "model"]
    assert any("runtime:runtime-quantiles" in e["message"] and "do not fit" in e["message"] for e in events)
