"""Live runtime-class features are the training features: one time base, one user mapping.

Models are trained with the real CLI from a small SWF trace and from ``sacct --json`` output;
the daemon's ModelClassPredictor then featurises a job submitted *now*, and every calendar
and user-history feature is checked against a value computed by hand (calendar values with
the standard library's ``datetime`` in the model's zone, history values from the trace)."""

from __future__ import annotations

import copy
import json
import time
from datetime import datetime
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from rush.models.runtime_features import FEATURES
from rush.models.walkforward import predict_classes_walkforward
from rush.planner.snapshot_builder import ModelClassPredictor
from rush.rjms.base import RJMSJob
from rush.workload.model import Trace, workload_from_trace
from rush.workload.swf import read_swf, write_swf
from tests.rush_cli import rush
from tests.workload.sacct_samples import JOBS_2205

S = 1_700_000_000  # 2023-11-14 22:13:20 UTC: hour 23 in Stockholm, 22 in UTC, 17 in New York


def calendar(now: float, zone: str) -> dict[str, float]:
    """Hour, weekday, day, month, week of year and quarter, by the standard library."""
    dt = datetime.fromtimestamp(now, ZoneInfo(zone))
    return {
        "hour": dt.hour,
        "weekday": dt.weekday(),
        "monthday": dt.day,
        "month": dt.month,
        "week": (dt.timetuple().tm_yday - 1) // 7 + 1,
        "quarter": (dt.month - 1) // 3 + 1,
    }


def features(predictor: ModelClassPredictor, job: RJMSJob) -> dict[str, float]:
    return dict(zip(FEATURES, predictor.features([job])[0].tolist(), strict=True))


def history_part(row: dict[str, float], category: str) -> tuple[float, float, float, float]:
    return tuple(row[f"{k}_{category}"] for k in ("lag1", "lag2", "lag3", "frac_small"))


UNKNOWN4 = (-1.0, -1.0, -1.0, -1.0)


def swf_trace(path, header: dict[str, str]) -> None:
    n = 40
    submit = np.arange(n) * 3600  # one job an hour from the log's start
    runtime = np.where(np.arange(n) % 2 == 0, 100, 5000)
    trace = Trace.from_columns(
        n,
        job_id=np.arange(1, n + 1),
        submit=submit,
        wait=np.zeros(n, dtype=np.int64),
        runtime=runtime,
        alloc_procs=np.where(runtime == 100, 1, 16),
        req_procs=np.where(runtime == 100, 1, 16),
        req_time=np.where(runtime == 100, 600, 7200),
        status=np.ones(n, dtype=np.int64),
        user=np.arange(n) % 3 + 1,
    )
    trace.header.update(header)
    write_swf(trace, path)


def test_model_from_an_swf_trace_featurises_a_job_submitted_now(tmp_path):
    swf = tmp_path / "site.swf"
    swf_trace(swf, {"UnixStartTime": str(S), "TimeZoneString": "Europe/Stockholm"})
    model = tmp_path / "rc.joblib"
    out = rush("train", "runtime-class", str(swf), "--out", str(model), "--trees", "5", "--no-walkforward")
    assert out.returncode == 0, out.stderr
    assert "cannot match live names" in out.stdout
    card = json.loads((tmp_path / "rc.joblib.json").read_text())
    assert card["time_base"]["unix_start"] == S and card["time_base"]["timezone"] == "Europe/Stockholm"
    assert card["user_key_kind"] == "trace-id" and card["training_window"]["first_submit"] == S

    # Offline: trace time t is Unix time S + t, read in Stockholm (job 0 at 23:13 local).
    trace = read_swf(swf)
    wf = predict_classes_walkforward(workload_from_trace(trace), trace.header, estimator="logreg")
    hour = FEATURES.index("hour")
    assert wf.features[:5, hour].tolist() == [
        calendar(S + 3600 * k, "Europe/Stockholm")["hour"] for k in range(5)
    ]
    assert wf.features[:2, hour].tolist() == [23.0, 0.0]

    predictor = ModelClassPredictor(model, tmp_path / "live-history.json")
    assert any("starts empty" in note for note in predictor.notes)
    now = time.time()
    row = features(predictor, RJMSJob(1, "PENDING", now, 16, 7200.0, user="alice"))
    assert {k: row[k] for k in calendar(now, "Europe/Stockholm")} == calendar(now, "Europe/Stockholm")
    assert datetime.fromtimestamp(now).year < 2040  # the job is featurised now, not in 2052
    for category in ("user_procs", "user_reqtime", "user_day"):
        assert history_part(row, category) == UNKNOWN4
    assert row["requested_time"] == 7200 and row["procs"] == 16


def sacct_job(job_id: int, user: str, cpus: int, limit_minutes: int, submit: int, start: int, elapsed: int):
    job = copy.deepcopy(JOBS_2205["jobs"][0])
    job.update(job_id=job_id, user=user, steps=[])
    job["time"] = {
        "elapsed": elapsed,
        "eligible": submit,
        "submission": submit,
        "start": start,
        "end": start + elapsed,
        "suspended": 0,
        "limit": limit_minutes,
    }
    job["required"]["CPUs"] = cpus
    job["tres"]["allocated"] = [{"type": "cpu", "name": "", "id": 1, "count": cpus}]
    return job


# alice: 64 CPUs, 120 min; bob: 8 CPUs, 30 min. Clipped runtimes 3500, 3000, 100, 60, 1700,
# 50: the divider (median) is (100 + 1700) / 2 = 900 s.
SACCT_JOBS = [
    sacct_job(11, "alice", 64, 120, S, S + 100, 3500),  # ends S+3600, large
    sacct_job(12, "alice", 64, 120, S + 200, S + 4000, 3000),  # ends S+7000, large
    sacct_job(13, "alice", 64, 120, S + 300, S + 8000, 100),  # ends S+8100 (last), small
    sacct_job(21, "bob", 8, 30, S + 50, S + 60, 60),  # ends S+120, small
    sacct_job(22, "bob", 8, 30, S + 400, S + 500, 1700),  # ends S+2200, large
    sacct_job(23, "bob", 8, 30, S + 600, S + 2300, 50),  # ends S+2350 (last), small
]


@pytest.fixture
def sacct_model(tmp_path):
    dump = tmp_path / "sacct.json"
    dump.write_text(json.dumps(JOBS_2205 | {"jobs": SACCT_JOBS}))
    model = tmp_path / "rc.joblib"
    out = rush(
        "train", "runtime-class", str(dump), "--out", str(model), "--trees", "5",
        "--no-walkforward", "--timezone", "America/New_York",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "user names (match live Slurm jobs)" in out.stdout
    return model


def test_model_from_sacct_featurises_a_job_submitted_now(sacct_model, tmp_path):
    card = json.loads(sacct_model.with_name("rc.joblib.json").read_text())
    assert card["divider"] == 900.0 and card["user_key_kind"] == "name"
    assert (
        card["time_base"]["timezone"] == "America/New_York"
        and card["time_base"]["zone_source"] == "--timezone"
    )
    predictor = ModelClassPredictor(sacct_model, tmp_path / "live-history.json")
    assert predictor.notes == []
    now = time.time()
    alice = features(predictor, RJMSJob(1, "PENDING", now, 64, 7200.0, user="alice"))
    assert {k: alice[k] for k in calendar(now, "America/New_York")} == calendar(now, "America/New_York")
    # alice's 64-CPU / 120-min jobs finished large, large, small: last first, a third small.
    assert history_part(alice, "user_procs") == (0.0, 1.0, 1.0, pytest.approx(1 / 3))
    assert history_part(alice, "user_reqtime") == (0.0, 1.0, 1.0, pytest.approx(1 / 3))
    assert history_part(alice, "user_day") == UNKNOWN4  # nothing of hers finished today
    bob = features(predictor, RJMSJob(2, "PENDING", now, 8, 1800.0, user="bob"))
    assert history_part(bob, "user_procs") == (0.0, 1.0, 0.0, pytest.approx(2 / 3))
    # A shape alice never used: only the categories it shares are known.
    wide = features(predictor, RJMSJob(3, "PENDING", now, 128, 7200.0, user="alice"))
    assert history_part(wide, "user_procs") == UNKNOWN4
    assert history_part(wide, "user_reqtime") == history_part(alice, "user_reqtime")
    stranger = features(predictor, RJMSJob(4, "PENDING", now, 64, 7200.0, user="carol"))
    assert all(history_part(stranger, c) == UNKNOWN4 for c in ("user_procs", "user_reqtime", "user_day"))

    # A live completion (submitted now, ran 2000 s > 900: large) is seen at once, today.
    done = RJMSJob(5, "COMPLETED", now, 64, 7200.0, start=now + 10, user="alice")
    predictor.observe_finished(done, end=now + 2010)
    after = features(predictor, RJMSJob(6, "PENDING", now, 64, 7200.0, user="alice"))  # same local day
    assert history_part(after, "user_procs") == (1.0, 0.0, 1.0, pytest.approx(1 / 4))
    assert history_part(after, "user_day")[0] == 1.0 and history_part(after, "user_day")[3] == 0.0


def test_trace_without_start_time_says_so(tmp_path):
    swf = tmp_path / "bare.swf"
    swf_trace(swf, {})
    model = tmp_path / "rc.joblib"
    out = rush("train", "runtime-class", str(swf), "--out", str(model), "--trees", "5", "--no-walkforward")
    assert out.returncode == 0, out.stderr
    assert "no UnixStartTime" in out.stderr
    card = json.loads((tmp_path / "rc.joblib.json").read_text())
    assert (
        card["time_base"]["unix_start_known"] is False and card["time_base"]["zone_source"] == "default UTC"
    )
    assert card["training_window"]["first_submit"] == 4 * 86400  # 1970-01-05, a Monday


def test_pipeline_training_features_are_the_walkforward_features(tmp_path):
    """One feature computation offline: the deployable pipeline's training features (as of
    each job's submission) equal the walk-forward's under the same divider."""
    from rush.models.model_card import RuntimeClassCard
    from rush.models.persistence import save_model
    from rush.models.users import trace_user_keys
    from rush.models.walkforward import fit_on_history
    from tests.models.fixtures import HEADER, synthetic_workload

    w = synthetic_workload(800)
    trained = fit_on_history(w, HEADER, mode="live", n_estimators=5)
    save_model(trained.model, tmp_path / "m.joblib", trained.metadata, card=RuntimeClassCard)
    wf = predict_classes_walkforward(w, HEADER, mode="live", model_path=tmp_path / "m.joblib")
    from rush.models.runtime_features import TimeBase
    from rush.models.runtime_pipeline import job_table
    from rush.models.walkforward import logged_end

    users, _ = trace_user_keys(w.user, None)
    table = job_table(
        w.submit, users, w.procs, w.requested_time, TimeBase.from_header(HEADER), w.runtime, logged_end(w)
    )
    X = trained.model.named_steps["features"].fit_transform(table)
    assert np.array_equal(X, wf.features)
    assert (X[:, FEATURES.index("lag1_user_procs")] >= 0).mean() > 0.9  # the history is used
