"""The ``t23`` feature set of the runtime-quantile predictor: the (user, processors, request)
history and the user's last outcome, computed walk-forward, alike offline and live, and
recorded on the model card (a card of another set is refused)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rush.errors import ModelError
from rush.models.runtime_features import UNKNOWN, Clock
from rush.models.runtime_quantiles import RuntimeQuantileRegressor
from rush.models.runtime_quantiles_features import (
    FEATURES,
    QuantileHistory,
    QuantileJobs,
    feature_names,
    offline_features,
)
from rush.models.runtime_quantiles_pipeline import (
    fit_quantiles_on_history,
    load_quantile_model,
    save_quantile_model,
)
from rush.models.runtime_quantiles_predictor import RuntimeQuantilePredictor
from tests.models.fixtures import HEADER, UNIX_START, synthetic_workload

T23 = feature_names("t23")
EXTRA = T23[len(FEATURES) :]


def _jobs(n: int = 400, seed: int = 3) -> QuantileJobs:
    """Jobs of a few users, some killed at their request, with waits (ends out of submit order)."""
    rng = np.random.default_rng(seed)
    submit = 1.7e9 + np.sort(rng.uniform(0, 6 * 86400, n)).round()
    user = rng.integers(1, 6, n)
    procs = rng.choice([1, 4], n)
    request = rng.choice([600.0, 3600.0], n)
    runtime = np.where(rng.random(n) < 0.3, request, rng.uniform(5, 500, n).round())
    start = submit + rng.choice([0.0, 100.0, 5000.0], n)
    return QuantileJobs(user, procs, request, submit, runtime=runtime, end=start + runtime, start=start)


def _brute_force(jobs: QuantileJobs, i: int) -> np.ndarray:
    """The t23 columns of job ``i`` from their definition, over jobs that ended before its submit."""
    done = np.flatnonzero((jobs.end < jobs.submit[i]) & (jobs.user == jobs.user[i]))
    done = done[np.lexsort((done, jobs.end[done]))]  # end order, ties in job order
    same = done[(jobs.procs[done] == jobs.procs[i]) & (jobs.requested_time[done] == jobs.requested_time[i])]
    logs = np.log1p(np.minimum(jobs.runtime[same], jobs.requested_time[same]))
    lags = [logs[-k] if len(logs) >= k else UNKNOWN for k in (1, 2, 3)]
    stats = [logs.mean(), logs.std()] if len(logs) else [UNKNOWN, UNKNOWN]
    limit = jobs.runtime[done] >= jobs.requested_time[done]
    outcome = [float(limit[-1]), limit.mean()] if len(done) else [UNKNOWN, UNKNOWN]
    return np.array([*lags, *stats, np.log1p(len(logs)), *outcome])


def test_t23_columns_follow_their_definition_and_extend_the_base_set():
    jobs = _jobs()
    clock = Clock()
    base = offline_features(jobs, clock, feature_set="base")
    t23 = offline_features(jobs, clock, feature_set="t23")
    assert t23.shape == (len(jobs), len(T23)) and len(EXTRA) == 8
    assert np.array_equal(t23[:, : len(FEATURES)], base)  # every base column in place
    expected = np.array([_brute_force(jobs, i) for i in range(len(jobs))])
    assert np.allclose(t23[:, len(FEATURES) :], expected)
    at_limit = t23[:, T23.index("user_last_at_limit")]
    assert set(np.unique(at_limit)) == {UNKNOWN, 0.0, 1.0}  # the test covers every outcome


def test_a_jobs_t23_features_never_read_jobs_that_end_after_its_submit():
    jobs = _jobs()
    clock = Clock()
    before = offline_features(jobs, clock, feature_set="t23")
    for cut in np.quantile(jobs.submit, [0.2, 0.5, 0.8]):
        # Another future: every job that ends at or after the cut runs to its request instead
        # (it ends later still, so it is as unfinished at any submit before the cut as before).
        later = jobs.end >= cut
        runtime = np.where(later, jobs.requested_time, jobs.runtime)
        end = np.where(later, jobs.start + jobs.requested_time, jobs.end)
        assert np.all(end[later] >= jobs.end[later])
        changed = QuantileJobs(**{**jobs.__dict__, "runtime": runtime, "end": end})
        after = offline_features(changed, clock, feature_set="t23")
        past = jobs.submit <= cut
        assert np.array_equal(before[past], after[past])
        assert not np.array_equal(before[~past], after[~past])  # the change is seen later


def test_the_live_history_gives_the_offline_t23_features():
    jobs = _jobs()
    n_hist = 300
    hist = jobs.subset(np.arange(n_hist))
    new = jobs.subset(np.arange(n_hist, len(jobs)))
    new.submit = new.submit + (hist.end.max() - new.submit.min()) + 10  # after every history end
    both = QuantileJobs(
        *(
            np.concatenate([getattr(hist, c), getattr(new, c)])
            for c in ("user", "procs", "requested_time", "submit")
        ),
        runtime=np.concatenate([hist.runtime, np.full(len(new), np.nan)]),  # not finished: no history
        end=np.concatenate([hist.end, np.full(len(new), np.inf)]),
    )
    clock = Clock.of("Europe/Stockholm")
    offline = offline_features(both, clock, feature_set="t23")[n_hist:]
    history = QuantileHistory(clock, "t23")
    history.observe_submitted(both.user, both.submit)
    history.observe_finished(hist.subset(np.argsort(hist.end, kind="stable")))
    pending = QuantileJobs(new.user, new.procs, new.requested_time, new.submit)
    live = history.features(pending)
    assert live.shape == offline.shape == (len(new), len(T23))
    assert np.allclose(live, offline, equal_nan=True)


def test_the_predictor_computes_t23_from_the_finished_jobs_it_observes():
    jobs = _jobs(600)
    predictor = RuntimeQuantilePredictor(
        regressor=RuntimeQuantileRegressor(max_iter=10), feature_set="t23", max_train_jobs=None
    )
    first = np.argsort(jobs.end, kind="stable")[:400]

    class Finished:  # the protocol's columns, trace seconds (unix_start 0)
        def __init__(self, rows):
            for c in ("user", "submit", "procs", "requested_time", "runtime", "end"):
                setattr(self, c, getattr(jobs, c)[rows])

    predictor.observe(Finished(first))
    predictor.fit(Finished(first))
    assert predictor.model_.n_features_in_ == len(T23)
    pending = Finished(np.arange(20))
    pending.submit = np.full(20, jobs.end.max() + 60)
    pending.runtime = pending.end = None
    values = predictor.predict(pending)
    assert values.shape == (20,) and np.all(np.isfinite(values)) and np.all(values >= 0)


def _saved(tmp_path, feature_set: str = "t23"):
    w = synthetic_workload(500)
    model, metadata = fit_quantiles_on_history(
        w, HEADER, RuntimeQuantileRegressor(max_iter=10), feature_set=feature_set
    )
    path = tmp_path / "quantiles.joblib"
    save_quantile_model(model, metadata, path)
    return w, model, path


def test_a_t23_model_records_its_feature_set_and_loads_for_the_live_predictor(tmp_path):
    from rush.planner.runtime_prediction import _quantile_predictor

    w, model, path = _saved(tmp_path)
    loaded, card = load_quantile_model(path, fields=[])
    assert card["feature_set"] == "t23" and card["features"] == list(T23)
    n = 10
    pending = QuantileJobs(
        w.user[:n], w.procs[:n], w.requested_time[:n], UNIX_START + w.submit[-1] + 86400 + np.arange(n)
    )
    X = loaded.named_steps["features"].transform(pending)
    assert X.shape == (n, len(T23))
    assert np.array_equal(
        loaded.named_steps["regressor"].predict_quantiles(X),
        model.named_steps["regressor"].predict_quantiles(X),
    )
    predictor, _, _ = _quantile_predictor(path)
    assert predictor.feature_set == "t23" and predictor.history_.feature_set == "t23"


def _edit_card(path, **changes) -> None:
    side = path.with_name(path.name + ".json")
    card = json.loads(side.read_text())
    for key, value in changes.items():
        if value is None:
            card.pop(key)
        else:
            card[key] = value
    side.write_text(json.dumps(card))


def test_a_card_naming_another_feature_set_than_its_features_is_refused(tmp_path):
    _, _, path = _saved(tmp_path)
    _edit_card(path, feature_set="base")  # the features list is still t23's
    with pytest.raises(ModelError, match="features") as err:
        load_quantile_model(path)
    assert err.value.where.endswith("features")


def test_a_card_whose_feature_set_the_pipeline_does_not_compute_is_refused(tmp_path):
    _, _, path = _saved(tmp_path)
    _edit_card(path, feature_set="base", features=list(FEATURES))  # a base card on a t23 model
    with pytest.raises(ModelError, match="disagree on feature_set"):
        load_quantile_model(path)


def test_an_unknown_feature_set_on_a_card_is_refused(tmp_path):
    _, _, path = _saved(tmp_path)
    _edit_card(path, feature_set="t99")
    with pytest.raises(ModelError, match="invalid model card") as err:
        load_quantile_model(path)
    assert "feature_set" in err.value.where


def test_a_card_written_before_feature_sets_is_the_base_sets(tmp_path):
    _, _, path = _saved(tmp_path, "base")
    _edit_card(path, feature_set=None)
    loaded, card = load_quantile_model(path)
    assert loaded.named_steps["features"].feature_set == "base"
    (tmp_path / "t23").mkdir()
    _, _, t23_path = _saved(tmp_path / "t23")
    _edit_card(t23_path, feature_set=None)  # a t23 model whose card lost its set: read as base
    with pytest.raises(ModelError, match="features"):
        load_quantile_model(t23_path)


def test_an_unknown_feature_set_is_a_clear_error():
    with pytest.raises(ValueError, match="feature set 't99'"):
        feature_names("t99")
    with pytest.raises(ModelError, match="unknown feature set"):
        fit_quantiles_on_history(synthetic_workload(50), HEADER, feature_set="t99")


def test_the_daemons_predictor_reads_t23_from_the_completions_it_observes(tmp_path):
    import sqlite3

    from rush.planner.runtime_prediction import load_runtime_predictor
    from rush.planner.snapshot_builder import user_id
    from rush.rjms.base import RJMSJob

    w, _, path = _saved(tmp_path)
    live = load_runtime_predictor("runtime-quantiles", path, sqlite3.connect(":memory:"))
    now = UNIX_START + float(w.submit[-1]) + 86400
    # A user the model never saw: one run of 4 processors killed at its 600 s limit.
    done = RJMSJob(1, "RUNNING", now, 4, 600.0, start=now + 10, user="newcomer")
    live.observe_finished([(done, now + 10 + 600.0)])
    pending = RJMSJob(2, "PENDING", now + 700, 4, 600.0, user="newcomer")
    other = RJMSJob(3, "PENDING", now + 700, 1, 600.0, user="newcomer")  # another (procs, request)
    assert live.predict_new([pending, other]) == 2
    history = live.predictor.history_
    X = history.features(QuantileJobs([user_id("newcomer")] * 2, [4, 1], [600.0, 600.0], [now + 700] * 2))
    column = {name: X[:, T23.index(name)] for name in EXTRA}
    assert np.array_equal(column["user_last_at_limit"], [1.0, 1.0])
    assert np.array_equal(column["user_share_at_limit"], [1.0, 1.0])
    assert np.allclose(column["log_count_user_procs_reqtime"], [np.log1p(1), 0.0])
    assert np.allclose(column["log_lag1_user_procs_reqtime"], [np.log1p(600.0), UNKNOWN])
    estimates = live.estimates([pending, other])
    assert all(0 < v <= 600.0 for v, _ in estimates.values())
