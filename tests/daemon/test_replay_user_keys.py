"""A replayed job's ``user=trace-N`` tag on a model trained on an SWF trace (card ``user_key_kind``
``trace-id``) is keyed N, as the trained history keys its user (issue 29, round 29, D31/D33):
the live path then gives the job the features and quantiles the walk-forward gives the same
trace job; a malformed tag is the unknown user; loading such a model says live names cannot match."""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np
import pytest

from rush.models.history import JobColumns
from rush.models.runtime_features import TimeBase
from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_features import offline_features
from rush.models.runtime_quantiles_pipeline import (
    fit_quantiles_on_history,
    load_quantile_model,
    save_quantile_model,
)
from rush.models.runtime_quantiles_walkforward import trace_jobs
from rush.models.users import MAX_TRACE_USER, TRACE_ID, UNKNOWN_USER, replay_user_key
from rush.planner.runtime_prediction import load_runtime_predictor, own_accounts
from rush.planner.snapshot_builder import ModelClassPredictor, user_id
from rush.rjms.base import RJMSJob
from rush.workload.model import Workload
from tests.models.fixtures import HEADER, UNIX_START, save_trained, synthetic_workload

DAY = 86400.0
ME = min(own_accounts())  # the account a replay submits as (rush's own)


def trace(n: int = 500) -> Workload:
    """A trace where only the user tells short from long jobs: every job asks one CPU for a day;
    users 1-2 run the short ones, users 3-4 the long ones."""
    w = synthetic_workload(n)
    return dataclasses.replace(
        w,
        user=np.where(w.procs == 1, 1, 3) + np.arange(n) % 2,
        procs=np.ones(n, dtype=np.int64),
        requested_time=np.full(n, DAY),
    )


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """(trace, saved model path): a small quantile model trained on the trace (trace-id card)."""
    w = trace()
    pipeline, metadata = fit_quantiles_on_history(
        w, HEADER, RuntimeQuantileRegressor(max_iter=60, min_samples_leaf=5)
    )
    path = tmp_path_factory.mktemp("model") / "quantiles.joblib"
    save_quantile_model(pipeline, metadata, path)
    return w, path


def window(w: Workload, users: np.ndarray) -> tuple[Workload, np.ndarray]:
    """The trace with one more job per user, submitted a day after every trace job ended (trace
    seconds), and those jobs' submit times."""
    submit = float(np.max(w.submit + w.runtime)) + DAY + 60.0 * np.arange(len(users))
    k = len(users)
    longer = Workload(
        job_id=np.arange(1, len(w) + k + 1),
        submit=np.r_[w.submit, submit],
        runtime=np.r_[w.runtime, np.full(k, 100.0)],
        procs=np.r_[w.procs, np.ones(k, dtype=np.int64)],
        requested_time=np.r_[w.requested_time, np.full(k, DAY)],
        user=np.r_[w.user, users].astype(np.int64),
        machine_procs=w.machine_procs,
        name="window",
        extra={"wait": np.zeros(len(w) + k)},
    )
    return longer, submit


def live_quantiles(path, jobs: list[RJMSJob]) -> tuple[np.ndarray, list[int]]:
    """Each job predicted live, one at a time in submit order (as a replay submits them)."""
    live = load_runtime_predictor("runtime-quantiles", path, None)
    for j in jobs:
        live.predict_new([j])
    return np.array([live.quantiles[j.job_id].seconds for j in jobs]), [live.user_of[j.job_id] for j in jobs]


def test_a_replayed_trace_job_gets_the_walk_forward_quantiles_of_its_trace_user(model):
    w, path = model
    users = np.array([1, 2, 3, 4])
    longer, submit = window(w, users)
    loaded, card = load_quantile_model(path, fields=[])
    assert card["user_key_kind"] == TRACE_ID
    features = loaded.named_steps["features"]
    # Offline: the walk-forward's features of the window's jobs (their users' history as of submit).
    X = offline_features(
        trace_jobs(longer, TimeBase.from_header(HEADER, None)),
        features.clock_,
        feature_set=features.feature_set,
    )[-len(users) :]
    offline = loaded.named_steps["regressor"].predict_quantiles(X)
    tagged = [
        RJMSJob(100 + k, "PENDING", UNIX_START + submit[k], 1, DAY, user=ME, tags={"user": f"trace-{u}"})
        for k, u in enumerate(users)
    ]
    live, keys = live_quantiles(path, tagged)
    assert keys == users.tolist()
    np.testing.assert_allclose(live, offline, rtol=1e-12)
    # The users' history is what made them: keyed by the tag's name they would not meet it.
    named = [dataclasses.replace(j, tags={}) for j in tagged]
    assert not np.allclose(live_quantiles(path, named)[0], offline)


@pytest.mark.parametrize(
    "tag",
    [
        "trace-",
        "trace-x",
        "trace--3",
        "trace-+3",
        "trace- 3",
        "trace-3 ",
        "trace-03",
        "trace-1e3",
        "trace-３",
        f"trace-{MAX_TRACE_USER + 1}",
        "trace-" + "9" * 40,
    ],
)
def test_a_malformed_replay_tag_is_the_unknown_user_and_its_estimate_stays_sane(model, tag):
    assert replay_user_key(tag, TRACE_ID) == UNKNOWN_USER
    w, path = model
    job = RJMSJob(7, "PENDING", UNIX_START + float(w.submit[-1]) + DAY, 1, DAY, user=ME, tags={"user": tag})
    live = load_runtime_predictor("runtime-quantiles", path, None)
    live.predict_new([job])
    assert live.user_of[7] == UNKNOWN_USER
    seconds, _ = live.estimates([job])[7]
    assert math.isfinite(seconds) and 0 < seconds <= DAY
    assert all(math.isfinite(s) and s >= 0 for s in live.quantiles[7].seconds)


def test_the_rule_applies_only_to_trace_id_models_and_replay_tags():
    assert replay_user_key("trace-0", TRACE_ID) == 0 and replay_user_key("trace-42", TRACE_ID) == 42
    assert replay_user_key(f"trace-{MAX_TRACE_USER}", TRACE_ID) == MAX_TRACE_USER
    assert replay_user_key("trace-42", "name") is None  # a name-keyed model: the name's key, as before
    assert replay_user_key("alice", TRACE_ID) is None and replay_user_key("", TRACE_ID) is None


def test_loading_a_trace_id_quantile_model_says_live_names_cannot_match(model, tmp_path, caplog):
    w, path = model
    with caplog.at_level(logging.WARNING, logger="rush.daemon"):
        live = load_runtime_predictor("runtime-quantiles", path, None)
    assert sum("cannot match" in n for n in live.notes) == 1 and "cannot match" in caplog.text
    # Trained with names (sacct): no note, and a trace-N tag is keyed by its name as before.
    names = {u: f"user{u}" for u in np.unique(w.user).tolist()}
    pipeline, metadata = fit_quantiles_on_history(
        w, HEADER, RuntimeQuantileRegressor(max_iter=5), user_names=names
    )
    named_path = tmp_path / "named.joblib"
    save_quantile_model(pipeline, metadata, named_path)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rush.daemon"):
        named = load_runtime_predictor("runtime-quantiles", named_path, None)
    assert not any("cannot match" in n for n in named.notes) and "cannot match" not in caplog.text
    job = RJMSJob(
        5, "PENDING", UNIX_START + float(w.submit[-1]) + DAY, 1, DAY, user=ME, tags={"user": "trace-3"}
    )
    named.predict_new([job])
    assert named.user_of[5] == user_id("trace-3")


def test_the_runtime_class_model_keys_a_replayed_job_by_its_trace_user(tmp_path):
    path = tmp_path / "rc.joblib"
    save_trained(path)  # trained on the synthetic trace's numbers (users 1-5): a trace-id card
    tagged = RJMSJob(1, "PENDING", 1.8e9, 8, 3600.0, user=ME, tags={"user": "trace-3"})
    predictor = ModelClassPredictor(path, None)
    assert any("cannot match" in n for n in predictor.notes)
    # The same features as the trained history gives trace user 3's job.
    expected = ModelClassPredictor(path, None).live.features_of(
        JobColumns(np.array([3]), np.array([8]), np.array([3600.0]), np.array([1.8e9]))
    )
    np.testing.assert_array_equal(predictor.features([tagged]), expected)
    unknown = ModelClassPredictor(path, None).features([dataclasses.replace(tagged, tags={})])
    assert not np.array_equal(unknown, expected)
    # Another account's tag is ignored (users cannot borrow someone else's history).
    other = dataclasses.replace(tagged, user="mallory")
    assert (
        ModelClassPredictor(path, None).features([other]).tolist()
        == ModelClassPredictor(path, None)
        .live.features_of(
            JobColumns(np.array([user_id("mallory")]), np.array([8]), np.array([3600.0]), np.array([1.8e9]))
        )
        .tolist()
    )
